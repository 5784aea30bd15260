/** Persisted pending actions (lib/host/pending.ts), on the dry-run file backend (an in-memory overlay). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DryRunFiles } from '../../../lib/host/files-dry-run.ts';
import { clearPending, isPending, writeThenPending } from '../../../lib/host/pending.ts';

const ctx = () => ({ files: new DryRunFiles(), dryRun: false });
const PATH = '/nonexistent-kubeception-test/config.yaml';

test('a write that changes content records the restart first; the same content records nothing', async () => {
  const c = ctx();
  assert.equal(await writeThenPending(c, PATH, 'a: 1\n', { mode: 0o644 }, ['restart:kubelet.service']), true);
  assert.equal(await isPending(c, 'restart:kubelet.service'), true);
  assert.deepEqual(c.files.planned.map((p) => p.path), ['/var/lib/kubeception/pending/restart-kubelet.service', PATH]);
  await clearPending(c, 'restart:kubelet.service');
  assert.equal(await isPending(c, 'restart:kubelet.service'), false);
  assert.equal(await writeThenPending(c, PATH, 'a: 1\n', { mode: 0o644 }, ['restart:kubelet.service']), false);
  assert.equal(await isPending(c, 'restart:kubelet.service'), false);
});

test('dry-run records no marker', async () => {
  const c = { files: new DryRunFiles(), dryRun: true };
  await writeThenPending(c, PATH, 'x', { mode: 0o644 }, ['daemon-reload']);
  assert.equal(await isPending(c, 'daemon-reload'), false);
});
