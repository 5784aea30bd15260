/** The public token index: grace, pruning, verdicts; and cluster-info parsing. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { entryFor, MAX_GRACE_MS, nextIndex, parseIndex, renderIndex, verdict, type TokenIndex } from '../../../lib/join/token-index.ts';
import { clusterInfoKubeconfig, readClusterInfo, splitClusterInfo } from '../../../lib/join/cluster-info.ts';

const now = Date.parse('2026-12-01T12:00:00Z');
const token = (id: string, expiration?: string) => ({ id, secretName: `bootstrap-token-${id}`, description: '', expiration, usages: ['authentication', 'signing'], groups: [] });

test('grace is the TTL, at most 24 h; entries round-trip through the ConfigMap data', () => {
  assert.deepEqual(entryFor(now, 10_000), { expires: now, forgetAfter: now + 10_000 });
  assert.deepEqual(entryFor(now, 7 * MAX_GRACE_MS), { expires: now, forgetAfter: now + MAX_GRACE_MS });
  assert.deepEqual(entryFor(undefined), {});
  const index: TokenIndex = new Map([['abcdef', entryFor(now, 60_000)], ['never1', {}]]);
  assert.deepEqual(parseIndex(renderIndex(index)), index);
  assert.deepEqual(parseIndex({ 'BAD!!!': '{}', abcdef: 'not json' }), new Map());
});

test('nextIndex keeps live tokens, keeps gone tokens within grace, prunes the rest', () => {
  const prev: TokenIndex = new Map([['inside', entryFor(now - 1_000, 60_000)], ['passed', entryFor(now - 120_000, 60_000)], ['live01', entryFor(now + 5_000, 60_000)]]);
  const next = nextIndex(prev, [token('live01', new Date(now + 5_000).toISOString()), token('kubead', '2026-12-02T00:00:00Z')], now);
  assert.deepEqual([...next.keys()].sort(), ['inside', 'kubead', 'live01']);
  assert.deepEqual(next.get('live01'), prev.get('live01'));
});

test('verdicts: signed (also unindexed kubeadm tokens), expired within grace, unknown after, not signed yet', () => {
  const index: TokenIndex = new Map([['expird', entryFor(now - 1_000, 60_000)], ['forgot', entryFor(now - 61_000, 60_000)], ['fresh1', entryFor(now + 60_000)]]);
  const jws = { kubead: 'x..y', expird: 'stale..sig' };
  assert.equal(verdict('kubead', index, jws, now), 'signed');
  assert.equal(verdict('expird', index, jws, now), 'expired');
  assert.equal(verdict('forgot', index, jws, now), 'unknown');
  assert.equal(verdict('fresh1', index, jws, now), 'not-signed-yet');
  assert.equal(verdict('zzzzzz', index, jws, now), 'unknown');
});

test('cluster-info: kubeadm shape, JWS keys split out, server and CA read back', () => {
  const kc = clusterInfoKubeconfig('https://cp.example:6443', 'PEM');
  const split = splitClusterInfo({ kubeconfig: kc, 'jws-kubeconfig-abcdef': 'a..b', other: 'x' });
  assert.deepEqual(split, { kubeconfig: kc, jws: { abcdef: 'a..b' } });
  assert.deepEqual(readClusterInfo(kc), { server: 'https://cp.example:6443', caPem: 'PEM' });
  assert.equal(readClusterInfo('{{{'), undefined);
});
