/** The pure parts of a snapshot bundle: names, pruning, metadata, and etcd's JSON answers. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compactTime, parseMetadata, parseSnapshotName, snapshotName, toPrune, type SnapshotMetadata } from '../../../lib/etcd/snapshot-meta.ts';
import { parseStatus } from '../../../lib/etcd/snapshot.ts';
import { parseRangeCount } from '../../../lib/etcd/snapshot-restore.ts';
import { SnapshotError } from '../../../lib/errors.ts';

const at = new Date('2026-12-03T14:15:02.789Z');

test('name: etcd-snapshot-<node>-<UTC to the second>, and back', () => {
  assert.equal(compactTime(at), '20261203T141502Z');
  assert.equal(snapshotName('node-a', at), 'etcd-snapshot-node-a-20261203T141502Z');
  assert.deepEqual(parseSnapshotName('etcd-snapshot-node-a-20261203T141502Z'), { nodeName: 'node-a', at: new Date('2026-12-03T14:15:02Z') });
  assert.deepEqual(parseSnapshotName('etcd-snapshot-cp.example.com-20261203T141502Z')?.nodeName, 'cp.example.com');
});

for (const bad of ['etcd-snapshot-node-a-20261203T141502Z.part', 'etcd-snapshot--20261203T141502Z', 'etcd-snapshot-node-a-20261303T141502Z', 'etcd-snapshot-node-a-20261203T141502', 'etcd-snapshot-Node-20261203T141502Z', '.verify-abc', 'etcd-snapshot-../x-20261203T141502Z', 'snapshot.key'])
  test(`not a snapshot name: ${bad}`, () => assert.equal(parseSnapshotName(bad), undefined));

test('prune: this node\'s beyond retention, oldest first; other nodes, .part and other files never', () => {
  const n = (node: string, s: number) => snapshotName(node, new Date(Date.UTC(2026, 11, 3, 0, 0, s)));
  const names = [n('a', 5), n('a', 1), n('b', 0), n('a', 3), `${n('a', 0)}.part`, 'README', n('a', 4), n('a', 2)];
  assert.deepEqual(toPrune(names, 'a', 3), [n('a', 1), n('a', 2)]);
  assert.deepEqual(toPrune(names, 'a', 5), []);
  assert.deepEqual(toPrune(names, 'a', 1), [n('a', 1), n('a', 2), n('a', 3), n('a', 4)]);
  assert.deepEqual(toPrune(names, 'b', 1), []);
  assert.deepEqual(toPrune([], 'a', 1), []);
});

const NAME = 'etcd-snapshot-node-a-20261203T141502Z';
const digest = { sha256: 'a'.repeat(64), bytes: 20480 };
const META: SnapshotMetadata = {
  apiVersion: 'kubeception.io/v1alpha1', kind: 'EtcdSnapshot', name: NAME, nodeName: 'node-a', created: at.toISOString(), kubernetesVersion: 'v1.37.2',
  parts: { db: digest, pki: { ...digest, files: ['ca.crt'] } },
  etcd: { revision: 5, hash: 4145525603, totalKey: 8 },
  verify: { at: at.toISOString(), tool: 'etcdutl', keyCount: 3, revision: 5, durationMs: 1200 },
};

test('metadata: round trip', () => assert.deepEqual(parseMetadata(JSON.stringify(META), '/s/snapshot.json', NAME), META));

const BAD: [string, string | undefined, RegExp][] = [
  ['missing', undefined, /missing/],
  ['cut off', JSON.stringify(META).slice(0, 40), /not valid JSON/],
  ['another kind', JSON.stringify({ ...META, kind: 'Pod' }), /not an EtcdSnapshot/],
  ['another name', JSON.stringify({ ...META, name: 'etcd-snapshot-x-20261203T141502Z' }), /not its directory/],
  ['bad sha256', JSON.stringify({ ...META, parts: { ...META.parts, db: { sha256: 'xyz', bytes: 1 } } }), /parts\.db/],
  ['no pki files', JSON.stringify({ ...META, parts: { ...META.parts, pki: digest } }), /parts\.pki/],
  ['negative revision', JSON.stringify({ ...META, etcd: { ...META.etcd, revision: -1 } }), /etcd \(revision/],
  ['unknown tool', JSON.stringify({ ...META, verify: { ...META.verify, tool: 'curl' } }), /verify/],
  ['no nodeName', JSON.stringify({ ...META, nodeName: undefined }), /nodeName/],
];
for (const [name, text, why] of BAD)
  test(`metadata refused: ${name} (SnapshotError naming the file, exit 2)`, () => {
    assert.throws(() => parseMetadata(text, '/s/snapshot.json', NAME), (e: unknown) => e instanceof SnapshotError && e.badInput && e.code === 'snapshot-metadata' && e.what === '/s/snapshot.json' && why.test(e.why) && /snapshot save/.test(e.fix));
  });

test('snapshot status JSON (etcdctl 3.4 and etcdutl 3.6 print the same fields)', () => {
  assert.deepEqual(parseStatus('{"hash":4145525603,"revision":5,"totalKey":8,"totalSize":20480}'), { hash: 4145525603, revision: 5, totalKey: 8, totalSize: 20480 });
  assert.deepEqual(parseStatus('{"hash":1,"revision":5,"totalKey":8,"totalSize":20480,"version":"3.6.0"}')?.revision, 5);
  assert.equal(parseStatus('{"hash":1,"revision":"5"}'), undefined);
  assert.equal(parseStatus('Error: bolt: invalid database'), undefined);
});

test('range count answer: int64 as strings, a zero count left out', () => {
  assert.deepEqual(parseRangeCount('{"header":{"cluster_id":"1","revision":"5","raft_term":"2"},"count":"3"}'), { revision: 5, keyCount: 3 });
  assert.deepEqual(parseRangeCount('{"header":{"revision":"1"}}'), { revision: 1, keyCount: 0 });
  assert.equal(parseRangeCount('{"header":{}}'), undefined);
  assert.equal(parseRangeCount('<html>'), undefined);
});
