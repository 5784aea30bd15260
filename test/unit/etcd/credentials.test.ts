/**
 * etcd's private keys as systemd credentials (CIS 1.1.19: every file under certificatesDir stays
 * root:root): the environment names the credential copies, the drop-in loads each from the PKI file,
 * a re-issued key is seen as stale on real files, and reset proves the drop-in ours by its header.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { after, before, test } from 'node:test';
import { etcdCredentials, etcdDropIn, etcdPki, readEtcdEnvironment, renderEtcdDropIn, renderEtcdEnvironment } from '../../../lib/etcd/config.ts';
import { RealFiles } from '../../../lib/host/files.ts';
import { files as resetFiles } from '../../../lib/reset/cluster-state.ts';
import type { OwnershipFacts } from '../../../lib/reset/ownership.ts';
import { staleCredentials } from '../../../lib/steps/bootstrap/etcd.ts';
import { sampleConfig } from '../pki/fixtures.ts';

let root: string;
before(async () => {
  root = await mkdtemp(join(tmpdir(), 'kubeception-etcd-credentials-'));
});
after(() => rm(root, { recursive: true, force: true }));

test('the environment reads both keys from the credentials the drop-in loads from the PKI files', () => {
  const config = sampleConfig();
  const env = renderEtcdEnvironment(config);
  const dropIn = renderEtcdDropIn(config);
  const loads = new Map([...dropIn.matchAll(/^LoadCredential=([^:\n]+):(.+)$/gm)].map((m) => [m[1]!, m[2]!]));
  const pki = etcdPki(config);
  for (const [flag, source] of [['key-file', pki.serverKey], ['peer-key-file', pki.peerKey]] as const) {
    const path = readEtcdEnvironment(env, flag)!;
    assert.equal(join('/run/credentials/etcd.service', basename(path)), path, `${flag} is not a credential: ${path}`);
    assert.equal(loads.get(basename(path)), source, `${flag}: ${basename(path)} is not loaded from ${source}`);
  }
  // Certificates and the CA stay where they are (world-readable, not secrets).
  assert.equal(readEtcdEnvironment(env, 'cert-file'), pki.serverCert);
  assert.ok(!env.includes(pki.serverKey) && !env.includes(pki.peerKey), 'the environment still names a PKI key file');
  assert.match(dropIn, /^# Written by kubeception.*\n\[Service\]\n/);
  assert.equal(renderEtcdDropIn(config), dropIn, 'not deterministic');
});

test('staleCredentials: a key re-issued since the unit started is stale, an equal copy is not (real files)', async (t) => {
  // A unit name of our own, so the test's copies sit beside no real unit's credentials.
  const unit = `kubeception-test-${process.pid}.service`;
  const credDir = join('/run/credentials', unit);
  t.after(() => rm(credDir, { recursive: true, force: true }));
  const base = sampleConfig();
  const config = sampleConfig({ certificatesDir: join(root, 'pki'), distro: { ...base.distro, units: { ...base.distro.units, etcd: unit } } });
  const c = etcdCredentials(config);
  await mkdir(join(root, 'pki', 'etcd'), { recursive: true });
  await mkdir(credDir, { recursive: true, mode: 0o700 });
  const ctx = { files: new RealFiles(), config };
  await writeFile(c.serverKey.source, 'server-key-1', { mode: 0o600 });
  await writeFile(c.peerKey.source, 'peer-key-1', { mode: 0o600 });
  assert.equal(await staleCredentials(ctx), c.serverKey.source, 'a missing copy is not stale');
  await writeFile(c.serverKey.path, 'server-key-1', { mode: 0o600 });
  await writeFile(c.peerKey.path, 'peer-key-1', { mode: 0o600 });
  assert.equal(await staleCredentials(ctx), undefined);
  await writeFile(c.peerKey.source, 'peer-key-2', { mode: 0o600 });
  assert.equal(await staleCredentials(ctx), c.peerKey.source);
});

test('reset: the etcd drop-in is ours by its header; a foreign one beside it is kept', async () => {
  const base = sampleConfig();
  const paths = Object.fromEntries(Object.keys(base.distro.paths).map((k) => [k, join(root, 'reset', k)])) as typeof base.distro.paths;
  const config = sampleConfig({ certificatesDir: join(root, 'reset', 'pki'), distro: { ...base.distro, paths }, etcd: { ...base.etcd, dataDir: join(root, 'reset', 'etcd') } });
  const ours = etcdDropIn(config);
  const foreign = join(paths.systemdDir, 'etcd.service.d', '10-site.conf');
  await mkdir(join(paths.systemdDir, 'etcd.service.d'), { recursive: true });
  await writeFile(ours, renderEtcdDropIn(config));
  await writeFile(foreign, '[Service]\nNice=5\n');
  const facts: OwnershipFacts = { kubelet: false, flannel: false, networks: [], flannelConfOurs: false };
  const got = await resetFiles({ config, files: new RealFiles(), options: { keepEtcdData: false } } as unknown as Parameters<typeof resetFiles>[0], facts);
  assert.ok(got.ours.includes(ours), `ours: ${got.ours.join(', ')}`);
  assert.ok(got.foreign.includes(foreign) && !got.ours.includes(foreign), `foreign: ${got.foreign.join(', ')}`);
});
