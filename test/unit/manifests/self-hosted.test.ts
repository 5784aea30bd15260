/** The self-hosted control plane's objects (manifests/self-hosted.ts, self-hosted-secrets.ts). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1DaemonSet, V1Deployment, V1Secret, V1ServiceAccount } from '@kubernetes/client-node';
import { KubeceptionError } from '../../../lib/errors.ts';
import { parseKubeconfig } from '../../../lib/k8s/kubeconfig.ts';
import { apiserverUrls } from '../../../lib/k8s/endpoints.ts';
import { SECRET_MOUNT } from '../../../manifests/self-hosted-secrets.ts';
import { selfHostedObjects } from '../../../manifests/self-hosted.ts';
import { find, flagsOf, ipv6Config, pem, podSpecOf, sampleConfig, sampleSecrets } from './fixtures.ts';

const config = sampleConfig();
const secrets = sampleSecrets(config);
const objects = selfHostedObjects(config, secrets);
const components = ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler'] as const;
const secretData = (name: string) => {
  const s = find(objects, 'Secret', name) as V1Secret;
  return Object.fromEntries(Object.entries(s.data!).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
};
const containerOf = (kind: 'DaemonSet' | 'Deployment', name: string) => podSpecOf(find(objects, kind, name))!.containers[0]!;

describe('selfHostedObjects', () => {
  it('returns ServiceAccounts, RBAC, Secrets, then the workloads (apply order)', () => {
    assert.deepEqual(objects.map((o) => `${o.kind}/${o.metadata.name}`), [
      'ServiceAccount/kube-apiserver', 'ServiceAccount/kube-controller-manager', 'ServiceAccount/kube-scheduler',
      'ClusterRoleBinding/kubeadm:cluster-admins',
      'Secret/kube-apiserver', 'Secret/kube-controller-manager', 'Secret/kube-scheduler',
      'DaemonSet/kube-apiserver', 'PodDisruptionBudget/kube-controller-manager', 'PodDisruptionBudget/kube-scheduler',
      'Deployment/kube-controller-manager', 'Deployment/kube-scheduler',
    ]);
  });

  it('HA: the controllers get one replica per control-plane node, a preferred anti-affinity per node, a PDB of maxUnavailable 1', () => {
    const three = selfHostedObjects(config, secrets, { controlPlaneNodes: 3 });
    for (const name of ['kube-controller-manager', 'kube-scheduler']) {
      const d = find(three, 'Deployment', name) as V1Deployment;
      assert.equal(d.spec!.replicas, 3);
      const anti = d.spec!.template.spec!.affinity!.podAntiAffinity!;
      assert.equal(anti.requiredDuringSchedulingIgnoredDuringExecution, undefined, 'a required anti-affinity would strand the surge pod');
      assert.deepEqual(anti.preferredDuringSchedulingIgnoredDuringExecution![0]!.podAffinityTerm, { topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: { component: name, tier: 'control-plane' } } });
      const pdb = find(three, 'PodDisruptionBudget', name) as { spec: { maxUnavailable: number; selector: unknown } };
      assert.deepEqual(pdb.spec, { maxUnavailable: 1, selector: { matchLabels: { component: name, tier: 'control-plane' } } });
    }
  });

  it('HA: each kube-apiserver pod advertises its own node (HOST_IP from status.hostIP); probes name no host', () => {
    const c = containerOf('DaemonSet', 'kube-apiserver');
    assert.equal(flagsOf(c).get('advertise-address'), '$(HOST_IP)');
    assert.deepEqual(c.env, [{ name: 'HOST_IP', valueFrom: { fieldRef: { fieldPath: 'status.hostIP' } } }]);
    assert.equal(c.readinessProbe!.httpGet!.host, undefined);
  });

  it('labels every object app.kubernetes.io/managed-by=kubeception', () => {
    for (const o of objects) assert.equal(o.metadata.labels?.['app.kubernetes.io/managed-by'], 'kubeception', `${o.kind}/${o.metadata.name}`);
  });

  it('ServiceAccounts mount no token (the components use client certificates)', () => {
    for (const c of components) assert.equal((find(objects, 'ServiceAccount', c) as V1ServiceAccount).automountServiceAccountToken, false);
  });

  it("binds cluster-admin to the apiserver-kubelet-client certificate's group (kubeadm:cluster-admins)", () => {
    const crb = find(objects, 'ClusterRoleBinding', 'kubeadm:cluster-admins') as { roleRef: { name: string }; subjects: { kind: string; name: string }[] };
    assert.equal(crb.roleRef.name, 'cluster-admin');
    assert.deepEqual(crb.subjects.map((s) => [s.kind, s.name]), [['Group', 'kubeadm:cluster-admins']]);
  });

  it('Secrets are Opaque with base64 data (no stringData) holding exactly the files each component reads', () => {
    for (const c of components) {
      const s = find(objects, 'Secret', c) as V1Secret;
      assert.deepEqual([s.type, s.stringData], ['Opaque', undefined]);
    }
    assert.deepEqual(Object.keys(secretData('kube-apiserver')).sort(), [
      'apiserver-etcd-client.crt', 'apiserver-etcd-client.key', 'apiserver-kubelet-client.crt', 'apiserver-kubelet-client.key',
      'apiserver.crt', 'apiserver.key', 'ca.crt', 'etcd-ca.crt', 'front-proxy-ca.crt', 'front-proxy-client.crt', 'front-proxy-client.key',
      'sa.key', 'sa.pub',
    ]);
    assert.equal(secretData('kube-apiserver')['etcd-ca.crt'], pem('etcd/ca.crt'));
    assert.deepEqual(secretData('kube-controller-manager'), {
      'ca.crt': pem('ca.crt'), 'ca.key': pem('ca.key'), 'sa.key': pem('sa.key'), 'front-proxy-ca.crt': pem('front-proxy-ca.crt'),
      kubeconfig: secrets.kubeconfigs.controllerManager,
    });
    assert.deepEqual(secretData('kube-scheduler'), { kubeconfig: secrets.kubeconfigs.scheduler });
  });

  it('every file a self-hosted flag names is a key of that component\'s Secret', () => {
    const workloads = [containerOf('DaemonSet', 'kube-apiserver'), containerOf('Deployment', 'kube-controller-manager'), containerOf('Deployment', 'kube-scheduler')];
    for (const [i, container] of workloads.entries()) {
      const data = secretData(components[i]!);
      for (const [name, value] of flagsOf(container)) {
        if (!value.startsWith('/')) continue;
        assert.ok(value.startsWith(`${SECRET_MOUNT}/`), `--${name}=${value}`);
        assert.ok(value.slice(SECRET_MOUNT.length + 1) in data, `--${name}=${value}: no such key in Secret ${components[i]}`);
      }
    }
  });

  it('the self-hosted kube-controller-manager runs every controller kubeadm runs (--controllers=*,bootstrapsigner,tokencleaner)', () => {
    assert.equal(flagsOf(containerOf('Deployment', 'kube-controller-manager')).get('controllers'), '*,bootstrapsigner,tokencleaner');
  });

  it('the controllers talk to the final apiserver of their own node (loopback), not the bootstrap one nor the first node', () => {
    for (const c of ['kube-controller-manager', 'kube-scheduler']) assert.equal(parseKubeconfig(secretData(c).kubeconfig!, c).server, 'https://127.0.0.1:6443');
    assert.throws(() => selfHostedObjects(config, sampleSecrets(config, apiserverUrls(config).final)), /not the node-local final apiserver/);
  });

  it('refuses a bootstrap kubeconfig and a missing PEM (KubeceptionError self-hosted-input)', () => {
    const isInput = (what: string) => (e: unknown) => e instanceof KubeceptionError && e.code === 'self-hosted-input' && e.what === what;
    assert.throws(() => selfHostedObjects(config, sampleSecrets(config, apiserverUrls(config).bootstrap)), isInput('secrets.kubeconfigs.controllerManager'));
    const noKey = sampleSecrets(config);
    noKey.pki['sa.key'] = '';
    assert.throws(() => selfHostedObjects(config, noKey), isInput("secrets.pki['sa.key']"));
  });

  for (const [kind, name] of [['DaemonSet', 'kube-apiserver'], ['Deployment', 'kube-controller-manager'], ['Deployment', 'kube-scheduler']] as const) {
    it(`${kind}/${name}: hostNetwork on control-plane nodes, tolerates the taint, not-ready, unreachable`, () => {
      const spec = podSpecOf(find(objects, kind, name))!;
      assert.equal(spec.hostNetwork, true);
      assert.equal(spec.priorityClassName, 'system-node-critical');
      assert.deepEqual(spec.nodeSelector, { 'node-role.kubernetes.io/control-plane': '' });
      assert.deepEqual(spec.tolerations!.map((t) => [t.key, t.operator, t.effect]), [
        ['node-role.kubernetes.io/control-plane', 'Exists', 'NoSchedule'], ['node.kubernetes.io/not-ready', 'Exists', undefined], ['node.kubernetes.io/unreachable', 'Exists', undefined],
      ]);
      assert.deepEqual([spec.serviceAccountName, spec.automountServiceAccountToken], [name, false]);
      assert.deepEqual(spec.volumes, [{ name: 'secrets', secret: { secretName: name, defaultMode: 0o400 } }]);
      assert.deepEqual(spec.containers[0]!.volumeMounts, [{ name: 'secrets', mountPath: SECRET_MOUNT, readOnly: true }]);
      assert.equal(spec.containers[0]!.ports, undefined, 'declared ports would make the scheduler block the surge pod');
    });

    it(`${kind}/${name}: selector matches the template, surge rollout with port sharing`, () => {
      const o = find(objects, kind, name) as V1DaemonSet | V1Deployment;
      const labels = o.spec!.template.metadata!.labels!;
      for (const [k, v] of Object.entries(o.spec!.selector.matchLabels!)) assert.equal(labels[k], v, k);
      const strategy = kind === 'DaemonSet' ? (o as V1DaemonSet).spec!.updateStrategy : (o as V1Deployment).spec!.strategy;
      assert.deepEqual(strategy, { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } });
      assert.equal(flagsOf(containerOf(kind, name)).get('permit-port-sharing'), 'true');
    });
  }

  it('kube-apiserver DaemonSet: bindPort, lease reconciler, probes /livez /readyz over HTTPS on the pod IP', () => {
    const c = containerOf('DaemonSet', 'kube-apiserver');
    const f = flagsOf(c);
    assert.deepEqual([f.get('secure-port'), f.has('endpoint-reconciler-type')], ['6443', false]);
    assert.deepEqual(c.livenessProbe!.httpGet, { port: 6443, path: '/livez', scheme: 'HTTPS' });
    assert.deepEqual(c.readinessProbe!.httpGet, { port: 6443, path: '/readyz', scheme: 'HTTPS' });
    assert.deepEqual(c.startupProbe!.httpGet!.path, '/livez');
    assert.equal(c.image, 'registry.k8s.io/kube-apiserver:v1.34.4');
  });

  it('controller Deployments: one replica, /healthz on 10257 / 10259 at 127.0.0.1', () => {
    for (const [name, port] of [['kube-controller-manager', 10257], ['kube-scheduler', 10259]] as const) {
      const d = find(objects, 'Deployment', name) as V1Deployment;
      const c = containerOf('Deployment', name);
      assert.equal(d.spec!.replicas, 1);
      assert.equal(flagsOf(c).get('secure-port'), String(port));
      assert.deepEqual(c.livenessProbe!.httpGet, { host: '127.0.0.1', port, path: '/healthz', scheme: 'HTTPS' });
    }
  });

  it('probes follow a single bind-address from extraArgs; an IPv6 host stays unbracketed', () => {
    const cfg = sampleConfig({ controllerManager: { extraArgs: { 'bind-address': '10.250.0.2' } } });
    const cm = podSpecOf(find(selfHostedObjects(cfg, sampleSecrets(cfg)), 'Deployment', 'kube-controller-manager'))!.containers[0]!;
    assert.equal(cm.livenessProbe!.httpGet!.host, '10.250.0.2');
    const v6 = ipv6Config({ apiServer: { extraSANs: [], extraArgs: { 'bind-address': 'fd00:20::2' } } });
    const api = podSpecOf(find(selfHostedObjects(v6, sampleSecrets(v6)), 'DaemonSet', 'kube-apiserver'))!.containers[0]!;
    assert.equal(api.livenessProbe!.httpGet!.host, 'fd00:20::2');
  });
});
