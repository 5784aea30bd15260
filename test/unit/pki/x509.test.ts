/** The X.509 wrapper and the key module, checked against the openssl CLI, for each key algorithm kubeadm offers. */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { PkiError } from '../../../lib/pki/errors.ts';
import { certMatchesKey, createCaCert, createSignedCert, isSignedBy, parseCert, spkiSha256 } from '../../../lib/pki/x509.ts';
import { assertSupportedAlgorithm, describeKey, generatePrivateKey, loadPrivateKey } from '../../../lib/pki/keys.ts';
import type { EncryptionAlgorithm } from '../../../lib/types.ts';
import { openssl, removeDir, shell, tempDir } from './fixtures.ts';

const isPkiError = (code: string, what?: string) => (e: unknown) =>
  e instanceof PkiError && e.code === code && (what === undefined || e.what.includes(what));

/** What openssl prints for each algorithm: key header, key text, signature algorithm, CA key usage. */
const EXPECT: Record<string, { header: RegExp; keyText: RegExp; sig: RegExp; caUsage: RegExp; leafUsage: RegExp }> = {
  'RSA-2048': { header: /^-----BEGIN RSA PRIVATE KEY-----\n/, keyText: /Private-Key: \(2048 bit/, sig: /Signature Algorithm: sha256WithRSAEncryption/,
    caUsage: /Key Usage: critical\s+Digital Signature, Key Encipherment, Certificate Sign\n/, leafUsage: /Key Usage: critical\s+Digital Signature, Key Encipherment\n/ },
  'ECDSA-P256': { header: /^-----BEGIN EC PRIVATE KEY-----\n/, keyText: /Private-Key: \(256 bit[\s\S]*NIST CURVE: P-256/, sig: /Signature Algorithm: ecdsa-with-SHA256/,
    caUsage: /Key Usage: critical\s+Digital Signature, Certificate Sign\n/, leafUsage: /Key Usage: critical\s+Digital Signature\n/ },
  'ECDSA-P384': { header: /^-----BEGIN EC PRIVATE KEY-----\n/, keyText: /Private-Key: \(384 bit[\s\S]*NIST CURVE: P-384/, sig: /Signature Algorithm: ecdsa-with-SHA384/,
    caUsage: /Key Usage: critical\s+Digital Signature, Certificate Sign\n/, leafUsage: /Key Usage: critical\s+Digital Signature\n/ },
};

for (const alg of Object.keys(EXPECT) as EncryptionAlgorithm[]) describe(`x509 wrapper, ${alg}`, () => {
  const want = EXPECT[alg]!;
  let dir: string;
  let caKeyPem: string;
  let otherKeyPem: string;
  let leafKeyPem: string;
  let caPem: string;
  let leafPem: string;

  before(async () => {
    dir = await tempDir();
    [caKeyPem, otherKeyPem, leafKeyPem] = await Promise.all([generatePrivateKey(alg), generatePrivateKey(alg), generatePrivateKey(alg)]);
    const caKey = loadPrivateKey(caKeyPem, 'ca.key');
    caPem = await createCaCert({ commonName: 'kubernetes', validityDays: 3650 }, caKey, 'ca.crt');
    leafPem = await createSignedCert(
      {
        commonName: 'kube-apiserver', organizations: ['o1', 'o2'], usages: ['serverAuth', 'clientAuth'], validityDays: 365,
        dnsNames: ['kubernetes', 'Node-A.example'], ipAddresses: ['10.96.0.1', 'fd00:20:0::2'],
      },
      loadPrivateKey(leafKeyPem, 'leaf.key'),
      { certPem: caPem, key: caKey },
      'leaf.crt',
    );
    await Promise.all([writeFile(join(dir, 'ca.crt'), caPem), writeFile(join(dir, 'leaf.crt'), leafPem), writeFile(join(dir, 'ca.key'), caKeyPem)]);
  });
  after(() => removeDir(dir));

  it("writes keys in kubeadm's format (PKCS#1 RSA, SEC 1 EC) of the requested size", async () => {
    assert.match(caKeyPem, want.header);
    assert.match(await openssl('pkey', '-in', join(dir, 'ca.key'), '-noout', '-text'), want.keyText);
    assert.equal(describeKey(loadPrivateKey(caKeyPem, 'ca.key')), alg);
  });

  it('parses what it issued: subject, SANs (IPv6 normalised), usages, CA flag, validity', async () => {
    const info = await parseCert(leafPem, 'leaf.crt');
    assert.equal(info.commonName, 'kube-apiserver');
    assert.deepEqual(info.organizations, ['o1', 'o2']);
    assert.equal(info.issuerCommonName, 'kubernetes');
    assert.deepEqual(info.dnsNames, ['kubernetes', 'node-a.example']);
    assert.deepEqual(info.ipAddresses, ['10.96.0.1', 'fd00:20::2']);
    assert.deepEqual(info.usages, ['clientAuth', 'serverAuth']);
    assert.equal(info.isCA, false);
    assert.equal((await parseCert(caPem, 'ca.crt')).isCA, true);
    const days = (info.notAfter.getTime() - info.notBefore.getTime()) / 86_400_000;
    assert.ok(days > 365 && days < 365.01, `validity ${days} days`);
  });

  it('issues certificates openssl accepts, with the extensions kubeadm sets', async () => {
    assert.match(await openssl('verify', '-CAfile', join(dir, 'ca.crt'), join(dir, 'leaf.crt')), /leaf\.crt: OK/);
    const text = await openssl('x509', '-in', join(dir, 'leaf.crt'), '-noout', '-text');
    assert.match(text, /DNS:kubernetes, DNS:Node-A\.example, IP Address:10\.96\.0\.1, IP Address:FD00:20:0:0:0:0:0:2/);
    assert.match(text, /Subject: O = o1, O = o2, CN = kube-apiserver/);
    assert.match(text, /Basic Constraints: critical\s+CA:FALSE/);
    assert.match(text, /Extended Key Usage: \s*TLS Web Server Authentication, TLS Web Client Authentication/);
    assert.match(text, /Authority Key Identifier/);
    assert.match(text, want.sig);
    assert.match(text, want.leafUsage);
    const caText = await openssl('x509', '-in', join(dir, 'ca.crt'), '-noout', '-text');
    assert.match(caText, /Basic Constraints: critical\s+CA:TRUE/);
    assert.match(caText, want.caUsage);
    assert.match(caText, want.sig);
  });

  it('computes the CA hash as kubeadm/openssl do (sha256 of the SubjectPublicKeyInfo)', async () => {
    const out = await shell(`openssl x509 -in '${join(dir, 'ca.crt')}' -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -hex`);
    const hex = /([0-9a-f]{64})/.exec(out)?.[1];
    assert.ok(hex, out);
    assert.equal(spkiSha256(caPem, 'ca.crt'), `sha256:${hex}`);
  });

  it('checks signatures, not just issuer names', async () => {
    const impostorKey = loadPrivateKey(otherKeyPem, 'other.key');
    const impostor = await createCaCert({ commonName: 'kubernetes', validityDays: 10 }, impostorKey, 'other.crt'); // same subject
    assert.equal(isSignedBy(leafPem, caPem), true);
    assert.equal(isSignedBy(leafPem, impostor), false);
    assert.equal(isSignedBy(caPem, leafPem), false);
  });

  it('matches keys with certificates', () => {
    assert.equal(certMatchesKey(leafPem, loadPrivateKey(leafKeyPem, 'leaf.key')), true);
    assert.equal(certMatchesKey(leafPem, loadPrivateKey(caKeyPem, 'ca.key')), false);
  });

  it('wraps unreadable PEM in pki-bad-cert naming the file', async () => {
    await assert.rejects(parseCert('garbage', '/pki/x.crt'), isPkiError('pki-bad-cert', '/pki/x.crt'));
    await assert.rejects(parseCert(caKeyPem, '/pki/ca.crt'), isPkiError('pki-bad-cert', '/pki/ca.crt'));
    assert.throws(() => spkiSha256('garbage', '/pki/y.crt'), isPkiError('pki-bad-cert', '/pki/y.crt'));
  });

  it('refuses an encrypted key without echoing key material', async () => {
    const enc = await openssl('pkey', '-in', join(dir, 'ca.key'), '-aes256', '-passout', 'pass:x');
    let err: unknown;
    try {
      loadPrivateKey(enc, '/pki/ca.key');
    } catch (e) {
      err = e;
    }
    assert.ok(isPkiError('pki-bad-key', '/pki/ca.key')(err));
    const text = (err as PkiError).render() + (err as PkiError).message;
    const bodyLine = enc.split('\n').find((l) => l.length > 40) ?? 'unreachable';
    assert.ok(!text.includes(bodyLine) && !text.includes('BEGIN'), text);
  });

});

describe('x509 wrapper, mixed and foreign keys', () => {
  it("signs an ECDSA-P256 leaf under an RSA CA with the CA's algorithm (an RSA cluster after encryptionAlgorithm changed)", async () => {
    const dir = await tempDir();
    try {
      const caKey = loadPrivateKey(await generatePrivateKey('RSA-2048'), 'ca.key');
      const caPem = await createCaCert({ commonName: 'kubernetes', validityDays: 10 }, caKey, 'ca.crt');
      const leafKey = loadPrivateKey(await generatePrivateKey('ECDSA-P256'), 'leaf.key');
      const leafPem = await createSignedCert({ commonName: 'x', usages: ['clientAuth'], validityDays: 1 }, leafKey, { certPem: caPem, key: caKey }, 'leaf.crt');
      await Promise.all([writeFile(join(dir, 'ca.crt'), caPem), writeFile(join(dir, 'leaf.crt'), leafPem)]);
      assert.match(await openssl('verify', '-CAfile', join(dir, 'ca.crt'), join(dir, 'leaf.crt')), /OK/);
      const text = await openssl('x509', '-in', join(dir, 'leaf.crt'), '-noout', '-text');
      assert.match(text, /Signature Algorithm: sha256WithRSAEncryption[\s\S]*id-ecPublicKey/);
      assert.match(text, /Key Usage: critical\s+Digital Signature\n/);
      assert.equal(isSignedBy(leafPem, caPem), true);
      assert.equal(certMatchesKey(leafPem, leafKey), true);
    } finally {
      await removeDir(dir);
    }
  });

  it('refuses an algorithm kubeadm does not offer, naming the ones that work', async () => {
    const bad = 'DSA' as EncryptionAlgorithm;
    assert.throws(() => assertSupportedAlgorithm(bad), (e: unknown) =>
      isPkiError('pki-unsupported-algorithm')(e) && (e as PkiError).badInput && /RSA-2048, RSA-3072, RSA-4096, ECDSA-P256, ECDSA-P384/.test((e as PkiError).fix));
    await assert.rejects(generatePrivateKey(bad), isPkiError('pki-unsupported-algorithm'));
  });

  it('refuses an Ed25519 key for a certificate (a key is never replaced: the operator decides)', async () => {
    const pem = await openssl('genpkey', '-algorithm', 'ed25519');
    assert.throws(() => loadPrivateKey(pem, '/pki/apiserver.key'), (e: unknown) => isPkiError('pki-bad-key', '/pki/apiserver.key')(e) && /ed25519/.test((e as PkiError).why));
  });
});
