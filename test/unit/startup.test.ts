/**
 * CLI start-up structure (not timing — bench/cli.ts measures that): with a current build, the bin
 * runs dist/ without tsx, and `--help`, a usage error and `plan bootstrap` load none of the large
 * libraries; with a source newer than the build it falls back to the sources through tsx.
 * Every module the process loads is recorded through Node's module hooks. All of it in a copy of the
 * checkout (test/helpers/checkout-copy.ts), built there: the checkout's mtimes and dist/ are never
 * touched.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CHECKOUT, copyCheckout, type CheckoutCopy } from '../helpers/checkout-copy.ts';

let copy: CheckoutCopy;
const HEAVY = ['/node_modules/tsx/', '/node_modules/esbuild/', '/node_modules/@kubernetes/client-node/', '/node_modules/listr2/', '/node_modules/dbus-next/', '/node_modules/zx/', '/node_modules/@peculiar/'];
const tmp = mkdtempSync(join(tmpdir(), 'kubeception-startup-'));

function loads(args: string[], env: Record<string, string> = {}): { code: number | null; urls: string[] } {
  const out = join(tmp, `loads-${Math.random().toString(36).slice(2)}`);
  const r = spawnSync(process.execPath, ['--import', join(CHECKOUT, 'test/helpers/trace-loads.mjs'), join(copy.dir, 'bin/kubeception.js'), ...args], {
    cwd: copy.dir, env: { ...process.env, ...env, KUBECEPTION_TRACE_LOADS: out }, encoding: 'utf8',
  });
  let text = '';
  try {
    text = readFileSync(out, 'utf8');
  } catch {}
  return { code: r.status, urls: text.split('\n').filter(Boolean) };
}

describe('CLI start-up from the build (in a copy of the checkout)', () => {
  const checkoutMtime = () => statSync(join(CHECKOUT, 'lib/constants.ts')).mtimeMs;
  const checkoutBuild = () => statSync(join(CHECKOUT, 'dist/build.json'), { throwIfNoEntry: false })?.mtimeMs;
  let before_: { src: number; build: number | undefined };
  before(() => {
    before_ = { src: checkoutMtime(), build: checkoutBuild() };
    copy = copyCheckout({ build: true });
  });
  after(() => {
    rmSync(tmp, { recursive: true, force: true });
    copy?.remove();
    assert.deepEqual({ src: checkoutMtime(), build: checkoutBuild() }, before_, "the checkout's sources or dist/ were touched");
  });

  for (const [name, args, code] of [['--help', ['--help'], 0], ['an unknown command', ['frobnicate'], 2], ['plan bootstrap --order-only (loads the task file and the steps barrel)', ['plan', 'bootstrap', '--order-only'], 0]] as const) {
    it(`${name}: runs dist/ and loads no large library`, () => {
      const r = loads([...args]);
      assert.equal(r.code, code);
      assert.ok(r.urls.some((u) => u === `file://${join(copy.dir, 'dist/lib/cli.js')}`), "the copy's dist/lib/cli.js not loaded");
      assert.ok(!r.urls.some((u) => /\/lib\/[^/]+\.ts$/.test(u)), 'a TypeScript source was loaded');
      const heavy = r.urls.filter((u) => HEAVY.some((h) => u.includes(h)));
      assert.deepEqual(heavy, []);
    });
  }

  it('falls back to the sources through tsx when a source is newer than the build', () => {
    const src = join(copy.dir, 'lib/constants.ts');
    const future = new Date(Date.now() + 60_000);
    utimesSync(src, future, future);
    const r = loads(['--help']);
    assert.equal(r.code, 0);
    assert.ok(r.urls.some((u) => u.includes('/node_modules/tsx/')), 'tsx not loaded');
    assert.ok(r.urls.some((u) => u === `file://${join(copy.dir, 'lib/cli.ts')}`), "the copy's lib/cli.ts not loaded");
  });
});
