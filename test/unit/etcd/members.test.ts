import { test } from 'node:test';
import assert from 'node:assert/strict';
import { initialCluster, memberByPeerUrl, votingMembers, type EtcdMember } from '../../../lib/etcd/members.ts';

const m = (id: string, name: string, peer: string, isLearner = false): EtcdMember => ({ id, name, peerURLs: [peer], clientURLs: [], isLearner });

test('initial-cluster lists every member; the not-yet-started one (no name) gets this node\'s name', () => {
  const members = [m('1', 'cp1', 'https://10.250.0.2:2380'), m('2', '', 'https://10.250.0.3:2380', true)];
  assert.equal(initialCluster(members, { name: 'cp2', peerUrl: 'https://10.250.0.3:2380' }), 'cp1=https://10.250.0.2:2380,cp2=https://10.250.0.3:2380');
});

test('a member is found by peer URL (a killed join\'s learner is reused, not added again); learners do not vote', () => {
  const members = [m('1', 'cp1', 'https://10.250.0.2:2380'), m('2', '', 'https://10.250.0.3:2380', true)];
  assert.equal(memberByPeerUrl(members, 'https://10.250.0.3:2380')?.id, '2');
  assert.equal(memberByPeerUrl(members, 'https://10.250.0.4:2380'), undefined);
  assert.deepEqual(votingMembers(members).map((x) => x.id), ['1']);
});
