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
