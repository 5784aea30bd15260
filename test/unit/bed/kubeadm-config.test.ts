import { test } from 'node:test';
import assert from 'node:assert/strict';
import { kubeadmInitConfig } from '../../bed/kubeadm-config.ts';
import { fromYaml } from '../../../lib/util/yaml.ts';
import type { Host } from '../../bed/bed.ts';

const host = { ip: '10.250.0.10', name: 'kc1' } as Host;
const docs = (text: string) => text.split(/^---$/m).map((d) => fromYaml(d, 'kubeadm.yaml') as Record<string, any>);

test('kubeadmInitConfig: init, cluster and kubelet documents for the host; kube-proxy and the pull policy only when asked', () => {
  const plain = docs(kubeadmInitConfig(host, 'v1.37.2'));
  assert.deepEqual(plain.map((d) => d.kind), ['InitConfiguration', 'ClusterConfiguration', 'KubeletConfiguration']);
  assert.deepEqual(plain[0]!.localAPIEndpoint, { advertiseAddress: '10.250.0.10', bindPort: 6443 });
  assert.equal(plain[0]!.nodeRegistration.name, 'kc1');
  assert.equal(plain[0]!.nodeRegistration.imagePullPolicy, undefined);
  assert.equal(plain[1]!.kubernetesVersion, 'v1.37.2');
  assert.equal(plain[2]!.failCgroupV1, false);
  const full = docs(kubeadmInitConfig(host, 'v1.36.3', { imagePullPolicy: 'IfNotPresent', kubeProxy: true }));
  assert.deepEqual(full.map((d) => d.kind), ['InitConfiguration', 'ClusterConfiguration', 'KubeletConfiguration', 'KubeProxyConfiguration']);
  assert.equal(full[0]!.nodeRegistration.imagePullPolicy, 'IfNotPresent');
  assert.deepEqual(full[3]!.conntrack, { maxPerCore: 0 });
});

test('kubeadmInitConfig: external etcd by default, no etcd section (kubeadm\'s stacked etcd) when asked', () => {
  assert.deepEqual(docs(kubeadmInitConfig(host, 'v1.37.2'))[1]!.etcd, { external: { endpoints: ['http://127.0.0.1:2379'] } });
  const stacked = docs(kubeadmInitConfig(host, 'v1.37.2', { etcd: 'stacked' }))[1]!;
  assert.equal(stacked.etcd, undefined);
  assert.deepEqual(stacked.networking, { podSubnet: '10.244.0.0/16', serviceSubnet: '10.96.0.0/12' });
});
