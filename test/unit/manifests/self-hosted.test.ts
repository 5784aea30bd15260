/** The self-hosted control plane's objects (manifests/self-hosted.ts, self-hosted-inputs.ts). */
import assert from 'node:assert/strict';
import { hardeningFiles, hardeningPaths } from '../../../manifests/apiserver-hardening.ts';
import { describe, it } from 'node:test';
import type { V1DaemonSet, V1Deployment, V1ServiceAccount } from '@kubernetes/client-node';
import { KubeceptionError } from '../../../lib/errors.ts';
import { parseKubeconfig } from '../../../lib/k8s/kubeconfig.ts';
import { apiserverUrls } from '../../../lib/k8s/endpoints.ts';
import { COMPONENT_PKI_FILES, FILES_DIGEST } from '../../../manifests/self-hosted-inputs.ts';
import { kubeconfigPaths } from '../../../lib/k8s/endpoints.ts';
import { selfHostedObjects } from '../../../manifests/self-hosted.ts';
import { find, flagsOf, ipv6Config, pem, podSpecOf, sampleConfig, sampleInputs } from './fixtures.ts';

const config = sampleConfig();
const inputs = sampleInputs(config);
const objects = selfHostedObjects(config, inputs);
const components = ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler'] as const;
const digestOf = (o: ReturnType<typeof find>) => (o as V1DaemonSet).spec!.template.metadata!.annotations![FILES_DIGEST];
const containerOf = (kind: 'DaemonSet' | 'Deployment', name: string) => podSpecOf(find(objects, kind, name))!.containers[0]!;

