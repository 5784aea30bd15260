/**
 * certs check-expiration's tables and JSON over a real PKI (generated in a temp dir), and renew:
 * same key bytes, a new certificate, kubeconfigs carrying the current CA.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { readFile } from 'node:fs/promises';
import { RealFiles } from '../../../lib/host/files.ts';
import { expiryReport } from '../../../lib/pki/expiry.ts';
import { renewHostCertificates, selectNames } from '../../../lib/pki/renew.ts';
import { expiryJson, formatExpiry, shortHumanDuration } from '../../../lib/commands/certs.ts';
import { parseCert } from '../../../lib/pki/x509.ts';
import { copyOfFreshPki, removeDir, sampleConfig } from '../pki/fixtures.ts';

const dirs: string[] = [];
after(() => Promise.all(dirs.map(removeDir)));

test('shortHumanDuration is apimachinery\'s', () => {
  assert.deepEqual([-5_000, -500, 59_000, 61_000, 3_599_000, 7_200_000, 86_400_000 * 364, 86_400_000 * 800].map(shortHumanDuration), ['<invalid>', '0s', '59s', '1m', '59m', '2h', '364d', '2y']);
});

test('check-expiration lists every PKI leaf and CA with residual time, CA and externally managed', async () => {
  const dir = await copyOfFreshPki();
  dirs.push(dir);
  const config = sampleConfig({ certificatesDir: dir, distro: { ...sampleConfig().distro, paths: { ...sampleConfig().distro.paths, secretsDir: dir, kubeletConfigDir: dir } } });
  const r = await expiryReport(config, new RealFiles());
  assert.deepEqual(r.authorities.map((a) => a.name), ['ca', 'front-proxy-ca', 'etcd-ca']);
  assert.deepEqual(r.certificates.map((c) => [c.name, c.authority, c.missing]), [
    ['apiserver', 'ca', false], ['apiserver-kubelet-client', 'ca', false], ['front-proxy-client', 'front-proxy-ca', false], ['etcd-server', 'etcd-ca', false],
    ['etcd-peer', 'etcd-ca', false], ['etcd-healthcheck-client', 'etcd-ca', false], ['apiserver-etcd-client', 'etcd-ca', false],
  ]);
  const text = formatExpiry(r, new Date());
  assert.match(text, /^CERTIFICATE\s+EXPIRES\s+RESIDUAL TIME\s+CERTIFICATE AUTHORITY\s+EXTERNALLY MANAGED\napiserver\s+\w{3} \d\d, \d{4} \d\d:\d\d UTC\s+36[45]d\s+ca\s+no\n/);
  assert.match(text, /\n\nCERTIFICATE AUTHORITY\s+EXPIRES\s+RESIDUAL TIME\s+EXTERNALLY MANAGED\nca\s+.*\s+9y\s+no\n/);
  const json = JSON.parse(JSON.stringify(expiryJson(r)));
  assert.equal(json.kind, 'CertificateExpirationInfo');
  assert.equal(json.certificates.length, 7);
  assert.ok(json.certificates[0].residualTime > 364 * 86_400e9);
});

test('renew re-issues for the same key; an unknown name is refused before any write', async () => {
  const dir = await copyOfFreshPki();
  dirs.push(dir);
  const config = sampleConfig({ certificatesDir: dir, distro: { ...sampleConfig().distro, paths: { ...sampleConfig().distro.paths, secretsDir: dir, kubeletConfigDir: dir } } });
  assert.throws(() => selectNames({ config }, 'apiserverx'), (e: any) => e.code === 'certs-unknown' && e.fix.includes('etcd-server'));
  const key = await readFile(join(dir, 'apiserver.key'), 'utf8');
  const before = await parseCert(await readFile(join(dir, 'apiserver.crt'), 'utf8'), 'before');
  await new Promise((r) => setTimeout(r, 1_100));
  const done = await renewHostCertificates({ config, files: new RealFiles() }, selectNames({ config }, 'apiserver'));
  assert.deepEqual(done, ['apiserver']);
  const after = await parseCert(await readFile(join(dir, 'apiserver.crt'), 'utf8'), 'after');
  assert.equal(await readFile(join(dir, 'apiserver.key'), 'utf8'), key, 'the key is kept byte for byte');
  assert.notEqual(after.serialNumber, before.serialNumber);
  assert.ok(after.notAfter > before.notAfter);
  assert.equal(after.publicKeySha256, before.publicKeySha256);
});

test('kubelet-serving is read from the kubelet\'s certificate store (certificate then key) before a self-signed kubelet.crt', async () => {
  const dir = await copyOfFreshPki();
  dirs.push(dir);
  const config = sampleConfig({ certificatesDir: dir, distro: { ...sampleConfig().distro, paths: { ...sampleConfig().distro.paths, secretsDir: dir, kubeletConfigDir: dir } } });
  const files = new RealFiles();
  const [crt, key, other] = await Promise.all(['apiserver.crt', 'apiserver.key', 'front-proxy-client.crt'].map((f) => readFile(join(dir, f), 'utf8')));
  await files.write(join(dir, 'pki', 'kubelet.crt'), other!, { mode: 0o644 });
  const selfSigned = (await expiryReport(config, files)).certificates.find((c) => c.name === 'kubelet-serving');
  assert.deepEqual([selfSigned?.source, selfSigned?.authority], [join(dir, 'pki', 'kubelet.crt'), 'front-proxy-ca']);
  await files.write(join(dir, 'pki', 'kubelet-server-current.pem'), `${crt}${key}`, { mode: 0o600 });
  const stored = (await expiryReport(config, files)).certificates.filter((c) => c.name === 'kubelet-serving');
  assert.deepEqual(stored.map((c) => [c.source, c.authority, c.missing]), [[join(dir, 'pki', 'kubelet-server-current.pem'), 'ca', false]]);
});
