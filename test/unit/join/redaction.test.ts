/** Redaction on every output path: events, log lines (text renderer), error renderings; token flags. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { jsonLines, Redactor, redactingLogger } from '../../../lib/engine/events.ts';
import { KubeceptionError } from '../../../lib/errors.ts';
import { caCertHashes, joinToken } from '../../../lib/join/flags.ts';
import { signDetached, verifyDetached } from '../../../lib/join/jws.ts';

const TOKEN = 'abcdef.q1w2e3r4t5y6u7i8';

test('a registered token is redacted whole and by its secret part; private keys always', () => {
  const r = new Redactor();
  r.add(TOKEN);
  const out = r.redact(`join --token ${TOKEN}; secret q1w2e3r4t5y6u7i8; -----BEGIN EC PRIVATE KEY-----\nMHcC\n-----END EC PRIVATE KEY-----`);
  assert.ok(!out.includes('q1w2e3r4t5y6u7i8') && !out.includes('MHcC'), out);
  assert.match(out, /\[redacted\].*\[redacted private key\]/s);
});

test('JSON events, logger lines and error renderings are redacted', () => {
  const r = new Redactor();
  r.add(TOKEN);
  const lines: string[] = [];
  jsonLines((l) => lines.push(l), r)({ event: 'log', step: 's', level: 'info', message: `token ${TOKEN}`, time: 't' });
  const seen: string[] = [];
  redactingLogger({ info: (m) => seen.push(m), warn: (m) => seen.push(m) }, r).info(`using ${TOKEN}`);
  const err = new KubeceptionError('x', { what: `--token ${TOKEN}`, why: 'q1w2e3r4t5y6u7i8', fix: 'f' });
  for (const text of [...lines, ...seen, r.redact(err.render())]) assert.ok(!text.includes('q1w2e3r4t5y6u7i8'), text);
});

test('token from --token, --token-file or KUBECEPTION_TOKEN; both flags refused; pins repeated or comma-separated', async () => {
  const dir = mkdtempSync('/tmp/tok-');
  writeFileSync(join(dir, 't'), `${TOKEN}\n`);
  assert.equal(await joinToken({ token: TOKEN }, {}), TOKEN);
  assert.equal(await joinToken({ 'token-file': join(dir, 't') }, {}), TOKEN);
  assert.equal(await joinToken({}, { KUBECEPTION_TOKEN: TOKEN }), TOKEN);
  await assert.rejects(joinToken({ token: TOKEN, 'token-file': join(dir, 't') }, {}), /both are given/);
  await assert.rejects(joinToken({ 'token-file': join(dir, 'missing') }, {}), (e: KubeceptionError) => e.code === 'join-token-file');
  assert.equal(caCertHashes(['--ca-cert-hash', 'sha256:a', '--ca-cert-hash=sha256:b,sha256:c']), 'sha256:a,sha256:b,sha256:c');
  assert.equal(caCertHashes(['--url', 'x']), undefined);
});

test("detached JWS: the bootstrapsigner's shape; wrong key, id, content or alg are refused", async () => {
  const jws = await signDetached('content', 'abcdef', 'q1w2e3r4t5y6u7i8');
  assert.match(jws, /^[\w-]+\.\.[\w-]+$/);
  assert.equal(await verifyDetached(jws, 'content', 'abcdef', 'q1w2e3r4t5y6u7i8'), true);
  assert.equal(await verifyDetached(jws, 'content', 'abcdef', 'q1w2e3r4t5y6u7i9'), false);
  assert.equal(await verifyDetached(jws, 'content', 'zzzzzz', 'q1w2e3r4t5y6u7i8'), false);
  assert.equal(await verifyDetached(jws, 'content!', 'abcdef', 'q1w2e3r4t5y6u7i8'), false);
  const none = `${Buffer.from('{"alg":"none","kid":"abcdef"}').toString('base64url')}..`;
  assert.equal(await verifyDetached(none, 'content', 'abcdef', 'q1w2e3r4t5y6u7i8'), false);
});