describe('selfHostedObjects', () => {
  it('returns ServiceAccounts, RBAC, then the workloads (apply order): no Secret', () => {
    assert.deepEqual(objects.map((o) => `${o.kind}/${o.metadata.name}`), [
      'ServiceAccount/kube-apiserver', 'ServiceAccount/kube-controller-manager', 'ServiceAccount/kube-scheduler',
      'ClusterRoleBinding/kubeadm:cluster-admins',
      'DaemonSet/kube-apiserver', 'PodDisruptionBudget/kube-controller-manager', 'PodDisruptionBudget/kube-scheduler',
      'Deployment/kube-controller-manager', 'Deployment/kube-scheduler',
    ]);
  });

  it('HA: the controllers get one replica per control-plane node, a preferred anti-affinity per node, a PDB of maxUnavailable 1', () => {
    const three = selfHostedObjects(config, inputs, { controlPlaneNodes: 3 });
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

  it('no private key, no certificate and no kubeconfig text is in any object (a node identity could read a Secret, not the host)', () => {
    const text = JSON.stringify(objects);
    for (const file of Object.keys(inputs.pki)) assert.ok(!text.includes(JSON.stringify(pem(file)).slice(1, -1)), `${file} is in an object`);
    assert.ok(!text.includes(inputs.kubeconfigs.controllerManager.slice(0, 40)));
    assert.ok(!text.includes('BEGIN'));
  });

  it('every file a self-hosted flag names is under a read-only hostPath mount of that pod, and is one its component reads', () => {
    const workloads = [containerOf('DaemonSet', 'kube-apiserver'), containerOf('Deployment', 'kube-controller-manager'), containerOf('Deployment', 'kube-scheduler')];
    const kc = kubeconfigPaths(config);
    const allowed: Record<string, string[]> = {
      'kube-apiserver': [...COMPONENT_PKI_FILES['kube-apiserver'].map((f) => `${config.certificatesDir}/${f}`), ...hardeningFiles(config), hardeningPaths(config).auditLog('self-hosted')],
      'kube-controller-manager': [...COMPONENT_PKI_FILES['kube-controller-manager'].map((f) => `${config.certificatesDir}/${f}`), kc.controllerManager],
      'kube-scheduler': [kc.scheduler],
    };
    for (const [i, container] of workloads.entries()) {
      const spec = podSpecOf(find(objects, i === 0 ? 'DaemonSet' : 'Deployment', components[i]!))!;
      const mounts = container.volumeMounts!.map((m) => [m, spec.volumes!.find((v) => v.name === m.name)!] as const);
      // The audit log directory is the one writable mount (the apiserver writes its log there).
      for (const [m, v] of mounts) assert.deepEqual([m.readOnly, m.mountPath, v.hostPath?.path], [m.name === 'audit-log' && i === 0 ? undefined : true, m.mountPath, m.mountPath], `${m.name}: read-only hostPath at the host's path`);
      for (const [name, value] of flagsOf(container)) {
        if (!value.startsWith('/')) continue;
        assert.ok(mounts.some(([m]) => value === m.mountPath || value.startsWith(`${m.mountPath}/`)), `--${name}=${value} is under no mount`);
        assert.ok(allowed[components[i]!]!.includes(value), `--${name}=${value}: not a file ${components[i]} is meant to read`);
      }
    }
  });

  it('the scheduler mounts only its kubeconfig; the apiserver and controller-manager the PKI directory (the controller-manager also its kubeconfig)', () => {
    const vols = (kind: 'DaemonSet' | 'Deployment', name: string) => podSpecOf(find(objects, kind, name))!.volumes!.map((v) => `${v.hostPath!.path}:${v.hostPath!.type}`);
    const kc = kubeconfigPaths(config);
    const h = hardeningPaths(config);
    assert.deepEqual(vols('DaemonSet', 'kube-apiserver'), [`${config.certificatesDir}:Directory`, `${h.auditPolicy}:File`, `${config.apiServer.auditLog.dir}:DirectoryOrCreate`, `${h.admissionConfig}:File`]);
    assert.deepEqual(vols('Deployment', 'kube-controller-manager'), [`${config.certificatesDir}:Directory`, `${kc.controllerManager}:File`]);
    assert.deepEqual(vols('Deployment', 'kube-scheduler'), [`${kc.scheduler}:File`]);
  });

  it('a changed file changes the digest of exactly the components that read it (rolls them)', () => {
    const renewed = sampleInputs(config);
    renewed.pki['apiserver.crt'] = pem('apiserver.crt renewed');
    const after = selfHostedObjects(config, renewed);
    const changed = (['DaemonSet', 'Deployment', 'Deployment'] as const).map((k, i) => digestOf(find(after, k, components[i]!)) !== digestOf(find(objects, k, components[i]!)));
    assert.deepEqual(changed, [true, false, false]);
    const key = sampleInputs(config);
    key.pki['ca.key'] = pem('ca.key rotated');
    const after2 = selfHostedObjects(config, key);
    assert.deepEqual((['DaemonSet', 'Deployment', 'Deployment'] as const).map((k, i) => digestOf(find(after2, k, components[i]!)) !== digestOf(find(objects, k, components[i]!))), [false, true, false]);
  });

  it('the self-hosted kube-controller-manager runs every controller kubeadm runs (--controllers=*,bootstrapsigner,tokencleaner)', () => {
    assert.equal(flagsOf(containerOf('Deployment', 'kube-controller-manager')).get('controllers'), '*,bootstrapsigner,tokencleaner');
  });

  it('the controllers talk to the final apiserver of their own node (loopback), not the bootstrap one nor the first node', () => {
    assert.equal(parseKubeconfig(inputs.kubeconfigs.controllerManager, 'cm').server, 'https://127.0.0.1:6443');
    assert.equal(flagsOf(containerOf('Deployment', 'kube-scheduler')).get('kubeconfig'), kubeconfigPaths(config).scheduler);
    assert.throws(() => selfHostedObjects(config, sampleInputs(config, apiserverUrls(config).final)), /not the node-local final apiserver/);
  });

  it('refuses a bootstrap kubeconfig and a missing PEM (KubeceptionError self-hosted-input)', () => {
    const isInput = (what: string) => (e: unknown) => e instanceof KubeceptionError && e.code === 'self-hosted-input' && e.what === what;
    assert.throws(() => selfHostedObjects(config, sampleInputs(config, apiserverUrls(config).bootstrap)), isInput('inputs.kubeconfigs.controllerManager'));
    const noKey = sampleInputs(config);
    noKey.pki['sa.key'] = '';
    assert.throws(() => selfHostedObjects(config, noKey), isInput("inputs.pki['sa.key']"));
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
      assert.ok(spec.volumes!.every((v) => v.hostPath && !v.secret), 'hostPath volumes only');
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
    // Ready only after 15 answered probes in a row, unready only after 15 failed: a surge pod's probes
    // reach either instance on the shared port (see the module docstring).
    assert.deepEqual([c.readinessProbe!.successThreshold, c.readinessProbe!.failureThreshold, c.readinessProbe!.periodSeconds], [15, 15, 1]);
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
    const cm = podSpecOf(find(selfHostedObjects(cfg, sampleInputs(cfg)), 'Deployment', 'kube-controller-manager'))!.containers[0]!;
    assert.equal(cm.livenessProbe!.httpGet!.host, '10.250.0.2');
    const v6 = ipv6Config({ apiServer: { extraSANs: [], extraArgs: { 'bind-address': 'fd00:20::2' } } });
    const api = podSpecOf(find(selfHostedObjects(v6, sampleInputs(v6)), 'DaemonSet', 'kube-apiserver'))!.containers[0]!;
    assert.equal(api.livenessProbe!.httpGet!.host, 'fd00:20::2');
  });
});
