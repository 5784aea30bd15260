/** Table tests on the certificate table itself (lib/pki/certs.ts) and the SAN helpers. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  apiServerAltNames, CERT_TABLE, certSpecs, etcdAltNames, KUBECONFIG_CLIENT_TABLE, kubeconfigClientSpecs, saKeyPairSpec,
  type FileLeafSpec, type LeafSpec,
} from '../../../lib/pki/certs.ts';
import { PkiError } from '../../../lib/pki/errors.ts';
import { classifySANs, endpointHost } from '../../../lib/pki/san.ts';
import { sampleConfig } from './fixtures.ts';

/** kubeadm's GetDefaultCertList order, named by BaseName (the STYLE's cert names). */
const KUBEADM_ORDER = [
  'ca', 'apiserver', 'apiserver-kubelet-client', 'front-proxy-ca', 'front-proxy-client',
  'etcd/ca', 'etcd/server', 'etcd/peer', 'etcd/healthcheck-client', 'apiserver-etcd-client',
];

describe('CERT_TABLE', () => {
  it("lists kubeadm's certificates in kubeadm's order", () => {
    assert.deepEqual(CERT_TABLE.map((c) => c.name), KUBEADM_ORDER);
  });

  it('puts every CA before the leaves it signs, and every leaf names a CA of the table', () => {
    for (const [i, row] of CERT_TABLE.entries()) {
      if (row.kind !== 'leaf') continue;
      const caIndex = CERT_TABLE.findIndex((c) => c.kind === 'ca' && c.name === row.caName);
      assert.ok(caIndex >= 0, `${row.name}: CA ${row.caName} is not in the table`);
      assert.ok(caIndex < i, `${row.name}: CA ${row.caName} comes after it`);
    }
    for (const row of KUBECONFIG_CLIENT_TABLE) assert.ok(CERT_TABLE.some((c) => c.kind === 'ca' && c.name === row.caName), row.name);
  });

  it('gives CAs 10 years and leaves 1 year (kubeadm)', () => {
    for (const row of [...CERT_TABLE, ...KUBECONFIG_CLIENT_TABLE]) assert.equal(row.validityDays, row.kind === 'ca' ? 3650 : 365, row.name);
  });

  const config = sampleConfig();
  const byName = new Map(certSpecs(config).map((s) => [s.name, s]));
  const leafOf = (name: string) => byName.get(name) as LeafSpec;

  const subjects: [name: string, ca: string, cn: string, o: string[], usages: string[]][] = [
    ['apiserver', 'ca', 'kube-apiserver', [], ['serverAuth']],
    ['apiserver-kubelet-client', 'ca', 'kube-apiserver-kubelet-client', ['kubeadm:cluster-admins'], ['clientAuth']],
    ['front-proxy-client', 'front-proxy-ca', 'front-proxy-client', [], ['clientAuth']],
    ['etcd/server', 'etcd/ca', 'cp-1', [], ['serverAuth', 'clientAuth']],
    ['etcd/peer', 'etcd/ca', 'cp-1', [], ['serverAuth', 'clientAuth']],
    ['etcd/healthcheck-client', 'etcd/ca', 'kube-etcd-healthcheck-client', [], ['clientAuth']],
    ['apiserver-etcd-client', 'etcd/ca', 'kube-apiserver-etcd-client', [], ['clientAuth']],
  ];
  for (const [name, ca, cn, o, usages] of subjects) {
    it(`${name}: signed by ${ca}, CN ${cn}, O [${o}], ${usages}`, () => {
      const s = leafOf(name);
      assert.deepEqual([s.caName, s.commonName, s.organizations, s.usages], [ca, cn, o, usages]);
    });
  }

  it('gives the CAs kubeadm\'s CNs', () => {
    assert.deepEqual(['ca', 'front-proxy-ca', 'etcd/ca'].map((n) => byName.get(n)?.commonName), ['kubernetes', 'front-proxy-ca', 'etcd-ca']);
  });

  it('places files under certificatesDir as kubeadm does', () => {
    const s = certSpecs(sampleConfig({ certificatesDir: '/srv/pki' }));
    const paths = Object.fromEntries(s.map((x) => [x.name, [x.certPath, x.keyPath]]));
    assert.deepEqual(paths.ca, ['/srv/pki/ca.crt', '/srv/pki/ca.key']);
    assert.deepEqual(paths['etcd/ca'], ['/srv/pki/etcd/ca.crt', '/srv/pki/etcd/ca.key']);
    assert.deepEqual(paths['apiserver-etcd-client'], ['/srv/pki/apiserver-etcd-client.crt', '/srv/pki/apiserver-etcd-client.key']);
    assert.deepEqual(saKeyPairSpec(sampleConfig({ certificatesDir: '/srv/pki' })), { kind: 'keypair', name: 'sa', keyPath: '/srv/pki/sa.key', publicKeyPath: '/srv/pki/sa.pub' });
  });

  it('gives etcd/server and etcd/peer the node name, localhost and loopbacks', () => {
    assert.deepEqual(etcdAltNames(config), { dnsNames: ['cp-1', 'localhost'], ipAddresses: ['10.250.0.2', '127.0.0.1', '::1'] });
    assert.deepEqual(leafOf('etcd/peer').altNames, etcdAltNames(config));
  });
});

