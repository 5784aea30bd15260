/** The join service's objects (manifests/join-service.ts) and the bootstrap-token RBAC (manifests/bootstrap-token-rbac.ts). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1ClusterRoleBinding, V1Deployment, V1Role, V1RoleBinding, V1Secret, V1Service } from '@kubernetes/client-node';
import { JOIN_NODE_PORT } from '../../../lib/constants.ts';
import { KubeceptionError } from '../../../lib/errors.ts';
import { BOOTSTRAP_TOKEN_GROUP, bootstrapTokenRbac } from '../../../manifests/bootstrap-token-rbac.ts';
import {
  JOIN_CONTAINER_PORT, JOIN_TLS_DIR, type JoinServiceInput, type JoinServiceObject, joinServiceObjects, NO_TOKEN_SECRET,
} from '../../../manifests/join-service.ts';
import { ipv6Config, pem, sampleConfig } from './fixtures.ts';

const input = (over: Partial<JoinServiceInput> = {}): JoinServiceInput => ({
  image: 'localhost/kubeception:v0.1.0',
  tls: { certPem: pem('join.crt'), keyPem: pem('join.key'), caPem: pem('ca.crt') },
  tokenSecretNames: ['bootstrap-token-abcdef'],
  ...over,
});
const config = sampleConfig();
const objects = joinServiceObjects(config, input());

function get<T>(objs: JoinServiceObject[], kind: string, name: string): T {
  const o = objs.find((x) => x.kind === kind && x.metadata.name === name);
  if (!o) throw new Error(`${kind}/${name} not in ${objs.map((x) => `${x.kind}/${x.metadata.name}`).join(', ')}`);
  return o as T;
}
const roleOf = (objs: JoinServiceObject[]) => get<V1Role>(objs, 'Role', 'kubeception:join-token-reader');
const podOf = (objs: JoinServiceObject[]) => get<V1Deployment>(objs, 'Deployment', 'kubeception-join').spec!.template;
const containerOf = (objs: JoinServiceObject[]) => podOf(objs).spec!.containers[0]!;
const service = get<V1Service>(objects, 'Service', 'kubeception-join');

describe('joinServiceObjects', () => {
  it('returns ServiceAccount, Role, RoleBinding, Secret, Deployment, Service (apply order)', () => {
    assert.deepEqual(objects.map((o) => `${o.kind}/${o.metadata.name}`), [
      'ServiceAccount/kubeception-join', 'Role/kubeception:join-token-reader', 'RoleBinding/kubeception:join-token-reader',
      'Secret/kubeception-join-tls', 'Deployment/kubeception-join', 'Service/kubeception-join',
    ]);
  });

  it('is deterministic: deep-equal objects for the same input, whatever the token order or duplicates', () => {
    assert.deepEqual(joinServiceObjects(config, input()), objects);
    const names = ['bootstrap-token-zzzzzz', 'bootstrap-token-abcdef', 'bootstrap-token-zzzzzz'];
    const a = joinServiceObjects(config, input({ tokenSecretNames: names }));
    const b = joinServiceObjects(config, input({ tokenSecretNames: [...names].reverse() }));
    assert.deepEqual(a, b);
    assert.deepEqual(roleOf(a).rules![0]!.resourceNames, ['bootstrap-token-abcdef', 'bootstrap-token-zzzzzz']);
  });

  it('puts every object in kube-system with the managed-by and name labels', () => {
    for (const o of objects) {
      assert.equal(o.metadata.namespace, 'kube-system', `${o.kind}/${o.metadata.name}`);
      assert.deepEqual(o.metadata.labels, { 'app.kubernetes.io/managed-by': 'kubeception', 'app.kubernetes.io/name': 'kubeception-join' });
    }
  });

  it("the Role allows exactly get on the named Secrets and nothing else", () => {
    assert.deepEqual(roleOf(objects).rules, [{ apiGroups: [''], resources: ['secrets'], verbs: ['get'], resourceNames: ['bootstrap-token-abcdef'] }]);
  });

  it('no tokens: resourceNames is a placeholder no token can have, never [] (which would mean every Secret)', () => {
    const rule = roleOf(joinServiceObjects(config, input({ tokenSecretNames: [] }))).rules![0]!;
    assert.deepEqual(rule.resourceNames, [NO_TOKEN_SECRET]);
    assert.equal(NO_TOKEN_SECRET, 'bootstrap-token-none');
    assert.doesNotMatch(NO_TOKEN_SECRET, /^bootstrap-token-[a-z0-9]{6}$/);
    assert.deepEqual([rule.verbs, rule.resources], [['get'], ['secrets']]);
  });

  it('binds the Role to the kubeception-join ServiceAccount only', () => {
    const rb = get<V1RoleBinding>(objects, 'RoleBinding', 'kubeception:join-token-reader');
    assert.deepEqual(rb.roleRef, { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'kubeception:join-token-reader' });
    assert.deepEqual(rb.subjects, [{ kind: 'ServiceAccount', name: 'kubeception-join', namespace: 'kube-system' }]);
    assert.equal(podOf(objects).spec!.serviceAccountName, 'kubeception-join');
    assert.equal(podOf(objects).spec!.automountServiceAccountToken, true);
  });

  it('refuses names that are not bootstrap token Secrets, non-PEM TLS and an empty image (join-service-input)', () => {
    const bad: Partial<JoinServiceInput>[] = [
      { tokenSecretNames: ['kube-apiserver'] }, { tokenSecretNames: ['bootstrap-token-ABCDEF'] }, { tokenSecretNames: [''] },
      { tokenSecretNames: ['bootstrap-token-abcdefg'] }, { tls: { ...input().tls, keyPem: '' } }, { image: ' ' },
    ];
    for (const over of bad)
      assert.throws(() => joinServiceObjects(config, input(over)), (e) => e instanceof KubeceptionError && e.code === 'join-service-input', JSON.stringify(over));
  });

  it('the TLS Secret is kubernetes.io/tls with tls.crt, tls.key, ca.crt as base64 data', () => {
    const s = get<V1Secret>(objects, 'Secret', 'kubeception-join-tls');
    assert.deepEqual([s.type, s.stringData], ['kubernetes.io/tls', undefined]);
    const decoded = Object.fromEntries(Object.entries(s.data!).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
    assert.deepEqual(decoded, { 'tls.crt': pem('join.crt'), 'tls.key': pem('join.key'), 'ca.crt': pem('ca.crt') });
  });

  it('runs serve-join with the TLS Secret mounted read-only and the final apiserver URL', () => {
    const c = containerOf(objects);
    assert.deepEqual([c.image, c.imagePullPolicy, c.command], ['localhost/kubeception:v0.1.0', 'IfNotPresent', undefined]);
    assert.deepEqual(c.args, ['serve-join', '--listen', '0.0.0.0:8443', '--tls-dir', '/etc/kubeception/tls', '--apiserver', 'https://10.250.0.2:6443']);
    const mount = c.volumeMounts!.find((m) => m.mountPath === JOIN_TLS_DIR)!;
    assert.equal(mount.readOnly, true);
    const volume = podOf(objects).spec!.volumes!.find((v) => v.name === mount.name)!;
    assert.equal(volume.secret?.secretName, 'kubeception-join-tls');
  });

  it('brackets an IPv6 advertise address in --apiserver', () => {
    const args = containerOf(joinServiceObjects(ipv6Config(), input())).args!;
    assert.equal(args[args.indexOf('--apiserver') + 1], 'https://[fd00:20::2]:6443');
  });

  it('one replica on a control-plane node, tolerating its taint', () => {
    const d = get<V1Deployment>(objects, 'Deployment', 'kubeception-join');
    assert.equal(d.spec!.replicas, 1);
    const spec = podOf(objects).spec!;
    assert.deepEqual(spec.nodeSelector, { 'node-role.kubernetes.io/control-plane': '' });
    assert.ok(spec.tolerations!.some((t) => t.key === 'node-role.kubernetes.io/control-plane' && t.effect === 'NoSchedule'));
    for (const [k, v] of Object.entries(d.spec!.selector.matchLabels!)) assert.equal(podOf(objects).metadata!.labels![k], v);
  });

  it('runs as nobody (65534) on a read-only root with a writable /tmp, small requests, TCP readiness on 8443', () => {
    const spec = podOf(objects).spec!;
    const c = containerOf(objects);
    assert.deepEqual([spec.securityContext!.runAsNonRoot, spec.securityContext!.runAsUser, spec.securityContext!.fsGroup], [true, 65534, 65534]);
    assert.deepEqual([c.securityContext!.readOnlyRootFilesystem, c.securityContext!.allowPrivilegeEscalation], [true, false]);
    const tmp = c.volumeMounts!.find((m) => m.mountPath === '/tmp')!;
    assert.ok(spec.volumes!.find((v) => v.name === tmp.name)!.emptyDir);
    assert.deepEqual(c.readinessProbe!.tcpSocket, { port: 8443 });
    assert.ok(c.resources!.requests!.cpu && c.resources!.requests!.memory);
  });

  it(`the Service is NodePort ${JOIN_NODE_PORT}, port 443 → the container's 8443, selecting the pod`, () => {
    assert.equal(service.spec!.type, 'NodePort');
    assert.deepEqual(service.spec!.ports, [{ name: 'https', protocol: 'TCP', port: 443, targetPort: JOIN_CONTAINER_PORT, nodePort: 30000 }]);
    assert.deepEqual(containerOf(objects).ports!.map((p) => p.containerPort), [8443]);
    for (const [k, v] of Object.entries(service.spec!.selector!)) assert.equal(podOf(objects).metadata!.labels![k], v);
  });
});

describe('bootstrapTokenRbac', () => {
  const bindings = bootstrapTokenRbac() as V1ClusterRoleBinding[];

  it("is kubeadm's three TLS-bootstrap ClusterRoleBindings, with kubeadm's names, roles and groups", () => {
    assert.equal(BOOTSTRAP_TOKEN_GROUP, 'system:bootstrappers:kubeadm:default-node-token');
    assert.deepEqual(bindings.map((b) => [b.metadata!.name, b.roleRef.kind, b.roleRef.name, b.subjects!.map((s) => `${s.kind}/${s.name}`)]), [
      ['kubeadm:kubelet-bootstrap', 'ClusterRole', 'system:node-bootstrapper', ['Group/system:bootstrappers:kubeadm:default-node-token']],
      ['kubeadm:node-autoapprove-bootstrap', 'ClusterRole', 'system:certificates.k8s.io:certificatesigningrequests:nodeclient', ['Group/system:bootstrappers:kubeadm:default-node-token']],
      ['kubeadm:node-autoapprove-certificate-rotation', 'ClusterRole', 'system:certificates.k8s.io:certificatesigningrequests:selfnodeclient', ['Group/system:nodes']],
    ]);
  });

  it('cluster-scoped, rbac.authorization.k8s.io/v1, labelled, deterministic', () => {
    for (const b of bindings) {
      assert.deepEqual([b.apiVersion, b.kind, b.metadata!.namespace], ['rbac.authorization.k8s.io/v1', 'ClusterRoleBinding', undefined]);
      assert.equal(b.metadata!.labels?.['app.kubernetes.io/managed-by'], 'kubeception');
      for (const s of b.subjects!) assert.equal(s.apiGroup, 'rbac.authorization.k8s.io');
    }
    assert.deepEqual(bootstrapTokenRbac(), bindings);
  });
});
