/**
 * CLI start-up structure (not timing — bench/cli.ts measures that): with a current build, the bin
 * runs dist/ without tsx, and `--help`, a usage error and `plan bootstrap` load none of the large
 * libraries; with a source newer than the build it falls back to the sources through tsx.
 * Every module the process loads is recorded through Node's module hooks.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const HEAVY = ['/node_modules/tsx/', '/node_modules/esbuild/', '/node_modules/@kubernetes/client-node/', '/node_modules/listr2/', '/node_modules/dbus-next/', '/node_modules/zx/', '/node_modules/@peculiar/'];
const tmp = mkdtempSync(join(tmpdir(), 'kubeception-startup-'));

function loads(args: string[], env: Record<string, string> = {}): { code: number | null; urls: string[] } {
  const out = join(tmp, `loads-${Math.random().toString(36).slice(2)}`);
  const r = spawnSync(process.execPath, ['--import', join(ROOT, 'test/helpers/trace-loads.mjs'), join(ROOT, 'bin/kubeception.js'), ...args], {
    cwd: ROOT, env: { ...process.env, ...env, KUBECEPTION_TRACE_LOADS: out }, encoding: 'utf8',
  });
  let text = '';
  try {
    text = readFileSync(out, 'utf8');
  } catch {}
  return { code: r.status, urls: text.split('\n').filter(Boolean) };
}

describe('CLI start-up from the build', () => {
  before(() => execFileSync(process.execPath, [join(ROOT, 'scripts/build.mjs')], { stdio: 'inherit' }));
  after(() => rmSync(tmp, { recursive: true, force: true }));

  for (const [name, args, code] of [['--help', ['--help'], 0], ['an unknown command', ['frobnicate'], 2], ['plan bootstrap --order-only (loads the task file and the steps barrel)', ['plan', 'bootstrap', '--order-only'], 0]] as const) {
    it(`${name}: runs dist/ and loads no large library`, () => {
      const r = loads([...args]);
      assert.equal(r.code, code);
      assert.ok(r.urls.some((u) => u.includes('/dist/lib/cli.js')), 'dist/lib/cli.js not loaded');
      assert.ok(!r.urls.some((u) => /\/lib\/[^/]+\.ts$/.test(u)), 'a TypeScript source was loaded');
      const heavy = r.urls.filter((u) => HEAVY.some((h) => u.includes(h)));
      assert.deepEqual(heavy, []);
    });
  }

  it('falls back to the sources through tsx when a source is newer than the build', () => {
    const src = join(ROOT, 'lib/constants.ts');
    const future = new Date(Date.now() + 60_000);
    utimesSync(src, future, future);
    try {
      const r = loads(['--help']);
      assert.equal(r.code, 0);
      assert.ok(r.urls.some((u) => u.includes('/node_modules/tsx/')), 'tsx not loaded');
      assert.ok(r.urls.some((u) => u.endsWith('/lib/cli.ts')), 'lib/cli.ts not loaded');
    } finally {
      const now = new Date();
      utimesSync(src, now, now);
      execFileSync(process.execPath, [join(ROOT, 'scripts/build.mjs')], { stdio: 'inherit' });
    }
  });
});
