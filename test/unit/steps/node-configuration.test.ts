/** NodeConfiguration (lib/steps/bootstrap/node-configuration.ts) against the etcd environment file renderEtcdEnvironment writes and the node record writeNodeRecord writes, on real files. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderEtcdEnvironment } from '../../../lib/etcd/config.ts';
import { RealFiles, type HostFiles, type WriteOptions } from '../../../lib/host/files.ts';
import { NODE_RECORD, renderNodeRecord, writeNodeRecord } from '../../../lib/host/node-record.ts';
import { renderKubeconfig } from '../../../lib/k8s/kubeconfig.ts';
import { bindPortChange, distroChange, nodeConfigurationCheck, nodeFieldChanges } from '../../../lib/steps/bootstrap/node-configuration.ts';
import { sampleConfig } from '../pki/fixtures.ts';
import type { Context } from '../../../lib/context.ts';
import type { ResolvedConfig } from '../../../lib/types.ts';

const base = sampleConfig();
const written = renderEtcdEnvironment(base);

/** RealFiles, with the node record at `record` instead of /var/lib/kubeception/node.json. */
function filesWithRecordAt(record: string) {
  const real = new RealFiles();
  const at = (p: string) => (p === NODE_RECORD ? record : p);
  return { read: (p: string) => real.read(at(p)), write: (p: string, d: string, o: WriteOptions) => real.write(at(p), d, o) } as unknown as HostFiles;
}

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
    const ctx = (c: ResolvedConfig) => ({ files: filesWithRecordAt(join(dir, 'node.json')), config: c }) as unknown as Context;
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
    const ctx = (c: ResolvedConfig) => ({ files: filesWithRecordAt(join(dir, 'node.json')), config: c }) as unknown as Context;
    assert.equal(await nodeConfigurationCheck.run(ctx(config)), undefined);
    const failure = await nodeConfigurationCheck.run(ctx({ ...config, localAPIEndpoint: { ...config.localAPIEndpoint, bindPort: 7443 } }));
    assert.match(failure?.message ?? '', new RegExp(`^localAPIEndpoint\\.bindPort gives 7443 in the config, but this node runs with ${config.localAPIEndpoint.bindPort} \\(${secretsDir}/controller-manager\\.conf\\)`));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('distro: another distro than the node record\'s is refused, naming the field, why and how to fix; the same one passes', async () => {
  const dir = mkdtempSync('/tmp/kc-nodecfg-');
  try {
    const record = join(dir, 'state', 'node.json');
    const debian: ResolvedConfig = { ...base, distro: { ...base.distro, name: 'debian', paths: { ...base.distro.paths, etcdEnvironmentFile: join(dir, 'etcd') } } };
    const files = filesWithRecordAt(record);
    const ctx = (c: ResolvedConfig) => ({ files, config: c }) as unknown as Context;
    assert.equal(await writeNodeRecord(files, debian), true, 'the etcd step\'s write');
    assert.equal(await writeNodeRecord(files, debian), false, 'a re-run writes nothing');
    assert.equal(statSync(record).mode & 0o777, 0o600);
    assert.equal(statSync(join(dir, 'state')).mode & 0o777, 0o700);
    assert.equal(await nodeConfigurationCheck.run(ctx(debian)), undefined, 'the distro the node was set up with');
    // kubic's etcd environment file is elsewhere: the distro is read from the record, not from it.
    const kubic: ResolvedConfig = { ...debian, distro: { ...debian.distro, name: 'kubic', paths: { ...debian.distro.paths, etcdEnvironmentFile: join(dir, 'sysconfig-etcd') } } };
    const failure = await nodeConfigurationCheck.run(ctx(kubic));
    assert.equal(failure?.message, `distro gives kubic in the config, but this node runs with debian (${NODE_RECORD}): this node's container runtime, kubelet (and on a control-plane node etcd) units and paths were set up for that distro; kubeception does not move a node to another distro`);
    assert.match(failure?.fix ?? '', /^set distro back to what this node runs with in kubeception\.config\.ts .*`kubeception reset` it with distro debian, then bootstrap or join it with kubic\)$/);
    assert.deepEqual(distroChange(renderNodeRecord(debian), kubic), { recorded: 'debian', config: 'kubic' });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('distro: a node set up before the record existed (no record, or one without a distro) is not refused', async () => {
  const dir = mkdtempSync('/tmp/kc-nodecfg-');
  try {
    const record = join(dir, 'node.json');
    const config: ResolvedConfig = { ...base, distro: { ...base.distro, name: 'kubic', paths: { ...base.distro.paths, etcdEnvironmentFile: join(dir, 'etcd') } } };
    // An older kubeception's node: its etcd environment file, no node record.
    writeFileSync(join(dir, 'etcd'), renderEtcdEnvironment(config), { mode: 0o600 });
    const ctx = { files: filesWithRecordAt(record), config } as unknown as Context;
    assert.equal(await nodeConfigurationCheck.run(ctx), undefined, 'no record: the distro is unknown');
    writeFileSync(record, '{"apiVersion":"kubeception.io/v1alpha1","kind":"NodeRecord"}\n', { mode: 0o600 });
    assert.equal(await nodeConfigurationCheck.run(ctx), undefined, 'a record without a distro');
    assert.equal(distroChange('not json', config), undefined);
    // Its next run's etcd step records the config's distro; from then on another one is refused.
    assert.equal(await writeNodeRecord(filesWithRecordAt(record), config), true);
    assert.equal(await nodeConfigurationCheck.run(ctx), undefined);
    assert.match((await nodeConfigurationCheck.run({ ...ctx, config: { ...config, distro: { ...config.distro, name: 'debian' } } } as Context))?.message ?? '', /^distro gives debian in the config, but this node runs with kubic /);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
