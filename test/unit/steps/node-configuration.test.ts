/** NodeConfiguration (lib/steps/bootstrap/node-configuration.ts) against the etcd environment file renderEtcdEnvironment writes, on real files. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderEtcdEnvironment } from '../../../lib/etcd/config.ts';
import { RealFiles } from '../../../lib/host/files.ts';
import { renderKubeconfig } from '../../../lib/k8s/kubeconfig.ts';
import { bindPortChange, nodeConfigurationCheck, nodeFieldChanges } from '../../../lib/steps/bootstrap/node-configuration.ts';
import { sampleConfig } from '../pki/fixtures.ts';
import type { Context } from '../../../lib/context.ts';
import type { ResolvedConfig } from '../../../lib/types.ts';

const base = sampleConfig();
const written = renderEtcdEnvironment(base);

test('the config this node was set up with: no change; nodeName, etcd.dataDir and advertiseAddress changes are each named', () => {
  assert.deepEqual(nodeFieldChanges(written, base), []);
  const changed: ResolvedConfig = { ...base, nodeName: 'cp-renamed', etcd: { ...base.etcd, dataDir: '/srv/etcd-new' }, localAPIEndpoint: { ...base.localAPIEndpoint, advertiseAddress: '10.250.9.9' } };
  assert.deepEqual(nodeFieldChanges(written, changed).map((c) => [c.field, c.recorded, c.config]), [
    ['nodeName', base.nodeName, 'cp-renamed'],
    ['etcd.dataDir', base.etcd.dataDir, '/srv/etcd-new'],
    ['localAPIEndpoint.advertiseAddress', `https://${base.localAPIEndpoint.advertiseAddress}:2380`, 'https://10.250.9.9:2380'],
  ]);
  assert.deepEqual(nodeFieldChanges(`ETCD_NAME="other"\nETCD_DATA_DIR="/x"\n`, changed), [], 'a file kubeception did not write is not compared here');
});

test('the check reads the host file: a new etcd.dataDir is refused, not ignorable; no file passes', async () => {
  const dir = mkdtempSync('/tmp/kc-nodecfg-');
  try {
    const file = join(dir, 'etcd');
    const config: ResolvedConfig = { ...base, distro: { ...base.distro, paths: { ...base.distro.paths, etcdEnvironmentFile: file } } };
    const ctx = (c: ResolvedConfig) => ({ files: new RealFiles(), config: c }) as unknown as Context;
    assert.equal(await nodeConfigurationCheck.run(ctx(config)), undefined, 'no file yet');
    writeFileSync(file, renderEtcdEnvironment(config), { mode: 0o644 });
    assert.equal(await nodeConfigurationCheck.run(ctx(config)), undefined);
    const failure = await nodeConfigurationCheck.run(ctx({ ...config, etcd: { ...config.etcd, dataDir: '/srv/etcd-new' } }));
    assert.match(failure?.message ?? '', /^etcd\.dataDir gives \/srv\/etcd-new in the config, but this node runs with .* an empty etcd/);
    assert.equal(nodeConfigurationCheck.ignorable, false);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('certificatesDir is compared as the directory of etcd\'s CA, and named', () => {
  const moved: ResolvedConfig = { ...base, certificatesDir: '/srv/pki' };
  assert.deepEqual(nodeFieldChanges(written, moved).map((c) => [c.field, c.recorded, c.config]), [['certificatesDir', base.certificatesDir, '/srv/pki']]);
});

test('localAPIEndpoint.bindPort against the controller-manager kubeconfig kubeception wrote (real kubeconfig text, real files)', async () => {
  const dir = mkdtempSync('/tmp/kc-nodecfg-');
  try {
    const secretsDir = join(dir, 'kubernetes');
    mkdirSync(secretsDir);
    const config: ResolvedConfig = { ...base, distro: { ...base.distro, paths: { ...base.distro.paths, etcdEnvironmentFile: join(dir, 'etcd'), secretsDir } } };
    writeFileSync(join(dir, 'etcd'), renderEtcdEnvironment(config));
    const cm = renderKubeconfig({ server: `https://127.0.0.1:${config.localAPIEndpoint.bindPort}`, caPem: 'x', user: 'system:kube-controller-manager', certPem: 'c', keyPem: 'k' });
    assert.equal(bindPortChange(cm, 'cm', config), undefined);
    assert.deepEqual(bindPortChange(cm, 'cm', { ...config, localAPIEndpoint: { ...config.localAPIEndpoint, bindPort: 7443 } }), { recorded: String(config.localAPIEndpoint.bindPort), config: '7443' });
    writeFileSync(join(secretsDir, 'controller-manager.conf'), cm, { mode: 0o600 });
    const ctx = (c: ResolvedConfig) => ({ files: new RealFiles(), config: c }) as unknown as Context;
    assert.equal(await nodeConfigurationCheck.run(ctx(config)), undefined);
    const failure = await nodeConfigurationCheck.run(ctx({ ...config, localAPIEndpoint: { ...config.localAPIEndpoint, bindPort: 7443 } }));
    assert.match(failure?.message ?? '', new RegExp(`^localAPIEndpoint\\.bindPort gives 7443 in the config, but this node runs with ${config.localAPIEndpoint.bindPort} \\(${secretsDir}/controller-manager\\.conf\\)`));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
