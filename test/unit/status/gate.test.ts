/**
 * The reconfiguration's health gate (lib/status/gate.ts) over a scripted sequence of check results
 * and a counted clock: which checks count, the settle time, the timeout. The gate against a real
 * cluster (a kube-controller-manager that runs but does not lead, rolled back) is in
 * test/e2e/bootstrap.test.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { GATED_CHECKS, healthGate, regressions } from '../../../lib/status/gate.ts';
import type { CheckResult, CheckState } from '../../../lib/status/checks.ts';

const r = (name: string, state: CheckState, detail = `${name} ${state}`): CheckResult => ({ name, state, detail });

test('regressions: only gated checks that did not fail before and fail now', () => {
  const before = [r('etcd', 'pass'), r('nodes', 'fail'), r('coredns', 'warn'), r('scheduler-leader', 'pass'), r('certificates', 'pass')];
  const now = [r('etcd', 'pass'), r('nodes', 'fail'), r('coredns', 'fail'), r('scheduler-leader', 'fail'), r('certificates', 'fail'), r('apiservers', 'fail')];
  // nodes failed before (not the change's); certificates is a host check (not gated); apiservers was not read before.
  assert.deepEqual(regressions(before, now).map((c) => c.name), ['coredns', 'scheduler-leader']);
  assert.deepEqual(regressions(before, before), []);
  assert.ok(!GATED_CHECKS.includes('recovery') && !GATED_CHECKS.includes('certificates') && GATED_CHECKS.includes('controller-manager-leader'));
});

/** A gate whose every gather returns the next scripted result and advances the clock 1 s. */
function scripted(results: CheckResult[][], opts: { timeoutMs: number }) {
  let t = 0;
  let calls = 0;
  const gate = healthGate(async () => {
    const out = results[Math.min(calls, results.length - 1)]!;
    calls++;
    t += 1_000;
    return out;
  }, { ...opts, intervalMs: 1, now: () => t });
  return { gate, calls: () => calls };
}

const leader = (state: CheckState, renewedAt: number, detail = `renewed at ${renewedAt}`): CheckResult => ({ ...r('controller-manager-leader', state, detail), renewedAt });

test('verify: passes at the first read where nothing regressed and no leader Lease is held', async () => {
  const ok = [r('etcd', 'pass'), r('apiservers', 'pass')];
  const { gate, calls } = scripted([ok, ok], { timeoutMs: 30_000 });
  assert.equal(await gate.verify(await gate.baseline(), new AbortController().signal), undefined);
  assert.equal(calls(), 2);
});

test('verify: a leader check passes only once its Lease has been renewed after the first read', async () => {
  const base = [r('etcd', 'pass'), leader('pass', 100)];
  // Renewed at 100 (the instance the roll removed), still 100, then 103: a leader renews.
  const { gate, calls } = scripted([base, [r('etcd', 'pass'), leader('pass', 100)], [r('etcd', 'pass'), leader('pass', 100)], [r('etcd', 'pass'), leader('pass', 103)]], { timeoutMs: 30_000 });
  assert.equal(await gate.verify(await gate.baseline(), new AbortController().signal), undefined);
  assert.equal(calls(), 4, 'waited for the renewal');
});

test('verify: a Lease nobody renews holds the gate until the timeout, then names the check: stale-looking pass or fail', async () => {
  const base = [r('etcd', 'pass'), leader('pass', 100)];
  const stale = scripted([base, [r('etcd', 'pass'), leader('pass', 100)]], { timeoutMs: 5_000 });
  assert.equal(await stale.gate.verify(await stale.gate.baseline(), new AbortController().signal), 'controller-manager-leader (renewed at 100; its Lease was not renewed after the roll)');
  assert.equal(stale.calls(), 1 + 5);
  const gone = scripted([base, [r('etcd', 'pass'), leader('pass', 100)], [r('etcd', 'pass'), leader('fail', 100, 'leader x last renewed 31 s ago')]], { timeoutMs: 5_000 });
  assert.equal(await gone.gate.verify(await gone.gate.baseline(), new AbortController().signal), 'controller-manager-leader (leader x last renewed 31 s ago)');
});

test('verify: a regression that clears within the timeout passes', async () => {
  const ok = [r('etcd', 'pass'), r('apiservers', 'pass')];
  const bad = [r('etcd', 'pass'), r('apiservers', 'fail', '0/1 apiservers answer /readyz')];
  const transient = scripted([ok, bad, bad, ok], { timeoutMs: 30_000 });
  assert.equal(await transient.gate.verify(await transient.gate.baseline(), new AbortController().signal), undefined);
  assert.equal(transient.calls(), 4);
  const stays = scripted([ok, bad], { timeoutMs: 3_000 });
  assert.equal(await stays.gate.verify(await stays.gate.baseline(), new AbortController().signal), 'apiservers (0/1 apiservers answer /readyz)');
});

test('verify: a check failing before the change does not hold the gate, nor a leader Lease that failed before; host checks are left out', async () => {
  const before = [r('etcd', 'pass'), r('nodes', 'fail'), r('recovery', 'warn'), leader('fail', 5)];
  const { gate } = scripted([before, [r('etcd', 'pass'), r('nodes', 'fail'), r('recovery', 'fail'), leader('pass', 5)]], { timeoutMs: 5_000 });
  const baseline = await gate.baseline();
  assert.deepEqual(baseline.map((c) => c.name), ['etcd', 'nodes', 'controller-manager-leader']);
  assert.equal(await gate.verify(baseline, new AbortController().signal), undefined);
});

test('verify: an aborted run stops waiting', async () => {
  const ok = [r('etcd', 'pass')];
  const { gate } = scripted([ok, [r('etcd', 'fail')]], { timeoutMs: 60_000 });
  const baseline = await gate.baseline();
  const ac = new AbortController();
  ac.abort(new Error('interrupted'));
  await assert.rejects(gate.verify(baseline, ac.signal), /interrupted/);
});
