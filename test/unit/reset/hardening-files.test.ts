/**
 * reset and the apiserver's hardening files (on a real directory): the audit policy, the admission
 * config and the encryption config are this cluster's and go; under `--keep-etcd-data` the encryption
 * config stays with the data (its Secrets are readable only with that key), neither ours nor foreign.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { RealFiles } from '../../../lib/host/files.ts';
import { files } from '../../../lib/reset/cluster-state.ts';
import { hardeningPaths } from '../../../manifests/apiserver-hardening.ts';
import { sampleConfig } from '../pki/fixtures.ts';
import type { OwnershipFacts } from '../../../lib/reset/ownership.ts';

let root: string;
before(async () => {
  root = await mkdtemp(join(tmpdir(), 'kubeception-reset-hardening-'));
});
after(() => rm(root, { recursive: true, force: true }));

test('the three files are ours; --keep-etcd-data keeps the encryption config', async () => {
  const base = sampleConfig();
  const paths = Object.fromEntries(Object.keys(base.distro.paths).map((k) => [k, join(root, k)])) as typeof base.distro.paths;
  const config = sampleConfig({ certificatesDir: join(root, 'pki'), distro: { ...base.distro, paths }, etcd: { ...base.etcd, dataDir: join(root, 'etcd') } });
  const h = hardeningPaths(config);
  await mkdir(config.certificatesDir, { recursive: true });
  await mkdir(paths.secretsDir, { recursive: true });
  for (const f of [h.auditPolicy, h.admissionConfig, h.encryptionConfig]) await writeFile(f, 'x', { mode: 0o600 });
  const facts: OwnershipFacts = { recorded: new Map([[h.auditPolicy, 'file'], [h.admissionConfig, 'file'], [h.encryptionConfig, 'file']]), kubelet: false, flannel: false, networks: [], flannelConfOurs: false };
  const run = (keepEtcdData: boolean) => files({ config, files: new RealFiles(), options: { keepEtcdData } } as unknown as Parameters<typeof files>[0], facts);
  const all = await run(false);
  for (const f of [h.auditPolicy, h.admissionConfig, h.encryptionConfig]) assert.ok(all.ours.includes(f), f);
  const kept = await run(true);
  assert.ok(kept.ours.includes(h.auditPolicy) && !kept.ours.includes(h.encryptionConfig), kept.ours.join(', '));
  assert.ok(!kept.foreign.includes(h.encryptionConfig), 'reported foreign');
});
