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
    signal: new AbortController().signal,
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

test('a kubelet that does not run with the files this run rewrote: they are written back, systemd reloaded for the drop-in, the kubelet restarted, rolled-back (exit 1); nothing to write back: the failure as it was', async () => {
  const { UnitError, RolledBackError } = await import('../../../lib/errors.ts');
  const { kubeletDropIn } = await import('../../../lib/steps/bootstrap/kubelet.ts');
  const { ctx, calls } = fakeCtx({ enabled: true, active: true, restart: true });
  const dropIn = kubeletDropIn(ctx.config);
  const written: string[] = [];
  let starts = 0;
  Object.assign(ctx.files, { write: async (path: string, text: string, o: { mode?: number }) => void written.push(`${path} ${o.mode?.toString(8)} ${text}`) });
  Object.assign(ctx.systemd, {
    start: async (unit: string) => {
      calls.push(`restart ${unit}`);
      if (starts++ === 0) throw new UnitError(unit, 'the unit is activating (auto-restart) after RestartUnit: its process exits and systemd restarts it (crash loop)', ['kubelet: failed to parse eviction threshold']);
    },
  });
  (ctx.state as { kubeletPrevious?: Record<string, string> }).kubeletPrevious = { '/var/lib/kubelet/config.yaml': 'old config\n', [dropIn]: 'old drop-in\n' };
  await assert.rejects(startKubelet(ctx), (err: unknown) => {
    assert.ok(err instanceof RolledBackError, String(err));
    assert.equal(err.code, 'rolled-back');
    assert.match(err.why, /crash loop.*\/var\/lib\/kubelet\/config\.yaml and .* were written back as they were/);
    return true;
  });
  assert.deepEqual(written, ['/var/lib/kubelet/config.yaml 600 old config\n', `${dropIn} 600 old drop-in\n`]);
  assert.deepEqual(calls, ['enable kubelet.service reload=false', 'restart kubelet.service', 'daemon-reload', 'restart kubelet.service']);
  assert.equal((ctx.state as { kubeletPrevious?: unknown }).kubeletPrevious, undefined);

  const first = fakeCtx({ enabled: true, active: false });
  Object.assign(first.ctx.systemd, { start: async (unit: string) => { throw new UnitError(unit, 'crash loop'); } });
  await assert.rejects(startKubelet(first.ctx), (err: unknown) => err instanceof UnitError);
});
