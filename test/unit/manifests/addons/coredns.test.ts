/** The CoreDNS addon's objects (manifests/addons/coredns.ts): kubeadm's shape, non-root, the Corefile. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1ConfigMap, V1Deployment, V1Service } from '@kubernetes/client-node';
import { coreDNSObjects, corefile, COREDNS_UID } from '../../../../manifests/addons/coredns.ts';
import { find, ipv6Config, sampleConfig } from '../fixtures.ts';

const config = sampleConfig();
const objects = coreDNSObjects(config);
const deployment = find(objects as never, 'Deployment', 'coredns') as V1Deployment;
const pod = deployment.spec!.template.spec!;

describe('coreDNSObjects', () => {
  it("has kubeadm's objects in apply order, all labelled managed-by kubeception", () => {
    assert.deepEqual(objects.map((o) => `${o.kind}/${o.metadata.name}`), ['ServiceAccount/coredns', 'ClusterRole/system:coredns', 'ClusterRoleBinding/system:coredns', 'ConfigMap/coredns', 'Deployment/coredns', 'Service/kube-dns']);
    for (const o of objects) assert.equal(o.metadata.labels?.['app.kubernetes.io/managed-by'], 'kubeception', `${o.kind}/${o.metadata.name}`);
  });

  it('2 replicas spread by hostname, system-cluster-critical, tolerating the control-plane taint', () => {
    assert.equal(deployment.spec!.replicas, 2);
    assert.equal((find(coreDNSObjects(config, 3) as never, 'Deployment', 'coredns') as V1Deployment).spec!.replicas, 3);
    assert.equal(pod.priorityClassName, 'system-cluster-critical');
    const term = pod.affinity!.podAntiAffinity!.preferredDuringSchedulingIgnoredDuringExecution![0]!.podAffinityTerm;
    assert.equal(term.topologyKey, 'kubernetes.io/hostname');
    assert.deepEqual(term.labelSelector!.matchExpressions![0]!.values, ['kube-dns']);
    assert.ok(pod.tolerations!.some((t) => t.key === 'node-role.kubernetes.io/control-plane' && t.effect === 'NoSchedule'));
  });

  it('non-root, no capabilities, read-only root; port 53 through the safe sysctl', () => {
    assert.equal(pod.securityContext!.runAsNonRoot, true);
    assert.equal(pod.securityContext!.runAsUser, COREDNS_UID);
    assert.notEqual(COREDNS_UID, 0);
    assert.deepEqual(pod.securityContext!.sysctls, [{ name: 'net.ipv4.ip_unprivileged_port_start', value: '53' }]);
    const c = pod.containers[0]!;
    assert.equal(c.securityContext!.readOnlyRootFilesystem, true);
    assert.equal(c.securityContext!.allowPrivilegeEscalation, false);
    assert.deepEqual(c.securityContext!.capabilities, { drop: ['ALL'] });
    assert.equal(c.image, 'registry.k8s.io/coredns/coredns:v1.12.1');
    assert.equal(pod.dnsPolicy, 'Default');
  });

  it('Corefile: the cluster domain, forward to the node resolvers, cache, health and ready', () => {
    const cf = (find(objects as never, 'ConfigMap', 'coredns') as V1ConfigMap).data!.Corefile!;
    assert.equal(cf, corefile('cluster.local'));
    assert.match(cf, /kubernetes cluster\.local in-addr\.arpa ip6\.arpa \{/);
    assert.match(cf, /forward \. \/etc\/resolv\.conf/);
    for (const p of [/^\s+health \{/m, /^\s+ready$/m, /^\s+cache 30 \{/m, /^\s+loop$/m, /disable success cluster\.local/]) assert.match(cf, p);
    assert.match(corefile('k8s.example'), /kubernetes k8s\.example in-addr/);
  });

  it('Service kube-dns at the 10th address, selecting the pods', () => {
    const svc = find(objects as never, 'Service', 'kube-dns') as V1Service;
    assert.equal(svc.spec!.clusterIP, '10.96.0.10');
    assert.deepEqual(svc.spec!.selector, deployment.spec!.template.metadata!.labels && { 'k8s-app': 'kube-dns' });
    assert.equal(deployment.spec!.template.metadata!.labels!['k8s-app'], 'kube-dns');
    assert.deepEqual(svc.spec!.ports!.map((p) => `${p.port}/${p.protocol}`), ['53/UDP', '53/TCP', '9153/TCP']);
    assert.equal((find(coreDNSObjects(ipv6Config()) as never, 'Service', 'kube-dns') as V1Service).spec!.clusterIP, 'fd00:96::a');
  });

  it('is pure: the same config gives deep-equal objects', () => {
    assert.deepEqual(coreDNSObjects(config), coreDNSObjects(sampleConfig()));
  });
});
