/** The kubelet client certificate file: PEM split, and no rewrite when only line endings differ. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { splitPem } from '../../../lib/steps/kubelet-client.ts';

test('splitPem finds the certificate and key in either order, CRLF or LF', () => {
  const cert = '-----BEGIN CERTIFICATE-----\r\nAAA\r\n-----END CERTIFICATE-----\r\n';
  const key = '-----BEGIN RSA PRIVATE KEY-----\nBBB\n-----END RSA PRIVATE KEY-----\n';
  const r = splitPem(`${key}${cert}`);
  assert.match(r.certPem!, /^-----BEGIN CERTIFICATE-----[\s\S]*AAA[\s\S]*-----END CERTIFICATE-----\n$/);
  assert.equal(r.keyPem, key);
  assert.deepEqual(splitPem('nothing'), {});
});
