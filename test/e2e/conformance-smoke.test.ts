/**
 * The upstream conformance suite's smoke tier (test/conformance/smoke.txt: [Conformance] specs of every
 * SIG) on a kubeception cluster of 1 control plane + 2 workers, as `npm run conformance -- smoke` runs
 * it (test/conformance/run.ts: builds what is missing, cached; boots its own hosts, named `cs…`, so it
 * runs beside the other suites). Passes when no selected spec failed; prints the summary.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT } from '../bed/bed.ts';

test('conformance smoke tier: every selected [Conformance] spec passes on a kubeception cluster', { timeout: 2_400_000 }, async () => {
  const child = spawn(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'test', 'conformance', 'run.ts'), 'smoke'], {
    cwd: REPO_ROOT, env: { ...process.env, CONFORMANCE_PREFIX: 'cs' }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => { out += d; });
  child.stderr.on('data', (d: Buffer) => { out += d; });
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  console.log(out.split('\n').filter((l) => !/^\s*$/.test(l)).slice(-60).join('\n'));
  assert.equal(code, 0, `npm run conformance -- smoke exited ${code}`);
  const m = /passed (\d+), failed (\d+)/.exec(out);
  assert.ok(m, 'a summary line "passed N, failed M"');
  assert.equal(Number(m[2]), 0);
  assert.ok(Number(m[1]) >= 50, `${m[1]} specs passed`);
});
