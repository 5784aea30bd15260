/** The addon fields of the config (lib/config/addons.ts) through resolveConfig: defaults and bad input. */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { parseConfig, parseDistro } from '../../../lib/config/schema.ts';
import { parseToml } from '../../../lib/config/toml.ts';
import { resolveConfig, type HostFacts } from '../../../lib/config/validate.ts';
import { ConfigError } from '../../../lib/errors.ts';

const distro = parseDistro(parseToml(readFileSync(new URL('../../../distros/debian/debian.toml', import.meta.url), 'utf8'), 'debian.toml'), 'debian', 'debian.toml');
const facts: HostFacts = { hostname: 'node-a', addresses: [{ address: '10.250.0.2', cidr: '10.250.0.2/16' }] };
const resolve = (cfg: unknown) => resolveConfig(parseConfig(cfg, 'cfg.ts'), distro, facts, 'cfg.ts');

test('defaults: flannel vxlan with the pinned images, CoreDNS of kubeadm 1.37, kube-proxy on', () => {
  const c = resolve({});
  assert.deepEqual(c.podNetwork, { plugin: 'flannel', flannel: { backend: 'vxlan', image: 'ghcr.io/flannel-io/flannel:v0.28.4', cniPluginImage: 'ghcr.io/flannel-io/flannel-cni-plugin:v1.9.1-flannel1' } });
  assert.deepEqual(c.dns, { disabled: false, image: 'registry.k8s.io/coredns/coredns:v1.14.6' });
  assert.equal(resolve({ kubernetesVersion: 'v1.36.3' }).dns.image, 'registry.k8s.io/coredns/coredns:v1.14.2');
  assert.equal(resolve({ kubernetesVersion: 'v1.34.4' }).dns.image, 'registry.k8s.io/coredns/coredns:v1.12.1');
  assert.deepEqual(c.proxy, { disabled: false });
});

test('overrides: plugin none, host-gw, images; dns image from dns.imageRepository/imageTag (kubeadm naming)', () => {
  const c = resolve({ networking: { plugin: 'none', flannel: { backend: 'host-gw', cniPluginImage: 'localhost/flannel-cni-plugin:v0.9.1' } }, dns: { imageRepository: 'registry.example.com/k8s', imageTag: 'v1.12.2' }, proxy: { disabled: true } });
  assert.equal(c.podNetwork.plugin, 'none');
  assert.equal(c.podNetwork.flannel.backend, 'host-gw');
  assert.equal(c.podNetwork.flannel.cniPluginImage, 'localhost/flannel-cni-plugin:v0.9.1');
  assert.equal(c.dns.image, 'registry.example.com/k8s/coredns:v1.12.2');
  assert.equal(resolve({ imageRepository: 'registry.example.com/k8s' }).dns.image, 'registry.example.com/k8s/coredns:v1.14.6');
  assert.equal(c.proxy.disabled, true);
  assert.equal(resolve({ kubernetesVersion: 'v1.36.0', dns: { imageTag: 'v1.14.3' } }).dns.image, 'registry.k8s.io/coredns/coredns:v1.14.3');
  assert.equal(resolve({ kubernetesVersion: 'v1.36.0', dns: { disabled: true } }).dns.disabled, true);
});

const bad: [string, unknown, RegExp, RegExp][] = [
  ['serviceSubnet without a 10th address', { networking: { serviceSubnet: '10.96.0.0/29' } }, /networking\.serviceSubnet/, /kube-dns.*10th address/],
  ['podSubnet smaller than a node /24', { networking: { podSubnet: '10.244.0.0/25' } }, /networking\.podSubnet/, /\/24/],
  ['podSubnet too large for the node CIDR allocator', { networking: { podSubnet: '128.0.0.0/7', serviceSubnet: '10.96.0.0/12' } }, /networking\.podSubnet/, /between \/8 and \/24/],
  ['Kubernetes minor not in the versions table, even with dns.imageTag', { kubernetesVersion: 'v1.38.0', dns: { imageTag: 'v1.14.6' } }, /kubernetesVersion/, /Kubernetes 1\.38 is not supported/],
  ['unknown plugin', { networking: { plugin: 'calico' } }, /networking\.plugin/, /flannel|none/],
  ['unknown backend', { networking: { flannel: { backend: 'udp' } } }, /networking\.flannel\.backend/, /vxlan|host-gw/],
  ['flannel image without a tag', { networking: { flannel: { image: 'ghcr.io/flannel-io/flannel' } } }, /networking\.flannel\.image/, /tag or digest/],
  ['bad dns.imageTag', { dns: { imageTag: 'v 1' } }, /dns\.imageTag/, /not an image tag/],
];

for (const [name, cfg, field, why] of bad)
  test(`bad input: ${name}`, () => {
    assert.throws(() => resolve(cfg), (e: unknown) => {
      assert.ok(e instanceof ConfigError, String(e));
      assert.match(e.what, field);
      assert.match(e.why, why);
      return true;
    });
  });
