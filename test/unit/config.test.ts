import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resolveConfig, isDns1123Subdomain, type HostFacts } from '../../lib/config/validate.ts';
import { parseConfig, parseDistro } from '../../lib/config/schema.ts';
import { parseToml } from '../../lib/config/toml.ts';
import { renderEtcdEnvironment } from '../../lib/etcd/config.ts';
import { ConfigError } from '../../lib/errors.ts';
import type { DistroSettings, KubeceptionConfig } from '../../lib/types.ts';
import { readFileSync } from 'node:fs';

const distro: DistroSettings = parseDistro(parseToml(readFileSync(new URL('../../distros/debian/debian.toml', import.meta.url), 'utf8'), 'debian.toml'), 'debian', 'debian.toml');
const facts: HostFacts = { hostname: 'Node-A', addresses: [{ address: '10.250.0.2', cidr: '10.250.0.2/16' }, { address: 'fd00:20::2', cidr: 'fd00:20::2/64' }] };
const resolve = (cfg: KubeceptionConfig, f: HostFacts = facts) => resolveConfig(parseConfig(cfg, 'cfg.ts'), distro, f, 'cfg.ts');

function rejects(cfg: unknown, field: RegExp, why: RegExp, f: HostFacts = facts) {
  assert.throws(() => resolveConfig(parseConfig(cfg, 'cfg.ts'), distro, f, 'cfg.ts'), (e: unknown) => {
    assert.ok(e instanceof ConfigError, `expected ConfigError, got ${e}`);
    assert.match(e.what, field);
    assert.match(e.why, why);
    assert.ok(e.fix.length > 10);
    return true;
  });
}

test('defaults: node name from the host name, lower-cased; first IPv4 advertised', () => {
  const c = resolve({});
  assert.equal(c.nodeName, 'node-a');
  assert.equal(c.localAPIEndpoint.advertiseAddress, '10.250.0.2');
  assert.equal(c.localAPIEndpoint.bindPort, 6443);
  assert.equal(c.bootstrapAPIEndpoint.bindPort, 6444);
  assert.equal(c.certificatesDir, '/etc/kubernetes/pki');
  assert.equal(c.etcd.dataDir, '/var/lib/etcd/default');
});

test('IPv6 advertise address: etcd URLs are bracketed', () => {
  const c = resolve({ localAPIEndpoint: { advertiseAddress: 'fd00:20:0::2' }, networking: { serviceSubnet: 'fd00:96::/108', podSubnet: 'fd00:244::/48' } });
  assert.equal(c.localAPIEndpoint.advertiseAddress, 'fd00:20::2');
  const env = renderEtcdEnvironment(c);
  assert.match(env, /ETCD_ADVERTISE_CLIENT_URLS="https:\/\/\[fd00:20::2\]:2379"/);
  assert.match(env, /ETCD_INITIAL_CLUSTER="node-a=https:\/\/\[fd00:20::2\]:2380"/);
  assert.match(env, /ETCD_LISTEN_CLIENT_URLS="https:\/\/127.0.0.1:2379,https:\/\/\[fd00:20::2\]:2379"/);
});

test('the CNI bridge inside the pod subnet is the cluster itself, not a conflict', () => {
  const withBridge = { ...facts, addresses: [...facts.addresses, { address: '10.244.10.1', cidr: '10.244.10.1/24', iface: 'cni0' }] };
  assert.equal(resolve({}, withBridge).networking.podSubnet, '10.244.0.0/16');
  const physical = { ...facts, addresses: [...facts.addresses, { address: '10.244.10.1', cidr: '10.244.10.1/24', iface: 'eth1' }] };
  rejects({}, /networking\.podSubnet/, /host network 10\.244\.10\.1\/24/, physical);
});

test('DNS-1123 subdomain rule', () => {
  for (const ok of ['a', 'node-a', 'n1.example.com', 'x'.repeat(63)]) assert.ok(isDns1123Subdomain(ok), ok);
  for (const bad of ['', 'node_a', '-a', 'a-', 'A', 'a..b', 'x'.repeat(64), `${'a.'.repeat(127)}ab`]) assert.ok(!isDns1123Subdomain(bad), bad);
});

