/**
 * The kube-proxy addon (manifests/addons/kube-proxy.ts). kube-proxy 1.34 ignores unknown config fields
 * (lenient decoding after a strict failure), so these tests pin every field name; the names were
 * checked against the v1.34.4 binary (`kube-proxy --config=… --write-config-to=…`).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1ClusterRoleBinding, V1ConfigMap, V1DaemonSet } from '@kubernetes/client-node';
import { fromYaml } from '../../../../lib/util/yaml.ts';
import { kubeProxyObjects } from '../../../../manifests/addons/kube-proxy.ts';
import { find, ipv6Config, podSpecOf, sampleConfig } from '../fixtures.ts';

const config = sampleConfig();
const objects = kubeProxyObjects(config);
/** The parts of kube-proxy's kubeconfig the tests read. */
interface Kubeconfig {
  clusters: { cluster: Record<string, string> }[];
  contexts: { name: string }[];
  users: { user: Record<string, string> }[];
  'current-context': string;
}
const configMapData = (objs = objects) => {
  const cm = find(objs, 'ConfigMap', 'kube-proxy') as V1ConfigMap;
  return {
    conf: fromYaml(cm.data!['config.conf']!, 'config.conf') as Record<string, unknown>,
    kubeconfig: fromYaml(cm.data!['kubeconfig.conf']!, 'kubeconfig.conf') as Kubeconfig,
  };
};

describe('kubeProxyObjects', () => {
  it('returns ServiceAccount, ClusterRoleBinding, ConfigMap, DaemonSet (apply order), all managed-by kubeception', () => {
    assert.deepEqual(objects.map((o) => `${o.kind}/${o.metadata.name}`), ['ServiceAccount/kube-proxy', 'ClusterRoleBinding/kubeadm:node-proxier', 'ConfigMap/kube-proxy', 'DaemonSet/kube-proxy']);
    for (const o of objects) assert.equal(o.metadata.labels?.['app.kubernetes.io/managed-by'], 'kubeception');
  });

  it('binds system:node-proxier to the kube-proxy ServiceAccount', () => {
    const crb = find(objects, 'ClusterRoleBinding', 'kubeadm:node-proxier') as V1ClusterRoleBinding;
    assert.equal(crb.roleRef.name, 'system:node-proxier');
    assert.deepEqual(crb.subjects, [{ kind: 'ServiceAccount', name: 'kube-proxy', namespace: 'kube-system' }]);
  });

  it('KubeProxyConfiguration: iptables, clusterCIDR = podSubnet, 0.0.0.0, and no sysctl writes', () => {
    const { conf } = configMapData();
    assert.deepEqual(conf, {
      apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
      kind: 'KubeProxyConfiguration',
      bindAddress: '0.0.0.0',
      clientConnection: { kubeconfig: '/var/lib/kube-proxy/kubeconfig.conf' },
      clusterCIDR: '10.244.0.0/16',
      mode: 'iptables',
      iptables: { localhostNodePorts: false },
      conntrack: { maxPerCore: 0, tcpEstablishedTimeout: '0s', tcpCloseWaitTimeout: '0s' },
    });
  });

  it('binds :: on an IPv6 control plane and takes its podSubnet', () => {
    const { conf } = configMapData(kubeProxyObjects(ipv6Config()));
    assert.deepEqual([conf.bindAddress, conf.clusterCIDR], ['::', 'fd00:244::/56']);
  });

  it('kubeconfig: final apiserver, ServiceAccount CA and token file', () => {
    const { kubeconfig } = configMapData();
    const cluster = kubeconfig.clusters[0]!.cluster;
    assert.deepEqual([cluster.server, cluster['certificate-authority']], ['https://10.250.0.2:6443', '/var/run/secrets/kubernetes.io/serviceaccount/ca.crt']);
    assert.deepEqual(kubeconfig.users[0]!.user, { tokenFile: '/var/run/secrets/kubernetes.io/serviceaccount/token' });
    assert.equal(kubeconfig['current-context'], kubeconfig.contexts[0]!.name);
    assert.equal(configMapData(kubeProxyObjects(ipv6Config())).kubeconfig.clusters[0]!.cluster.server, 'https://[fd00:20::2]:6443');
  });

  it('DaemonSet: hostNetwork, privileged, tolerates everything, system-node-critical, its ServiceAccount', () => {
    const spec = podSpecOf(find(objects, 'DaemonSet', 'kube-proxy'))!;
    const c = spec.containers[0]!;
    assert.deepEqual([spec.hostNetwork, spec.priorityClassName, spec.serviceAccountName], [true, 'system-node-critical', 'kube-proxy']);
    assert.deepEqual(spec.tolerations, [{ operator: 'Exists' }]);
    assert.equal(c.securityContext?.privileged, true);
    assert.deepEqual([c.image, c.imagePullPolicy], ['registry.k8s.io/kube-proxy:v1.34.4', 'IfNotPresent']);
    assert.deepEqual(c.command, ['/usr/local/bin/kube-proxy', '--config=/var/lib/kube-proxy/config.conf', '--hostname-override=$(NODE_NAME)']);
    assert.deepEqual(c.env, [{ name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } }]);
  });

  it('mounts its ConfigMap and /lib/modules read-only, /run/xtables.lock read-write (iptables locks it)', () => {
    const spec = podSpecOf(find(objects, 'DaemonSet', 'kube-proxy'))!;
    const mounts = Object.fromEntries(spec.containers[0]!.volumeMounts!.map((m) => [m.mountPath, m.readOnly ?? false]));
    assert.deepEqual(mounts, { '/var/lib/kube-proxy': true, '/run/xtables.lock': false, '/lib/modules': true });
    const hostPaths = Object.fromEntries(spec.volumes!.filter((v) => v.hostPath).map((v) => [v.hostPath!.path, v.hostPath!.type]));
    assert.deepEqual(hostPaths, { '/run/xtables.lock': 'FileOrCreate', '/lib/modules': undefined });
    assert.deepEqual(spec.volumes!.find((v) => v.configMap)?.configMap, { name: 'kube-proxy' });
  });

  it('selector matches the template labels', () => {
    const ds = find(objects, 'DaemonSet', 'kube-proxy') as V1DaemonSet;
    for (const [k, v] of Object.entries(ds.spec!.selector.matchLabels!)) assert.equal(ds.spec!.template.metadata!.labels![k], v);
  });
});
