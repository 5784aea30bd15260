/**
 * tsx's compile cache is never trusted (issue 24, F2). tsx keeps its transforms in
 * `$TMPDIR/tsx-<euid>` and runs whatever it finds there, without asking who owns the directory. The
 * attack, reproduced with real users: `nobody` creates root's cache directory (mode 0777) before
 * root's first run, root fills it, and `nobody` replaces every entry with code that writes a marker
 * file. A control run of tsx as registered without the fix executes the poison (so the poison works);
 * kubeception from its sources (bin/kubeception.js) and the compiled CLI loading a site file through
 * tsx (lib/package.ts) must not, and must write nothing into the directory.
 * In a copy of the checkout (test/helpers/checkout-copy.ts) and a private TMPDIR; as root only.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import process from 'node:process';
import { after, before, describe, test } from 'node:test';
import { copyCheckout, type CheckoutCopy } from '../helpers/checkout-copy.ts';

const AS_ROOT = process.getuid?.() === 0;
// CI runs as root: there a skip would be a silent pass.
const skip = AS_ROOT ? false : process.env.CI || process.env.KUBECEPTION_BED_READY ? false : 'needs root (real users own the cache directory)';

/** uid and gid of `nobody`, the attacker. */
const nobody = () => ({ uid: Number(spawnSync('id', ['-u', 'nobody'], { encoding: 'utf8' }).stdout), gid: Number(spawnSync('id', ['-g', 'nobody'], { encoding: 'utf8' }).stdout) });

/**
 * tsx registered as bin/kubeception.js and lib/package.ts did before the fix (both hooks), then `file`
 * imported. The pause lets the loader thread finish writing its cache entries before the process exits.
 */
const CONTROL = `const [e, c] = await Promise.all([import('tsx/esm/api'), import('tsx/cjs/api')]); e.register(); c.register(); await import(process.argv[1]); await new Promise((r) => setTimeout(r, 300));`;

/** Run as `nobody`: every cache entry's code gets a prefix that writes the marker file. */
const POISON = `
const fs = require('node:fs'), path = require('node:path');
const [dir, marker] = process.argv.slice(1);
let n = 0;
for (const name of fs.readdirSync(dir)) {
  const file = path.join(dir, name);
  let entry;
  try {
    entry = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    continue; // cut short by the writer's exit
  }
  if (typeof entry?.code !== 'string') continue;
  entry.code = 'process.getBuiltinModule("node:fs").writeFileSync(' + JSON.stringify(marker) + ', "uid=" + process.getuid());\\n' + entry.code;
  fs.unlinkSync(file);
  fs.writeFileSync(file, JSON.stringify(entry));
  n++;
}
console.log(n);
`;

describe('tsx compile cache owned by another user', { skip }, () => {
  let copy: CheckoutCopy;
  let tmp: string;
  let cache: string;
  let marker: string;
  let site: string;
  const env = () => {
    const e: Record<string, string | undefined> = { ...process.env, TMPDIR: tmp };
    delete e.TSX_DISABLE_CACHE;
    delete e.NODE_OPTIONS;
    return e;
  };
  const node = (args: string[], extra: Record<string, string> = {}, cwd = copy.dir) =>
    spawnSync(process.execPath, args, { cwd, env: { ...env(), ...extra }, encoding: 'utf8', timeout: 60_000 });

  /** `nobody` makes the cache directory, tsx (as the control) fills it as root, `nobody` poisons it. */
  function plant(file: string, cwd = copy.dir): void {
    rmSync(cache, { recursive: true, force: true });
    const who = nobody();
    const mk = spawnSync('mkdir', ['-m', '0777', cache], { ...who });
    assert.equal(mk.status, 0, mk.stderr?.toString());
    const fill = node(['--input-type=module', '-e', CONTROL, file], {}, cwd);
    assert.equal(fill.status, 0, fill.stderr);
    const poison = spawnSync(process.execPath, ['-e', POISON, cache, marker], { ...who, encoding: 'utf8', env: env() });
    assert.equal(poison.status, 0, poison.stderr);
    assert.ok(Number(poison.stdout) > 0, 'the control run cached no transform');
    // The poison works: tsx as registered before the fix runs it, as root.
    const control = node(['--input-type=module', '-e', CONTROL, file], {}, cwd);
    assert.equal(control.status, 0, control.stderr);
    assert.ok(existsSync(marker), 'the control run did not execute the poisoned cache');
    rmSync(marker);
  }

  before(() => {
    copy = copyCheckout({ build: true });
    tmp = join(copy.dir, 'tmp');
    mkdirSync(tmp);
    chmodSync(tmp, 0o1777);
    cache = join(tmp, `tsx-${process.geteuid!()}`);
    marker = join(copy.dir, 'POISONED');
    // A site config esbuild cannot bundle (a require of a module that is not there, never called):
    // the compiled CLI loads it through tsx (lib/package.ts).
    site = join(copy.dir, 'site');
    mkdirSync(site);
    writeFileSync(join(site, 'kubeception.config.ts'), "export default { distro: 'debian' };\nexport function never(): unknown {\n  return require('kubeception-test-no-such-module');\n}\n");
  });
  after(() => copy?.remove());

  test('bin/kubeception.js from the sources executes no cached transform and caches none', () => {
    plant(join(copy.dir, 'lib/cli.ts'));
    const before = readdirSync(cache).sort();
    const r = node([join(copy.dir, 'bin/kubeception.js'), '--version'], { KUBECEPTION_FROM_SOURCE: '1' });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^kubeception \d/);
    assert.equal(existsSync(marker), false, 'kubeception ran code from a cache directory another user owns');
    assert.deepEqual(readdirSync(cache).sort(), before, 'kubeception wrote into the cache directory');
  });

  test('the compiled CLI loading a site file through tsx executes no cached transform', () => {
    plant(join(site, 'kubeception.config.ts'), site);
    const r = node([join(copy.dir, 'bin/kubeception.js'), 'plan', 'bootstrap', '--order-only'], {}, site);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`config: ${join(site, 'kubeception.config.ts')}`));
    assert.equal(existsSync(marker), false, 'kubeception ran code from a cache directory another user owns');
  });
});