const bad: [string, unknown, RegExp, RegExp, HostFacts?][] = [
  ['nodeName with underscore', { nodeName: 'node_a' }, /nodeName/, /DNS-1123/],
  ['host name not DNS-1123', {}, /nodeName \(from the host name\)/, /DNS-1123/, { ...facts, hostname: 'bad_host' }],
  ['overlapping pod and service subnets', { networking: { podSubnet: '10.0.0.0/8', serviceSubnet: '10.96.0.0/12' } }, /podSubnet.*serviceSubnet/, /10\.0\.0\.0\/8.*10\.96\.0\.0\/12/],
  ['pod subnet overlapping the host network', { networking: { podSubnet: '10.250.128.0/17' } }, /networking\.podSubnet/, /host network 10\.250\.0\.2\/16/],
  ['service subnet with host bits', { networking: { serviceSubnet: '10.96.0.1/12' } }, /serviceSubnet/, /host bits/],
  ['pod subnet not a CIDR', { networking: { podSubnet: '10.244.0.0' } }, /podSubnet/, /CIDR/],
  ['advertise address not an IP', { localAPIEndpoint: { advertiseAddress: 'master.local' } }, /advertiseAddress/, /not an IP/],
  ['advertise address not on this host', { localAPIEndpoint: { advertiseAddress: '192.0.2.7' } }, /advertiseAddress/, /not assigned/],
  ['bindPort out of range', { localAPIEndpoint: { bindPort: 70000 } }, /localAPIEndpoint\.bindPort/, /not a TCP port/],
  ['bootstrap and final ports equal', { localAPIEndpoint: { bindPort: 6443 }, bootstrapAPIEndpoint: { bindPort: 6443 } }, /bootstrapAPIEndpoint\.bindPort/, /coexist/],
  ['bindPort wrong type', { localAPIEndpoint: { bindPort: '6443' } }, /localAPIEndpoint\.bindPort/, /number/],
  ['unknown key (typo)', { networking: { podSubnett: '10.244.0.0/16' } }, /networking/, /podSubnett/],
  ['extraSANs not a list', { apiServer: { extraSANs: 'api.example.com' } }, /apiServer\.extraSANs/, /array/],
  ['extraSAN not a name', { apiServer: { extraSANs: ['bad name!'] } }, /apiServer\.extraSANs\[0\]/, /neither an IP/],
  ['unknown algorithm', { encryptionAlgorithm: 'DSA' }, /encryptionAlgorithm/, /ECDSA-P384/],
  ['bad kubernetesVersion', { kubernetesVersion: '1.34' }, /kubernetesVersion/, /v1\.37\.2/],
  ['kubernetesVersion of an unsupported (too old) minor', { kubernetesVersion: 'v1.33.6' }, /kubernetesVersion/, /Kubernetes 1\.33 is not supported: kubeception supports 1\.35, 1\.36, 1\.37 \(and 1\.34 for existing clusters only\)/],
  ['kubernetesVersion of an unsupported (too new) minor', { kubernetesVersion: 'v1.38.0' }, /kubernetesVersion/, /Kubernetes 1\.38 is not supported/],
  ['relative certificatesDir', { certificatesDir: 'pki' }, /certificatesDir/, /absolute/],
  ['bad dnsDomain', { networking: { dnsDomain: 'Cluster_Local' } }, /dnsDomain/, /DNS-1123/],
  ['IPv6 advertise address with the IPv4 default service subnet', { localAPIEndpoint: { advertiseAddress: 'fd00:20::2' } }, /networking\.serviceSubnet/, /IPv4 but the advertise address fd00:20::2 is IPv6/],
  ['IPv6 pod subnet smaller than /48', { localAPIEndpoint: { advertiseAddress: 'fd00:20::2' }, networking: { serviceSubnet: 'fd00:96::/108', podSubnet: 'fd00:244::/64' } }, /networking\.podSubnet/, /\/64/],
  ['reserved extraArgs flag', { controllerManager: { extraArgs: { 'leader-elect': 'false' } } }, /controllerManager\.extraArgs\.leader-elect/, /sets --leader-elect itself/],
  ['bindPort taken by etcd', { localAPIEndpoint: { bindPort: 2379 } }, /localAPIEndpoint\.bindPort/, /used by etcd/],
  ['bootstrap port taken by the kubelet', { bootstrapAPIEndpoint: { bindPort: 10250 } }, /bootstrapAPIEndpoint\.bindPort/, /the kubelet/],
  ['bindPort in the NodePort range', { localAPIEndpoint: { bindPort: 30000 } }, /localAPIEndpoint\.bindPort/, /NodePort range/],
  ['certificatesDir is /', { certificatesDir: '/' }, /certificatesDir/, /system directory/],
  ['etcd data dir is /etc', { etcd: { dataDir: '/etc' } }, /etcd\.dataDir/, /system directory/],
  ['extraConfig overrides an owned field', { kubelet: { extraConfig: { staticPodPath: 5 } } }, /kubelet\.extraConfig\.staticPodPath/, /sets staticPodPath itself/],
  ['extraArgs flag with dashes', { apiServer: { extraArgs: { '--v': '5' } } }, /apiServer\.extraArgs\["--v"\]/, /not a flag name/],
  ['imageRepository with a space', { imageRepository: 'Bad Repo' }, /imageRepository/, /not an image repository/],
  ['empty join service image', { joinService: { image: '' } }, /joinService\.image/, /tag or digest/],
  ['controlPlaneEndpoint with a scheme', { controlPlaneEndpoint: 'https://cp.example.com:6443' }, /controlPlaneEndpoint/, /host\[:port\]/],
  ['no address to advertise', {}, /advertiseAddress/, /no non-loopback/, { hostname: 'h', addresses: [] }],
];

