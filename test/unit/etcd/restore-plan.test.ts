/** The pure parts of `etcd restore`: the etcdutl command line, the aside name, the PKI plan, the serving check, and the summary. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { asideName, BUMP_REVISION, pkiPlan, restoreArgv, restoreClusterToken, servingParts, supportsBumpRevision, versionAgainstSnapshot } from '../../../lib/etcd/restore-plan.ts';
import { renderSummary, resultEvent, type SummaryInput } from '../../../lib/summary.ts';
import type { SnapshotTools } from '../../../lib/etcd/snapshot.ts';

const at = new Date('2026-12-04T03:20:07.120Z');
const etcdutl: SnapshotTools = { etcdctl: '/usr/bin/etcdctl', offline: { bin: '/usr/bin/etcdutl', tool: 'etcdutl' } };
const member = { name: 'cp-a', peerUrl: 'https://10.0.0.5:2380', clusterToken: restoreClusterToken(at) };

test('restore argv: this node alone, a token of this restore, the revision bumped and compacted on etcd 3.6', () => {
  assert.equal(member.clusterToken, 'kubeception-restore-20261204T032007Z');
  assert.deepEqual(restoreArgv(etcdutl, '/s/etcd.db', '/var/lib/etcd/.r/data', member, true), [
    '/usr/bin/etcdutl', 'snapshot', 'restore', '/s/etcd.db', '--data-dir', '/var/lib/etcd/.r/data', '--name', 'cp-a',
    '--initial-cluster', 'cp-a=https://10.0.0.5:2380', '--initial-advertise-peer-urls', 'https://10.0.0.5:2380',
    '--initial-cluster-token', 'kubeception-restore-20261204T032007Z', '--bump-revision', '1000000000', '--mark-compacted',
  ]);
  assert.equal(BUMP_REVISION, 1e9);
  const old = restoreArgv({ etcdctl: '/usr/bin/etcdctl', offline: { bin: '/usr/bin/etcdctl', tool: 'etcdctl' } }, '/s/etcd.db', '/d', member, false);
  assert.equal(old[0], '/usr/bin/etcdctl');
  assert.ok(!old.includes('--bump-revision') && !old.includes('--mark-compacted'));
});

test('bump-revision support read from the help text: etcdutl 3.6 has both flags, etcdctl 3.4 neither', () => {
  assert.equal(supportsBumpRevision('      --bump-revision uint   How much to increase ...\n      --mark-compacted   Mark the last revision ...'), true);
  assert.equal(supportsBumpRevision('      --bump-revision uint'), false);
  assert.equal(supportsBumpRevision('OPTIONS:\n  --data-dir=""  Path to the data directory\n  --skip-hash-check'), false);
});

test('aside name: beside the data dir, with the UTC time; a trailing slash does not move it inside', () => {
  assert.equal(asideName('/var/lib/etcd/default', at), '/var/lib/etcd/default.before-restore-20261204T032007Z');
  assert.equal(asideName('/var/lib/etcd/default/', at), '/var/lib/etcd/default.before-restore-20261204T032007Z');
});

test('PKI plan: missing files restored, equal ones kept, different ones refused', () => {
  const b = (s: string) => Buffer.from(s);
  const snap = { 'ca.crt': b('CA'), 'ca.key': b('K'), 'sa.key': b('SA'), 'etcd/ca.crt': b('E') };
  assert.deepEqual(pkiPlan({ 'ca.crt': b('CA'), 'ca.key': b('K'), 'sa.key': b('SA'), 'etcd/ca.crt': b('E') }, snap), { missing: [], same: ['ca.crt', 'ca.key', 'sa.key', 'etcd/ca.crt'], differ: [] });
  assert.deepEqual(pkiPlan({}, snap).missing, ['ca.crt', 'ca.key', 'sa.key', 'etcd/ca.crt'], 'a lost host gets every shared file back');
  assert.deepEqual(pkiPlan({ 'ca.crt': b('CA'), 'ca.key': b('K'), 'sa.key': undefined, 'etcd/ca.crt': b('X') }, snap), { missing: ['sa.key'], same: ['ca.crt', 'ca.key'], differ: ['etcd/ca.crt'] });
  assert.deepEqual(pkiPlan({ 'ca.crt': b('CA\n'), 'ca.key': b('K'), 'sa.key': b('SA'), 'etcd/ca.crt': b('E') }, snap).differ, ['ca.crt'], 'byte-exact');
});

test('serving: a restore goes ahead only when neither etcd nor the apiserver serves', () => {
  assert.equal(servingParts({ etcd: 'connect ECONNREFUSED', apiserver: 'no admin kubeconfig yet' }), undefined);
  assert.equal(servingParts({ etcd: undefined, apiserver: 'HTTP 500' }), 'the local etcd member answers healthy');
  assert.equal(servingParts({ etcd: 'no leader', apiserver: undefined }), 'the kube-apiserver answers /readyz');
  assert.equal(servingParts({ etcd: undefined, apiserver: undefined }), 'the local etcd member answers healthy and the kube-apiserver answers /readyz');
});

test('version against the snapshot\'s: an older minor is a downgrade; a newer minor or another patch differs', () => {
  assert.equal(versionAgainstSnapshot('v1.37.2', 'v1.37.2'), 'same');
  assert.equal(versionAgainstSnapshot('v1.37.2', 'v1.36.9'), 'older');
  assert.equal(versionAgainstSnapshot('v1.37.2', 'v0.38.0'), 'older');
  assert.equal(versionAgainstSnapshot('v1.36.3', 'v1.37.2'), 'differs');
  assert.equal(versionAgainstSnapshot('v1.37.2', 'v1.37.1'), 'differs', 'a patch back within the minor is supported');
  assert.equal(versionAgainstSnapshot('1.37', 'v1.37.2'), 'unknown');
});

const restoreRun = (over: Partial<SummaryInput> = {}): SummaryInput => ({
  task: 'etcd-restore', status: 'done', durationMs: 81_000, config: { nodeName: 'cp-a' } as SummaryInput['config'],
  events: [{ event: 'step-done', step: 'restore-data-dir', changed: true } as never],
  state: { restore: { name: 'etcd-snapshot-cp-a-20261204T031000Z', revision: 812, rtoMs: 79_400, aside: '/var/lib/etcd/default.before-restore-20261204T032007Z' } } as unknown as SummaryInput['state'],
  ...over,
});

test('summary of a restore: the snapshot, the RTO and where the old data dir is kept; in JSON too', () => {
  const text = renderSummary(restoreRun());
  assert.match(text, /Restored etcd from etcd-snapshot-cp-a-20261204T031000Z \(revision 812\): the self-hosted kube-apiserver served it 1m19s after the restore began \(RTO\)/);
  assert.match(text, /old etcd data dir is kept at \/var\/lib\/etcd\/default\.before-restore-20261204T032007Z/);
  assert.deepEqual(resultEvent(restoreRun()).restore, { snapshot: 'etcd-snapshot-cp-a-20261204T031000Z', revision: 812, rtoMs: 79_400, oldDataDir: '/var/lib/etcd/default.before-restore-20261204T032007Z' });
});

test('summary of a failed restore: nothing changed when restore-preflight refused; else re-run with --force', () => {
  const refused = renderSummary(restoreRun({ status: 'failed', failedStep: 'restore-preflight', events: [], state: {} as SummaryInput['state'] }));
  assert.match(refused, /etcd restore failed at step restore-preflight/);
  assert.match(refused, /nothing was changed on this host/);
  const later = renderSummary(restoreRun({ status: 'failed', failedStep: 'wait-self-hosted-control-plane' }));
  assert.match(later, /already changed by this run: restore-data-dir/);
  assert.match(later, /kubeception etcd restore etcd-snapshot-cp-a-20261204T031000Z --force/);
});
