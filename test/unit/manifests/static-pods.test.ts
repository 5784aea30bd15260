/** The bootstrap control plane's static pods (manifests/static-pods.ts) and the flags they carry. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hardeningPaths } from '../../../manifests/apiserver-hardening.ts';
import { ConfigError } from '../../../lib/errors.ts';
import { kubeconfigPaths } from '../../../lib/k8s/endpoints.ts';
import { BOOTSTRAP_IDLE_CONTROLLERS, RESERVED_FLAGS } from '../../../manifests/flags.ts';
import { bootstrapStaticPods } from '../../../manifests/static-pods.ts';
import { flagsOf, sampleConfig } from './fixtures.ts';

const config = sampleConfig();
const pods = bootstrapStaticPods(config);
const byComponent = (c: string) => {
  const m = pods.find((p) => p.pod.metadata.name === `bootstrap-${c}`);
  assert.ok(m, c);
  return m;
};
const flags = (c: string, cfg = config) => {
  const m = bootstrapStaticPods(cfg).find((p) => p.pod.metadata.name === `bootstrap-${c}`)!;
  return flagsOf(m.pod.spec!.containers[0]!);
};

describe('bootstrapStaticPods', () => {
  it('writes bootstrap-<component>.yaml, apiserver first', () => {
    assert.deepEqual(pods.map((p) => p.file), ['bootstrap-kube-apiserver.yaml', 'bootstrap-kube-controller-manager.yaml', 'bootstrap-kube-scheduler.yaml']);
  });

  for (const c of ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler']) {
    it(`${c}: hostNetwork, system-node-critical, kube-system, labels, image, IfNotPresent, no probes`, () => {
      const { pod } = byComponent(c);
      const spec = pod.spec!;
      const container = spec.containers[0]!;
      assert.equal(spec.hostNetwork, true);
      assert.equal(spec.priorityClassName, 'system-node-critical');
      assert.equal(pod.metadata.namespace, 'kube-system');
      assert.deepEqual(pod.metadata.labels, { component: `bootstrap-${c}`, tier: 'control-plane', 'app.kubernetes.io/managed-by': 'kubeception' });
      assert.equal(container.image, `registry.k8s.io/${c}:v1.34.4`);
      assert.equal(container.imagePullPolicy, 'IfNotPresent');
      assert.equal(container.command![0], c);
      assert.deepEqual([container.livenessProbe, container.readinessProbe, container.startupProbe], [undefined, undefined, undefined]);
    });

    it(`${c}: only read-only hostPath volumes (a mirror pod may not reference Secrets or ServiceAccounts)`, () => {
      const spec = byComponent(c).pod.spec!;
      assert.equal(spec.serviceAccountName, undefined);
      for (const v of spec.volumes ?? []) assert.ok(v.hostPath && Object.keys(v).length === 2, JSON.stringify(v));
      // The audit log directory is the apiserver's one writable mount.
      for (const m of spec.containers[0]!.volumeMounts ?? []) assert.equal(m.readOnly, c === 'kube-apiserver' && m.name === 'audit-log' ? undefined : true, m.name);
    });

    it(`${c}: every absolute path in a flag lies under a mount, at the host's own path`, () => {
      const container = byComponent(c).pod.spec!.containers[0]!;
      const mounts = (container.volumeMounts ?? []).map((m) => m.mountPath);
      for (const [name, value] of flagsOf(container)) {
        if (!value.startsWith('/')) continue;
        assert.ok(mounts.some((m) => value === m || value.startsWith(`${m}/`)), `--${name}=${value} not under ${mounts}`);
      }
    });
  }

  it('controller-manager and scheduler mount only their bootstrap kubeconfig, not the secrets dir (admin.conf)', () => {
    const kc = kubeconfigPaths(config);
    const mountsOf = (c: string) => byComponent(c).pod.spec!.volumes!.map((v) => v.hostPath!.path);
    const h = hardeningPaths(config);
    assert.deepEqual(mountsOf('kube-apiserver'), [config.certificatesDir, h.auditPolicy, config.apiServer.auditLog.dir, h.admissionConfig]);
    assert.deepEqual(mountsOf('kube-controller-manager'), [config.certificatesDir, kc.bootstrapControllerManager]);
    assert.deepEqual(mountsOf('kube-scheduler'), [kc.bootstrapScheduler]);
    for (const c of ['kube-controller-manager', 'kube-scheduler']) {
      const f = flags(c);
      const file = c === 'kube-scheduler' ? kc.bootstrapScheduler : kc.bootstrapControllerManager;
      assert.deepEqual(['kubeconfig', 'authentication-kubeconfig', 'authorization-kubeconfig'].map((n) => f.get(n)), [file, file, file]);
    }
  });

  const pki = (f: string) => `/etc/kubernetes/pki/${f}`;
  const apiserverTable: [flag: string, value: string][] = [
    ['secure-port', '6444'],
    ['endpoint-reconciler-type', 'none'],
    ['advertise-address', '10.250.0.2'],
    ['etcd-servers', 'https://127.0.0.1:2379'],
    ['etcd-cafile', pki('etcd/ca.crt')],
    ['etcd-certfile', pki('apiserver-etcd-client.crt')],
    ['etcd-keyfile', pki('apiserver-etcd-client.key')],
    ['client-ca-file', pki('ca.crt')],
    ['tls-cert-file', pki('apiserver.crt')],
    ['tls-private-key-file', pki('apiserver.key')],
    ['kubelet-client-certificate', pki('apiserver-kubelet-client.crt')],
    ['kubelet-client-key', pki('apiserver-kubelet-client.key')],
    ['kubelet-preferred-address-types', 'InternalIP,Hostname,ExternalIP'],
    ['authorization-mode', 'Node,RBAC'],
    ['enable-admission-plugins', 'NodeRestriction'],
    ['enable-bootstrap-token-auth', 'true'],
    ['service-account-issuer', 'https://kubernetes.default.svc.cluster.local'],
    ['service-account-key-file', pki('sa.pub')],
    ['service-account-signing-key-file', pki('sa.key')],
    ['service-cluster-ip-range', '10.96.0.0/12'],
    ['requestheader-client-ca-file', pki('front-proxy-ca.crt')],
    ['requestheader-allowed-names', 'front-proxy-client'],
    ['requestheader-username-headers', 'X-Remote-User'],
    ['requestheader-group-headers', 'X-Remote-Group'],
    ['requestheader-extra-headers-prefix', 'X-Remote-Extra-'],
    ['proxy-client-cert-file', pki('front-proxy-client.crt')],
    ['proxy-client-key-file', pki('front-proxy-client.key')],
    ['allow-privileged', 'true'],
  ];
  for (const [flag, value] of apiserverTable)
    it(`kube-apiserver --${flag}=${value}`, () => assert.equal(flags('kube-apiserver').get(flag), value));

  it('kube-apiserver does not share its port (only the self-hosted one does)', () => {
    assert.equal(flags('kube-apiserver').has('permit-port-sharing'), false);
  });

  const cmTable: [flag: string, value: string][] = [
    ['secure-port', '10357'], ['bind-address', '127.0.0.1'], ['leader-elect', 'true'],
    ['cluster-signing-cert-file', pki('ca.crt')], ['cluster-signing-key-file', pki('ca.key')],
    ['root-ca-file', pki('ca.crt')], ['client-ca-file', pki('ca.crt')], ['requestheader-client-ca-file', pki('front-proxy-ca.crt')],
    ['service-account-private-key-file', pki('sa.key')], ['use-service-account-credentials', 'true'],
    ['allocate-node-cidrs', 'true'], ['cluster-cidr', '10.244.0.0/16'],
    ['service-cluster-ip-range', '10.96.0.0/12'], ['cluster-name', 'kubernetes'],
  ];
  for (const [flag, value] of cmTable)
    it(`kube-controller-manager --${flag}=${value}`, () => assert.equal(flags('kube-controller-manager').get(flag), value));

  it('the bootstrap kube-controller-manager runs kubeadm\'s controller set without the ones idle in its minute (garbage collector, quota, volumes, workloads other than Deployments and DaemonSets)', () => {
    const controllers = flags('kube-controller-manager').get('controllers')!.split(',');
    assert.deepEqual(controllers.slice(0, 3), ['*', 'bootstrapsigner', 'tokencleaner']);
    const off = new Set(controllers.filter((c) => c.startsWith('-')).map((c) => c.slice(1)));
    for (const c of ['garbage-collector-controller', 'resourcequota-controller', ...BOOTSTRAP_IDLE_CONTROLLERS]) assert.ok(off.has(c), c);
    // What the bootstrap's pods need stays on.
    for (const c of ['daemonset-controller', 'deployment-controller', 'replicaset-controller', 'serviceaccount-controller', 'root-ca-certificate-publisher-controller', 'node-ipam-controller', 'node-lifecycle-controller', 'endpointslice-controller', 'certificatesigningrequest-signing-controller', 'bootstrap-signer-controller'])
      assert.ok(!off.has(c), `${c} must run in the bootstrap controller-manager`);
  });

  it('kube-scheduler: --secure-port=10359 on 127.0.0.1, leader election on', () => {
    const f = flags('kube-scheduler');
    assert.deepEqual([f.get('secure-port'), f.get('bind-address'), f.get('leader-elect')], ['10359', '127.0.0.1', 'true']);
  });

  it('the bootstrap controllers hold their leases for 8 s (renew 6 s, retry 500 ms), so the self-hosted ones take over soon after the hand-off', () => {
    for (const c of ['kube-controller-manager', 'kube-scheduler']) {
      const f = flags(c);
      assert.deepEqual(['leader-elect-lease-duration', 'leader-elect-renew-deadline', 'leader-elect-retry-period'].map((n) => f.get(n)), ['8s', '6s', '500ms'], c);
    }
  });

  it('the bootstrap controllers run with raised client limits (200/s, burst 300); extraArgs cannot lower them there', () => {
    const slow = sampleConfig({ controllerManager: { extraArgs: { 'kube-api-qps': '5' } }, scheduler: { extraArgs: { 'kube-api-qps': '5' } } });
    for (const c of ['kube-controller-manager', 'kube-scheduler']) {
      assert.deepEqual([flags(c).get('kube-api-qps'), flags(c).get('kube-api-burst')], ['200', '300'], c);
      assert.equal(flags(c, slow).get('kube-api-qps'), '200', c);
    }
  });

  it('sorts flags by name (kubeadm), so the command is stable', () => {
    for (const { pod } of pods) {
      const names = pod.spec!.containers[0]!.command!.slice(1).map((a) => a.split('=')[0]!);
      assert.deepEqual(names, [...names].sort());
    }
  });

  it('extraArgs override defaults and add flags; the bootstrap apiserver keeps endpoint-reconciler-type=none', () => {
    const cfg = sampleConfig({
      apiServer: { extraSANs: [], extraArgs: { 'enable-admission-plugins': 'NodeRestriction,AlwaysPullImages', 'audit-log-maxage': '7', 'endpoint-reconciler-type': 'lease' } },
      controllerManager: { extraArgs: { 'cluster-name': 'prod', 'bind-address': '0.0.0.0' } },
      scheduler: { extraArgs: { v: '4' } },
    });
    const a = flags('kube-apiserver', cfg);
    assert.deepEqual([a.get('enable-admission-plugins'), a.get('audit-log-maxage'), a.get('endpoint-reconciler-type')], ['NodeRestriction,AlwaysPullImages', '7', 'none']);
    assert.deepEqual([flags('kube-controller-manager', cfg).get('cluster-name'), flags('kube-controller-manager', cfg).get('bind-address')], ['prod', '0.0.0.0']);
    assert.equal(flags('kube-scheduler', cfg).get('v'), '4');
  });

  it('drops --authorization-mode when extraArgs set --authorization-config (they exclude each other)', () => {
    const a = flags('kube-apiserver', sampleConfig({ apiServer: { extraSANs: [], extraArgs: { 'authorization-config': '/etc/kubernetes/authz.yaml' } } }));
    assert.deepEqual([a.has('authorization-mode'), a.get('authorization-config')], [false, '/etc/kubernetes/authz.yaml']);
  });

  const sections = { apiServer: 'apiServer', controllerManager: 'controllerManager', scheduler: 'scheduler' } as const;
  for (const [section, names] of Object.entries(RESERVED_FLAGS))
    for (const name of names)
      it(`rejects ${section}.extraArgs.${name} with ConfigError config-invalid`, () => {
        const key = sections[section as keyof typeof sections];
        const base = sampleConfig();
        const cfg = sampleConfig({ [key]: { ...base[key], extraArgs: { [name]: '1' } } });
        assert.throws(() => bootstrapStaticPods(cfg), (e: unknown) => e instanceof ConfigError && e.code === 'config-invalid' && e.what === `${section}.extraArgs.${name}`);
      });

  it('follows bootstrapAPIEndpoint.bindPort and certificatesDir', () => {
    const cfg = sampleConfig({ bootstrapAPIEndpoint: { bindPort: 7443 }, certificatesDir: '/srv/pki' });
    const a = flags('kube-apiserver', cfg);
    assert.deepEqual([a.get('secure-port'), a.get('client-ca-file'), a.get('etcd-cafile')], ['7443', '/srv/pki/ca.crt', '/srv/pki/etcd/ca.crt']);
  });
});
