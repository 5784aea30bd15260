/**
 * Code from the working directory (issue 24, F4): the CLI runs a site's `tasks/<task>.ts` and
 * `kubeception.config.ts` only if nobody but root (or the invoking user) could have written them or
 * their directories; refused is exit 2 naming the path, with nothing of the file run (each planted
 * file writes a marker when imported). `--config FILE` wins over the working directory: task files are
 * looked up beside it. A site's task file replacing the package's is announced. Real directories,
 * modes and owners (chown to `nobody`: as root only).
 */
import assert from 'node:assert/strict';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import process from 'node:process';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { cli } from '../helpers/cli.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const AS_ROOT = process.getuid?.() === 0;
const skip = AS_ROOT ? false : process.env.CI || process.env.KUBECEPTION_BED_READY ? false : 'needs root (chown)';

describe('site files the CLI runs code from', { skip }, () => {
  const base = mkdtempSync(join(tmpdir(), 'kc-site-files-'));
  chmodSync(base, 0o755);
  after(() => rmSync(base, { recursive: true, force: true }));
  let n = 0;
  /** A site dir (`mode`) with a config and, if `task`, tasks/<task>.ts; every file writes its marker when imported. */
  const site = (mode: number, task?: string) => {
    const dir = join(base, `site${n++}`);
    mkdirSync(dir);
    chmodSync(dir, mode);
    const marker = (what: string) => `import { writeFileSync as __w } from 'node:fs';\n__w(${JSON.stringify(join(dir, `RAN-${what}`))}, 'ran');\n`;
    writeFileSync(join(dir, 'kubeception.config.ts'), `${marker('config')}export default { distro: 'debian' };\n`);
    if (task) {
      mkdirSync(join(dir, 'tasks'));
      writeFileSync(join(dir, 'tasks', `${task}.ts`), `${marker('task')}import { step, task } from '${ROOT}/lib/engine/dsl.ts';\nexport default task('${task}', [step('site-only')]);\n`);
    }
    return { dir, ran: (what: 'config' | 'task') => existsSync(join(dir, `RAN-${what}`)) };
  };

  test('a task file in a world-writable working directory is refused before it runs (also for plan --order-only)', async () => {
    const s = site(0o777, 'bootstrap');
    const r = await cli(['plan', 'bootstrap', '--order-only'], s.dir);
    assert.equal(r.code, 2, r.stdout + r.stderr);
    assert.match(r.stderr, new RegExp(`error untrusted-file: task file ${s.dir}/tasks/bootstrap\\.ts`));
    assert.match(r.stderr, new RegExp(`${s.dir} is writable by group and others \\(mode 0777\\)`));
    assert.match(r.stderr, new RegExp(`fix: chmod go-w ${s.dir}`));
    assert.equal(s.ran('task'), false, 'the task file ran');
    assert.equal(s.ran('config'), false, 'the config ran');
  });

  test('a config owned by another user is refused, from the working directory and as --config', async () => {
    const s = site(0o755);
    chownSync(join(s.dir, 'kubeception.config.ts'), 65534, 65534);
    for (const argv of [['plan', 'bootstrap', '--order-only'], ['plan', 'bootstrap', '--order-only', '--config', join(s.dir, 'kubeception.config.ts')]]) {
      const r = await cli(argv, s.dir);
      assert.equal(r.code, 2, r.stdout + r.stderr);
      assert.match(r.stderr, /error untrusted-file: config file .*kubeception\.config\.ts/);
      assert.match(r.stderr, /owned by uid 65534 \(nobody\)/);
      assert.equal(s.ran('config'), false, 'the config ran');
    }
  });

  test('--config wins over the working directory: the task files beside it are used, the working directory\'s never run', async () => {
    const cwd = site(0o777, 'bootstrap');
    const other = site(0o755, 'bootstrap');
    const r = await cli(['plan', 'bootstrap', '--order-only', '--config', join(other.dir, 'kubeception.config.ts')], cwd.dir);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`task file: ${other.dir}/tasks/bootstrap\\.ts`));
    assert.match(r.stdout, /1\. site-only/);
    assert.equal(cwd.ran('task'), false, "the working directory's task file ran");
    assert.equal(cwd.ran('config'), false);
  });

  test("a safe site's task file replacing the package's runs, with a warning; a task of its own has none", async () => {
    const s = site(0o755, 'bootstrap');
    const r = await cli(['plan', 'bootstrap', '--order-only'], s.dir);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(s.ran('task'), true);
    assert.match(r.stderr, new RegExp(`^warning: task file ${s.dir}/tasks/bootstrap\\.ts replaces the package's tasks/bootstrap\\.ts$`, 'm'));
    const own = site(0o755, 'site-demo');
    const d = await cli(['plan', 'site-demo', '--order-only'], own.dir);
    assert.equal(d.code, 0, d.stderr);
    assert.doesNotMatch(d.stderr, /warning/);
  });

  test("the package's own task file from a clone's root is no site copy: no check, no warning", async () => {
    const r = await cli(['plan', 'bootstrap', '--order-only', '--distro', 'debian'], ROOT);
    assert.equal(r.code, 0, r.stderr);
    assert.doesNotMatch(r.stderr, /warning|untrusted/);
  });
});
