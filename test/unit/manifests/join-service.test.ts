/** The join service's and CSR approver's objects, and the bootstrap-token RBAC. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1ClusterRole, V1ClusterRoleBinding, V1Deployment, V1Role, V1RoleBinding, V1Secret, V1Service } from '@kubernetes/client-node';
import { JOIN_NODE_PORT } from '../../../lib/constants.ts';
import { KubeceptionError } from '../../../lib/errors.ts';
import { BOOTSTRAP_TOKEN_GROUP, bootstrapTokenRbac, REMOVED_BOOTSTRAP_BINDINGS } from '../../../manifests/bootstrap-token-rbac.ts';
import { JOIN_CONTAINER_PORT, JOIN_TLS_DIR, type JoinServiceInput, type JoinServiceObject, joinServiceObjects } from '../../../manifests/join-service.ts';
import { csrApproverObjects } from '../../../manifests/csr-approver.ts';
import { pem, sampleConfig } from './fixtures.ts';

const input = (over: Partial<JoinServiceInput> = {}): JoinServiceInput => ({ image: 'localhost/kubeception:v0.1.0', tls: { certPem: pem('join.crt'), keyPem: pem('join.key') }, ...over });
const config = sampleConfig();
const objects = joinServiceObjects(config, input());

function get<T>(objs: readonly { kind: string; metadata: { name: string; namespace?: string } }[], kind: string, name: string, namespace?: string): T {
  const o = objs.find((x) => x.kind === kind && x.metadata.name === name && (namespace === undefined || x.metadata.namespace === namespace));
  if (!o) throw new Error(`${kind}/${name} not in ${objs.map((x) => `${x.kind}/${x.metadata.name}`).join(', ')}`);
  return o as T;
}
const podOf = (objs: JoinServiceObject[]) => get<V1Deployment>(objs, 'Deployment', 'kubeception-join').spec!.template;
const containerOf = (objs: JoinServiceObject[]) => podOf(objs).spec!.containers[0]!;
const service = get<V1Service>(objects, 'Service', 'kubeception-join');

describe('joinServiceObjects', () => {
  it('returns ServiceAccount, two reader Roles + RoleBindings, Secret, Deployment, Service (apply order)', () => {
    assert.deepEqual(objects.map((o) => `${o.kind}/${o.metadata.namespace}/${o.metadata.name}`), [
      'ServiceAccount/kube-system/kubeception-join',
      'Role/kube-public/kubeception:join-discovery-reader', 'RoleBinding/kube-public/kubeception:join-discovery-reader',
      'Role/kube-system/kubeception:join-discovery-reader', 'RoleBinding/kube-system/kubeception:join-discovery-reader',
      'Secret/kube-system/kubeception-join-tls', 'Deployment/kube-system/kubeception-join', 'Service/kube-system/kubeception-join',
    ]);
    assert.deepEqual(joinServiceObjects(config, input()), objects);
  });

  it('the ServiceAccount can read exactly cluster-info, the token index and the node identity record — no Secret', () => {
    const rules = (ns: string) => get<V1Role>(objects, 'Role', 'kubeception:join-discovery-reader', ns).rules;
    assert.deepEqual(rules('kube-public'), [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'], resourceNames: ['cluster-info'] }]);
    assert.deepEqual(rules('kube-system'), [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'], resourceNames: ['kubeception-bootstrap-token-index', 'kubeception-node-identities'] }]);
    for (const ns of ['kube-public', 'kube-system']) {
      const rb = get<V1RoleBinding>(objects, 'RoleBinding', 'kubeception:join-discovery-reader', ns);
      assert.deepEqual(rb.subjects, [{ kind: 'ServiceAccount', name: 'kubeception-join', namespace: 'kube-system' }]);
    }
    assert.ok(!JSON.stringify(objects.filter((o) => o.kind === 'Role')).includes('secrets'));
  });

  it('refuses non-PEM TLS and an empty image (join-service-input)', () => {
    for (const over of [{ tls: { certPem: pem('join.crt'), keyPem: '' } }, { image: ' ' }])
      assert.throws(() => joinServiceObjects(config, input(over)), (e) => e instanceof KubeceptionError && e.code === 'join-service-input');
  });

  it('the TLS Secret holds only tls.crt and tls.key (no cluster CA)', () => {
    const s = get<V1Secret>(objects, 'Secret', 'kubeception-join-tls');
    assert.deepEqual(Object.keys(s.data!).sort(), ['tls.crt', 'tls.key']);
  });

  it('runs serve-join with the TLS Secret read-only, limits set, as nobody on a read-only root, HTTPS readiness on /readyz, liveness on /healthz', () => {
    const c = containerOf(objects);
    assert.deepEqual(c.args, ['serve-join', '--listen', '0.0.0.0:8443', '--tls-dir', '/etc/kubeception/tls']);
    assert.equal(c.volumeMounts!.find((m) => m.mountPath === JOIN_TLS_DIR)!.readOnly, true);
    assert.deepEqual(c.resources!.limits, { cpu: '1', memory: '384Mi' });
    const spec = podOf(objects).spec!;
    assert.deepEqual([spec.securityContext!.runAsNonRoot, spec.securityContext!.runAsUser, c.securityContext!.readOnlyRootFilesystem], [true, 65534, true]);
    assert.deepEqual(c.readinessProbe!.httpGet, { scheme: 'HTTPS', path: '/readyz', port: 8443 });
    assert.deepEqual(c.livenessProbe!.httpGet, { scheme: 'HTTPS', path: '/healthz', port: 8443 });
    assert.deepEqual(spec.nodeSelector, { 'node-role.kubernetes.io/control-plane': '' });
  });

  it(`the Service is NodePort ${JOIN_NODE_PORT}, port 443 → the container's 8443`, () => {
    assert.deepEqual(service.spec!.ports, [{ name: 'https', protocol: 'TCP', port: 443, targetPort: JOIN_CONTAINER_PORT, nodePort: 30000 }]);
  });

  it('the NodePort keeps client addresses (externalTrafficPolicy: Local: no SNAT, so the per-client limits see each worker)', () => {
    assert.equal(service.spec!.externalTrafficPolicy, 'Local');
  });
});

describe('csrApproverObjects', () => {
  const objs = csrApproverObjects('img:1', 6443, ['kubernetes.default.svc', '10.96.0.1']);
  it('may read CSRs, get and list Nodes, approve only for the kubelet client and serving signers, get/update only the identity record; no Secret; no port', () => {
    const role = get<V1ClusterRole>(objs as never, 'ClusterRole', 'kubeception:csr-approver');
    assert.deepEqual(role.rules, [
      { apiGroups: ['certificates.k8s.io'], resources: ['certificatesigningrequests'], verbs: ['get', 'list', 'watch'] },
      { apiGroups: ['certificates.k8s.io'], resources: ['certificatesigningrequests/approval'], verbs: ['update'] },
      { apiGroups: ['certificates.k8s.io'], resources: ['signers'], verbs: ['approve'], resourceNames: ['kubernetes.io/kube-apiserver-client-kubelet', 'kubernetes.io/kubelet-serving'] },
      { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list'] },
    ]);
    assert.deepEqual(get<V1Role>(objs as never, 'Role', 'kubeception:csr-approver', 'kube-system').rules, [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'update'], resourceNames: ['kubeception-node-identities'] }]);
    assert.ok(!JSON.stringify(objs).includes('secrets'));
    const d = get<V1Deployment>(objs as never, 'Deployment', 'kubeception-csr-approver');
    const c = d.spec!.template.spec!.containers[0]!;
    assert.deepEqual([c.args, c.ports, c.resources!.limits], [['approve-csrs'], undefined, { cpu: '500m', memory: '320Mi' }]);
  });
  it("both in-cluster clients talk to their own node's apiserver (hostIP:bindPort), not through the kubernetes Service", () => {
    const want = [
      { name: 'KUBERNETES_SERVICE_HOST', valueFrom: { fieldRef: { fieldPath: 'status.hostIP' } } },
      { name: 'KUBERNETES_SERVICE_PORT', value: '6443' },
    ];
    for (const name of ['kubeception-csr-approver', 'kubeception-join']) {
      const d = get<V1Deployment>([...objs, ...joinServiceObjects(sampleConfig(), { image: 'img:1', tls: { certPem: '-----BEGIN C', keyPem: '-----BEGIN K' } })] as never, 'Deployment', name);
      const reserved = name === 'kubeception-csr-approver' ? [{ name: 'KUBECEPTION_RESERVED_SANS', value: 'kubernetes.default.svc,10.96.0.1' }] : [];
      assert.deepEqual(d.spec!.template.spec!.containers[0]!.env, [...want, ...reserved], name);
    }
  });
});

describe('bootstrapTokenRbac', () => {
  const objs = bootstrapTokenRbac();
  it("kubeadm's TLS-bootstrap bindings and kubeadm:get-nodes, without the blanket new-node auto-approval", () => {
    assert.equal(BOOTSTRAP_TOKEN_GROUP, 'system:bootstrappers:kubeadm:default-node-token');
    assert.deepEqual((objs.filter((o) => o.kind === 'ClusterRoleBinding') as V1ClusterRoleBinding[]).map((b) => [b.metadata!.name, b.roleRef.name, b.subjects!.map((s) => `${s.kind}/${s.name}`)]), [
      ['kubeadm:kubelet-bootstrap', 'system:node-bootstrapper', ['Group/system:bootstrappers:kubeadm:default-node-token']],
      ['kubeadm:node-autoapprove-certificate-rotation', 'system:certificates.k8s.io:certificatesigningrequests:selfnodeclient', ['Group/system:nodes']],
      ['kubeadm:get-nodes', 'kubeadm:get-nodes', ['Group/system:bootstrappers:kubeadm:default-node-token']],
    ]);
    assert.deepEqual((objs[0] as V1ClusterRole).rules, [{ apiGroups: [''], resources: ['nodes'], verbs: ['get'] }]);
    assert.ok(!JSON.stringify(objs).includes(':nodeclient'));
    assert.deepEqual(REMOVED_BOOTSTRAP_BINDINGS, ['kubeadm:node-autoapprove-bootstrap']);
    assert.deepEqual(bootstrapTokenRbac(), objs);
  });
});
