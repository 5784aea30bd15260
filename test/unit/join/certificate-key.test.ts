import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CERTIFICATE_KEY_RE, decryptFiles, encryptFiles, generateCertificateKey, SHARED_FILES } from '../../../lib/join/certificate-key.ts';
import { KubeceptionError } from '../../../lib/errors.ts';

const plain = Object.fromEntries(SHARED_FILES.map(([file, name]) => [name, Buffer.from(`-----BEGIN ${file}-----\n`)]));
const now = new Date('2026-12-01T10:00:00Z');
const expires = '2026-12-01T12:00:00Z';
const code = (c: string) => (e: unknown) => e instanceof KubeceptionError && e.code === c;

test('a new certificate key is 64 hex digits, a different one each time', () => {
  const [a, b] = [generateCertificateKey(), generateCertificateKey()];
  assert.match(a, CERTIFICATE_KEY_RE);
  assert.notEqual(a, b);
});

test('encrypt → decrypt with the key gives every shared file back; the ciphertext holds no plaintext', () => {
  const key = generateCertificateKey();
  const data = encryptFiles(key, plain, expires);
  for (const v of Object.values(data)) assert.ok(!Buffer.from(v, 'base64').toString('latin1').includes('BEGIN'));
  const out = decryptFiles(key, data, expires, now);
  for (const [, name] of SHARED_FILES) assert.equal(out[name]!.toString(), plain[name]!.toString());
});

test('a wrong key is refused as certificate-key (exit-2 input error), naming the flag', () => {
  const data = encryptFiles(generateCertificateKey(), plain, expires);
  assert.throws(() => decryptFiles(generateCertificateKey(), data, expires, now), (e) => code('certificate-key')(e) && (e as KubeceptionError).what === '--certificate-key');
});

test('past its expiry: certificate-key-expired, before any decryption', () => {
  const key = generateCertificateKey();
  const data = encryptFiles(key, plain, expires);
  assert.throws(() => decryptFiles(key, data, expires, new Date('2026-12-01T12:00:01Z')), (e) => code('certificate-key-expired')(e) && /expired/.test((e as KubeceptionError).why));
  assert.throws(() => decryptFiles(key, data, undefined, now), code('certificate-key-expired'));
});

test('an expiry pushed later in the annotation, or a value moved to another file, fails authentication', () => {
  const key = generateCertificateKey();
  const data = encryptFiles(key, plain, expires);
  assert.throws(() => decryptFiles(key, data, '2027-01-01T00:00:00Z', now), code('certificate-key'));
  assert.throws(() => decryptFiles(key, { ...data, 'ca.key': data['etcd-ca.key']! }, expires, now), code('certificate-key'));
  const { 'sa.key': _, ...missing } = data;
  assert.throws(() => decryptFiles(key, missing, expires, now), code('certificate-key-bundle'));
});

test('certs upload refuses, before any API call, a config without controlPlaneEndpoint and a TTL above 2 h', async () => {
  const { uploadCerts } = await import('../../../lib/join/upload-certs.ts');
  const { sampleConfig } = await import('../manifests/fixtures.ts');
  const noApi = new Proxy({}, { get: () => assert.fail('no API call expected') }) as never;
  const files = { read: async () => assert.fail('no file read expected') } as never;
  await assert.rejects(uploadCerts(noApi, sampleConfig(), files, 3_600_000, []), (e) => code('config-invalid')(e) && (e as KubeceptionError).what === 'controlPlaneEndpoint');
  await assert.rejects(uploadCerts(noApi, sampleConfig({ controlPlaneEndpoint: 'cp.example:6443' }), files, 3 * 3_600_000, []), (e) => code('usage')(e) && /at most 2 h/.test((e as KubeceptionError).why));
});

test('the encryption config travels when the upload has it (optional), and is checked like the keys', () => {
  const key = generateCertificateKey();
  const withConfig = { ...plain, 'encryption-config.yaml': Buffer.from('kind: EncryptionConfiguration\n') };
  const data = encryptFiles(key, withConfig, expires);
  assert.equal(decryptFiles(key, data, expires, now)['encryption-config.yaml']!.toString(), 'kind: EncryptionConfiguration\n');
  assert.equal(decryptFiles(key, encryptFiles(key, plain, expires), expires, now)['encryption-config.yaml'], undefined, 'an upload without one (encryption off) still opens');
  const moved = { ...data, 'encryption-config.yaml': data['ca.key']! };
  assert.throws(() => decryptFiles(key, moved, expires, now), code('certificate-key'));
});
