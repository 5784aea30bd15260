import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkToken, generateToken, parseDuration, parseToken, tokenFromSecret, tokenInfo, tokenSecret } from '../../lib/join/token.ts';

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

test('checkToken: valid, wrong secret, missing Secret, expired, malformed', () => {
  const t = 'abcdef.0123456789abcdef';
  const s = tokenSecret(t, 3_600_000, now);
  assert.equal(checkToken(t, s, now), undefined);
  assert.equal(checkToken('abcdef.0123456789abcdee', s, now), 'unknown');
  assert.equal(checkToken(t, undefined, now), 'unknown');
  assert.equal(checkToken(t, s, new Date('2026-11-29T13:00:01Z')), 'expired');
  assert.equal(checkToken('ABCDEF.0123456789abcdef', s, now), 'unknown');
  assert.equal(parseToken('abc.def'), undefined);
});

test('parseDuration', () => {
  assert.equal(parseDuration('24h'), 86_400_000);
  assert.equal(parseDuration('1h30m'), 5_400_000);
  assert.equal(parseDuration('2s'), 2_000);
  assert.equal(parseDuration(''), undefined);
  assert.equal(parseDuration('5d'), undefined);
});
