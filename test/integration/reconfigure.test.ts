/**
 * Reconfiguring a running cluster, against a real kube-apiserver. The cluster's fixed settings (lib/steps/bootstrap/cluster-configuration.ts) against a real
 * kube-apiserver (the bed's, on loopback): the record `upload-config` writes is what the preflight
 * check reads back, and a cluster made before the record is read from the flags of its real
 * rendered kube-apiserver DaemonSet and kube-controller-manager Deployment and the host's kubelet config.
 * `plan`'s field-level changes: the server's dry run of a changed object against the live one. And
 * the roll-back's undo: what kubeception's field manager applied, extracted from managedFields and
 * applied again, restores its fields and leaves another manager's alone.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Cluster, DryRunCluster, type KubernetesObject } from '../../lib/k8s/client.ts';
import type { PlannedApiAction } from '../../lib/k8s/planned.ts';
import { RealFiles } from '../../lib/host/files.ts';
import { extractApplied } from '../../lib/k8s/extract.ts';
import { FIELD_MANAGER } from '../../lib/k8s/field-manager.ts';
import { fieldChanges } from '../../lib/k8s/object-diff.ts';
import { clusterConfigObject, CLUSTER_CONFIG_CONFIGMAP, fixedFieldChanges, recordedClusterConfig } from '../../lib/steps/bootstrap/cluster-configuration.ts';
import { apiServerDaemonSet, controllerManagerDeployment } from '../../manifests/self-hosted.ts';
import { sampleConfig } from '../unit/pki/fixtures.ts';
import { startLoopbackApiserver, type LoopbackApiserver } from '../bed/loopback-apiserver.ts';
import type { ResolvedConfig } from '../../lib/types.ts';

let api: LoopbackApiserver;
let admin: Cluster;
const tmp = mkdtempSync('/tmp/kc-cluster-config-test-');
const base = sampleConfig();
const withKubeletDir = (c: ResolvedConfig): ResolvedConfig => ({ ...c, distro: { ...c.distro, paths: { ...c.distro.paths, kubeletConfigDir: join(tmp, 'kubelet') } } });
const config = withKubeletDir({ ...base, networking: { podSubnet: '10.244.0.0/16', serviceSubnet: '10.96.0.0/12', dnsDomain: 'cluster.local' } });
const changed = (n: Partial<ResolvedConfig['networking']>): ResolvedConfig => ({ ...config, networking: { ...config.networking, ...n } });
const ctx = { files: new RealFiles(), config };
const recordRef = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: CLUSTER_CONFIG_CONFIGMAP, namespace: 'kube-system' } };

before(async () => {
  api = await startLoopbackApiserver();
  admin = new Cluster(api.adminKubeconfig, 'admin');
  mkdirSync(join(tmp, 'kubelet'));
  writeFileSync(join(tmp, 'kubelet', 'config.yaml'), 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nclusterDomain: cluster.local\n', { mode: 0o600 });
});

after(async () => {
  await api?.stop();
  rmSync(tmp, { recursive: true, force: true });
});

describe('the cluster configuration record against a real apiserver', () => {
  test('a new cluster: nothing recorded, nothing live: no field is refused', async () => {
    const { record } = await recordedClusterConfig(ctx, admin);
    assert.deepEqual(record, {});
    assert.deepEqual(fixedFieldChanges(record, changed({ podSubnet: '10.245.0.0/16' })), []);
  });

  test('a cluster older than the record: read from the live kube-apiserver and kube-controller-manager flags and the kubelet config', async () => {
    await admin.apply([apiServerDaemonSet(config), controllerManagerDeployment(config)] as KubernetesObject[]);
    const { record, source } = await recordedClusterConfig(ctx, admin);
    assert.deepEqual(record, { 'networking.serviceSubnet': '10.96.0.0/12', 'networking.podSubnet': '10.244.0.0/16', 'networking.dnsDomain': 'cluster.local' });
    assert.match(source, /flags/);
    assert.deepEqual(fixedFieldChanges(record, config), [], 'the same config: no change');
    assert.deepEqual(fixedFieldChanges(record, changed({ serviceSubnet: '10.112.0.0/12', dnsDomain: 'example.internal' })).map((c) => c.field), ['networking.serviceSubnet', 'networking.dnsDomain']);
  });

  test('the record upload-config applies is read back, ahead of the live flags; applying it again changes nothing', async () => {
    const other = changed({ podSubnet: '10.32.0.0/16' });
    assert.deepEqual(await admin.apply([clusterConfigObject(other)]), [`ConfigMap/kube-system/${CLUSTER_CONFIG_CONFIGMAP}`]);
    assert.deepEqual(await admin.apply([clusterConfigObject(other)]), [], 'converged');
    const { record, source } = await recordedClusterConfig(ctx, admin);
    assert.equal(source, `ConfigMap kube-system/${CLUSTER_CONFIG_CONFIGMAP}`);
    assert.equal(record['networking.podSubnet'], '10.32.0.0/16', 'the record, not the kube-controller-manager flag');
    assert.deepEqual(fixedFieldChanges(record, config), [{ field: 'networking.podSubnet', cluster: '10.32.0.0/16', config: '10.244.0.0/16' }]);
    assert.deepEqual(fixedFieldChanges(record, other), []);
    await admin.delete(recordRef);
  });
});

describe("plan's field-level changes against a real apiserver (dry run, nothing persisted)", () => {
  test('an added apiserver flag and a changed one are named; a changed Secret value is not shown; the live objects stay as they were', async () => {
    const live = apiServerDaemonSet(config) as KubernetesObject;
    const secret = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'plan-diff', namespace: 'kube-system' }, data: { key: Buffer.from('first-secret-value').toString('base64') } } as KubernetesObject;
    await admin.apply([live, secret]);
    const wanted = apiServerDaemonSet({ ...config, apiServer: { ...config.apiServer, extraArgs: { 'audit-log-maxage': '60', 'event-ttl': '2h' } } }) as KubernetesObject;
    const planned: PlannedApiAction[] = [];
    const dry = new DryRunCluster(api.adminKubeconfig, 'admin', planned, true, 'final');
    assert.deepEqual(await dry.apply([wanted, { ...secret, data: { key: Buffer.from('second-secret-value').toString('base64') } } as KubernetesObject]), ['DaemonSet/kube-system/kube-apiserver', 'Secret/kube-system/plan-diff']);
    const [ds, sec] = planned;
    assert.equal(ds?.op, 'update');
    const cmd = ds?.fields?.find((f) => f.path === 'spec.template.spec.containers[kube-apiserver].command');
    assert.deepEqual(cmd?.added?.sort(), ['--audit-log-maxage=60', '--event-ttl=2h'], JSON.stringify(ds?.fields));
    assert.deepEqual(cmd?.removed, ['--audit-log-maxage=30']);
    assert.equal(ds?.fields?.length, 1, `only the command changes: ${JSON.stringify(ds?.fields)}`);
    assert.deepEqual(sec?.fields, [{ path: 'data.key', before: '(secret value)', after: '(secret value)' }]);
    assert.ok(!JSON.stringify(planned).includes(Buffer.from('second-secret-value').toString('base64')));
    const after = await admin.read<KubernetesObject & { spec: { template: { spec: { containers: { command: string[] }[] } } } }>(live as Parameters<Cluster['read']>[0]);
    assert.ok(after, 'the live DaemonSet');
    assert.ok(!after.spec.template.spec.containers[0]?.command.includes('--event-ttl=2h'), 'the dry run persisted nothing');
    // The health gate's question (Cluster.wouldChange): the same dry run, true for the new flags, false for the live spec.
    assert.equal(await admin.wouldChange(wanted), true);
    assert.equal(await admin.wouldChange(live), false);
    assert.equal(await admin.wouldChange({ ...secret, metadata: { ...secret.metadata, name: 'plan-diff-absent' } } as KubernetesObject), true);
  });
});

describe("the roll-back's undo against a real apiserver", () => {
  type Ds = KubernetesObject & { metadata: { annotations?: Record<string, string> }; spec: { template: { spec: { containers: { command: string[] }[]; priorityClassName?: string } } } };
  const ref = { apiVersion: 'apps/v1', kind: 'DaemonSet', metadata: { name: 'kube-apiserver', namespace: 'kube-system' } };
  const command = (d: Ds | undefined) => d?.spec.template.spec.containers[0]?.command ?? [];

  test("kubeception's applied fields, extracted from managedFields and applied again, undo its change and keep an operator's edit", async () => {
    const original = apiServerDaemonSet(config) as KubernetesObject;
    await admin.apply([original]);
    // An operator's edit under another field manager.
    const kc = join(tmp, 'admin.conf');
    writeFileSync(kc, api.adminKubeconfig, { mode: 0o600 });
    execFileSync('kubectl', ['--kubeconfig', kc, '-n', 'kube-system', 'annotate', 'daemonset', 'kube-apiserver', 'ops.example/owner=team-a', '--field-manager=operator']);
    const previous = await admin.read<Ds>(ref);
    const undo = extractApplied(previous!, FIELD_MANAGER);
    assert.ok(undo, 'kubeception applied it');
    assert.equal((undo as Ds).metadata.annotations?.['ops.example/owner'], undefined, "the operator's field is not kubeception's");
    assert.equal(JSON.stringify(undo).includes('"status"'), false);
    assert.deepEqual(command(undo as Ds), command(original as Ds));
    // A change that fails, then the undo.
    await admin.apply([apiServerDaemonSet({ ...config, apiServer: { ...config.apiServer, extraArgs: { 'event-ttl': 'bogus' } } }) as KubernetesObject]);
    assert.ok(command(await admin.read<Ds>(ref)).includes('--event-ttl=bogus'));
    await admin.apply([undo!]);
    const after = await admin.read<Ds>(ref);
    assert.deepEqual(command(after), command(original as Ds), 'the command kubeception applied before');
    assert.equal(after?.metadata.annotations?.['ops.example/owner'], 'team-a', "the operator's edit stays");
    // The undo restores what the rendered manifest applies: applying that again changes no field.
    // (The server's fieldRef.apiVersion default rides along in the undo, so the apiserver may count
    // one more template generation: no field, no pod changes.)
    await admin.apply([original]);
    assert.deepEqual(fieldChanges(after, await admin.read<Ds>(ref)), []);
  });
});
