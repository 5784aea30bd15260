/** `kubeception etcd restore`: the task's order (what must come before what) and the command line's refusals, before any host read. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cli } from '../../helpers/cli.ts';

test('etcd-restore task order: preflight first; the snapshot\'s keys before certs; the data dir before etcd; bootstrap\'s steps; the RTO last', async () => {
  const r = await cli(['plan', 'etcd-restore', '--distro', 'debian', '--order-only']);
  assert.equal(r.code, 0, r.stderr);
  const ids = r.stdout.split('\n').filter((l) => /^\s*\d+\. /.test(l)).map((l) => l.trim().split(/\s+/)[1]!);
  const at = (id: string) => {
    assert.ok(ids.includes(id), `${id} in ${ids.join(' ')}`);
    return ids.indexOf(id);
  };
  assert.equal(ids[0], 'restore-preflight');
  assert.ok(at('stop-control-plane') < at('restore-pki'), 'nothing runs on the old data while the keys are written');
  assert.ok(at('restore-pki') < at('certs'), 'a missing CA comes from the snapshot; certs would otherwise make a new one');
  assert.ok(at('stop-control-plane') < at('restore-data-dir') && at('restore-data-dir') < at('etcd'), 'etcd stopped before its data dir is replaced, started after');
  assert.ok(at('etcd') < at('wait-bootstrap-control-plane') && at('wait-self-hosted-control-plane') < at('kubelet-pivot') && at('apiserver-recovery') < at('kubelet-pivot'));
  assert.ok(at('recovery-watcher') < at('restore-done') && at('etcd-snapshot-schedule') < at('restore-done'));
  assert.equal(ids.at(-1), 'restore-done');
});

for (const [what, argv, re] of [
  ['no snapshot name', ['etcd', 'restore'], /a snapshot name is needed/],
  ['two names', ['etcd', 'restore', 'etcd-snapshot-a-20261204T000000Z', 'extra'], /"extra" is extra/],
  ['an unknown etcd command', ['etcd', 'restor'], /snapshot and restore/],
] as const)
  test(`etcd restore, ${what}: exit 2 with the usage`, async () => {
    const r = await cli([...argv]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, re);
  });
