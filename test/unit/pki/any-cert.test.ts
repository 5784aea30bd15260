/** Certificates of any key type (the kubelet rotates to ECDSA): facts and signature check via node:crypto. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { readFile } from 'node:fs/promises';
import { anyCertFacts } from '../../../lib/pki/any-cert.ts';
import { certSignedBy } from '../../../lib/pki/keys.ts';
import { openssl, removeDir, tempDir } from './fixtures.ts';

test('an ECDSA certificate signed by an RSA CA: CN, issuer, expiry and signature', async () => {
  const d = await tempDir();
  try {
    await openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(d, 'ca.key'), '-out', join(d, 'ca.crt'), '-subj', '/CN=kubernetes', '-days', '2');
    await openssl('req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', join(d, 'k.key'), '-out', join(d, 'k.csr'), '-subj', '/O=system:nodes/CN=system:node:n1');
    await openssl('x509', '-req', '-in', join(d, 'k.csr'), '-CA', join(d, 'ca.crt'), '-CAkey', join(d, 'ca.key'), '-CAcreateserial', '-out', join(d, 'k.crt'), '-days', '1');
    const [ca, cert] = await Promise.all([readFile(join(d, 'ca.crt'), 'utf8'), readFile(join(d, 'k.crt'), 'utf8')]);
    const f = anyCertFacts(cert, 'k.crt');
    assert.equal(f.commonName, 'system:node:n1');
    assert.equal(f.issuerCommonName, 'kubernetes');
    assert.ok(f.notAfter.getTime() - Date.now() > 23 * 3_600_000 && f.notAfter.getTime() - Date.now() < 25 * 3_600_000);
    assert.equal(certSignedBy(cert, ca), true);
    assert.equal(certSignedBy(ca, cert), false);
    assert.throws(() => anyCertFacts('nope', 'x.crt'), (e: any) => e.code === 'pki-bad-cert' && e.what === 'x.crt');
  } finally {
    await removeDir(d);
  }
});