for (const [name, cfg, field, why, f] of bad) test(`bad input: ${name}`, () => rejects(cfg, field, why, f));

test('distro settings: bad TOML names line and column; missing key names the key', () => {
  assert.throws(() => parseToml('a = \n', 'x.toml'), (e: any) => e.code === 'config-toml' && /x\.toml:\d+:\d+/.test(e.what));
  assert.throws(() => parseDistro({ etcdUser: 'etcd' }, 'x', 'x.toml'), (e: any) => e.code === 'config-invalid' && /x\.toml: (paths|units|binaries|criSocket)/.test(e.what));
});

test('advertise address: the default route\'s interface wins over interface order, and the choice is announced', () => {
  const two: HostFacts = {
    hostname: 'h',
    addresses: [{ address: '172.17.0.1', cidr: '172.17.0.1/16', iface: 'docker0' }, { address: '10.250.0.2', cidr: '10.250.0.2/16', iface: 'eth0' }],
    defaultRouteIfaces: ['eth0'],
  };
  const c = resolve({}, two);
  assert.equal(c.localAPIEndpoint.advertiseAddress, '10.250.0.2');
  assert.match(c.notices?.[0] ?? '', /10\.250\.0\.2 \(eth0, the default route's interface\) chosen among 172\.17\.0\.1 \(docker0\), 10\.250\.0\.2 \(eth0\); set localAPIEndpoint\.advertiseAddress/);
  const noRoute = resolve({}, { ...two, defaultRouteIfaces: [] });
  assert.equal(noRoute.localAPIEndpoint.advertiseAddress, '172.17.0.1');
  assert.match(noRoute.notices?.[0] ?? '', /no default route/);
  assert.equal(resolve({ localAPIEndpoint: { advertiseAddress: '10.250.0.2' } }, two).notices, undefined, 'an explicit address needs no notice');
});

test('kubernetesVersion: the supported minors resolve without a notice; 1.34 (existing clusters only) resolves with one', () => {
  const pinned = { localAPIEndpoint: { advertiseAddress: '10.250.0.2' } };
  for (const v of ['v1.35.4', 'v1.36.3', 'v1.37.2']) assert.equal(resolve({ ...pinned, kubernetesVersion: v }).notices, undefined, v);
  const old = resolve({ ...pinned, kubernetesVersion: 'v1.34.4' });
  assert.equal(old.kubernetesVersion, 'v1.34.4');
  assert.match(old.notices?.[0] ?? '', /Kubernetes 1\.34 is past upstream end of life: kubeception serves existing 1\.34 clusters only \(upgrade them with `kubeception upgrade apply` to 1\.35\); supported: 1\.35, 1\.36, 1\.37/);
  assert.equal(resolve({}).kubernetesVersion, 'v1.37.2');
});
