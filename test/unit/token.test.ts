import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateToken, parseDuration, parseToken, tokenFromSecret, tokenInfo, tokenSecret } from '../../lib/join/token.ts';

const now = new Date('2026-11-29T12:00:00Z');

test('generated tokens have kubeadm format and round-trip through their Secret', () => {
  const t = generateToken();
  assert.match(t, /^[a-z0-9]{6}\.[a-z0-9]{16}$/);
  const s = tokenSecret(t, 3_600_000, now);
  assert.equal(s.metadata?.name, `bootstrap-token-${t.slice(0, 6)}`);
  assert.equal(tokenFromSecret(s), t);
  const info = tokenInfo(s)!;
  assert.equal(info.expiration, '2026-11-29T13:00:00Z');
  assert.deepEqual(info.usages.sort(), ['authentication', 'signing']);
  assert.deepEqual(info.groups, ['system:bootstrappers:kubeadm:default-node-token']);
});

test('parseToken: kubeadm\'s format only', () => {
  assert.deepEqual(parseToken('abcdef.0123456789abcdef'), { id: 'abcdef', secret: '0123456789abcdef' });
  for (const bad of ['abc.def', 'ABCDEF.0123456789abcdef', 'abcdef.0123456789abcde', 'abcdef0123456789abcdef', ' abcdef.0123456789abcdef']) assert.equal(parseToken(bad), undefined, bad);
});

test('parseDuration', () => {
  assert.equal(parseDuration('24h'), 86_400_000);
  assert.equal(parseDuration('1h30m'), 5_400_000);
  assert.equal(parseDuration('2s'), 2_000);
  assert.equal(parseDuration(''), undefined);
  assert.equal(parseDuration('5d'), undefined);
});