describe('apiServerAltNames', () => {
  const svcNames = ['kubernetes', 'kubernetes.default', 'kubernetes.default.svc'];

  it('IPv4 defaults: node name, Service names, first service IP, advertise address, loopback', () => {
    assert.deepEqual(apiServerAltNames(sampleConfig()), {
      dnsNames: ['cp-1', ...svcNames, 'kubernetes.default.svc.cluster.local', 'localhost'],
      ipAddresses: ['10.96.0.1', '10.250.0.2', '127.0.0.1'],
    });
  });

  it('IPv6: advertise fd00:20::2, serviceSubnet fd00:96::/108, custom dnsDomain, endpoint and extra SANs', () => {
    const config = sampleConfig({
      localAPIEndpoint: { advertiseAddress: 'fd00:20:0::2', bindPort: 6443 },
      networking: { podSubnet: 'fd00:244::/56', serviceSubnet: 'fd00:96::/108', dnsDomain: 'k8s.example' },
      controlPlaneEndpoint: '[fd00:20::100]:6443',
      apiServer: { extraSANs: ['API.example.com', '*.apps.example.com', 'fd00:20:0:0::7', '192.0.2.10', 'cp-1'], extraArgs: {} },
    });
    assert.deepEqual(apiServerAltNames(config), {
      dnsNames: ['cp-1', ...svcNames, 'kubernetes.default.svc.k8s.example', 'localhost', 'api.example.com', '*.apps.example.com'],
      ipAddresses: ['fd00:96::1', 'fd00:20::2', '127.0.0.1', 'fd00:20::100', 'fd00:20::7', '192.0.2.10'],
    });
  });

  it('adds a DNS controlPlaneEndpoint host without its port', () => {
    const names = apiServerAltNames(sampleConfig({ controlPlaneEndpoint: 'k8s.example.com:6443' }));
    assert.ok(names.dnsNames.includes('k8s.example.com'));
    assert.ok(!names.dnsNames.some((d) => d.includes(':')));
  });

  it('refuses an extra SAN that is neither IP nor DNS name, naming the field', () => {
    const config = sampleConfig({ apiServer: { extraSANs: ['not a name!'], extraArgs: {} } });
    assert.throws(() => apiServerAltNames(config), (e: unknown) =>
      e instanceof PkiError && e.code === 'pki-invalid-san' && e.badInput && e.what.includes('apiServer.extraSANs'));
  });
});

describe('SAN helpers', () => {
  const hosts: [string, string][] = [
    ['api.example.com', 'api.example.com'], ['api.example.com:6443', 'api.example.com'], ['10.0.0.5', '10.0.0.5'],
    ['10.0.0.5:443', '10.0.0.5'], ['fd00::10', 'fd00::10'], ['[fd00::10]:6443', 'fd00::10'], ['[fd00::10]', 'fd00::10'],
  ];
  for (const [endpoint, host] of hosts) it(`endpointHost(${endpoint}) = ${host}`, () => assert.equal(endpointHost(endpoint), host));

  it('classifies, normalises and de-duplicates', () => {
    assert.deepEqual(classifySANs(['A.b', 'a.b', 'FD00:0::1', 'fd00::1', '10.0.0.1'], 'f'), { dnsNames: ['a.b'], ipAddresses: ['fd00::1', '10.0.0.1'] });
  });
});

describe('KUBECONFIG_CLIENT_TABLE', () => {
  it('admin, controller-manager, scheduler and kubelet identities, all signed by ca, client-only', () => {
    const s = kubeconfigClientSpecs(sampleConfig({ nodeName: 'node-a' }));
    assert.deepEqual(s.map((x) => [x.name, x.caName, x.commonName, x.organizations, x.usages, x.certPath]), [
      ['admin', 'ca', 'kubernetes-admin', ['system:masters'], ['clientAuth'], undefined],
      ['controller-manager', 'ca', 'system:kube-controller-manager', [], ['clientAuth'], undefined],
      ['scheduler', 'ca', 'system:kube-scheduler', [], ['clientAuth'], undefined],
      ['kubelet', 'ca', 'system:node:node-a', ['system:nodes'], ['clientAuth'], undefined],
    ]);
  });
});
