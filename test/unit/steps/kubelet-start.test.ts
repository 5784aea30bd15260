/**
 * startKubelet: the daemon-reload that makes systemd see a new enablement comes after the kubelet's
 * start (it cost ≈ 0.1 s before the start on a join's path to Node Ready), and only when the enable
 * changed something. Pure unit: a systemd that records its calls, an in-memory file system.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startKubelet } from '../../../lib/steps/bootstrap/kubelet.ts';
import type { RunContext as Context } from '../../../lib/run-options.ts';
import { sampleConfig } from '../pki/fixtures.ts';

function fakeCtx(opts: { enabled: boolean; active: boolean; restart?: boolean }) {
  const base = sampleConfig();
  // No healthz watch: the start returns once systemd has it.
  const config = { ...base, kubelet: { ...base.kubelet, extraConfig: { healthzPort: 0 } } };
  const calls: string[] = [];
  const ctx = {
    config,
    dryRun: false,
    state: { kubeletRestart: opts.restart },
    log: { info: () => {}, warn: () => {} },
    files: { dryRun: false, read: async () => undefined, exists: async () => false, write: async () => false, remove: async () => false },
    systemd: {
      enable: async (units: string[], o?: { reload?: boolean }) => {
        calls.push(`enable ${units.join(' ')} reload=${o?.reload !== false}`);
        return !opts.enabled;
      },
      activeState: async () => (opts.active ? 'active' : 'inactive'),
      start: async (unit: string, o: { restart?: boolean }) => void calls.push(`${o.restart ? 'restart' : 'start'} ${unit}`),
      reload: async () => void calls.push('daemon-reload'),
    },
  } as unknown as Context;
  return { ctx, calls };
}

test('a new enablement: enable without reload, start, then daemon-reload', async () => {
  const { ctx, calls } = fakeCtx({ enabled: false, active: false });
  const out = await startKubelet(ctx);
  assert.deepEqual(calls, ['enable kubelet.service reload=false', 'start kubelet.service', 'daemon-reload']);
  assert.equal(out.changed, true);
});

test('already enabled: no daemon-reload; an active kubelet with nothing pending is left alone', async () => {
  const started = fakeCtx({ enabled: true, active: false });
  await startKubelet(started.ctx);
  assert.deepEqual(started.calls, ['enable kubelet.service reload=false', 'start kubelet.service']);
  const idle = fakeCtx({ enabled: true, active: true });
  assert.deepEqual(await startKubelet(idle.ctx), { changed: false, detail: 'kubelet.service active' });
  assert.deepEqual(idle.calls, ['enable kubelet.service reload=false']);
  const pending = fakeCtx({ enabled: true, active: true, restart: true });
  await startKubelet(pending.ctx);
  assert.deepEqual(pending.calls, ['enable kubelet.service reload=false', 'restart kubelet.service']);
});
