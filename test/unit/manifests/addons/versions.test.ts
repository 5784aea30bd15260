/**
 * The addon version table (manifests/addons/versions.ts): it covers every Kubernetes version
 * kubeception deploys or the bed builds, and the bed builds exactly the pinned versions. That the
 * CoreDNS pin equals kubeadm's own constant needs the bed's Go module cache: it is checked in
 * test/integration/addon-versions.test.ts, where the bed is required (no skip).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { DEFAULT_KUBERNETES_VERSION } from '../../../../lib/constants.ts';
import siteConfig from '../../../../kubeception.config.ts';
import { COREDNS_VERSIONS, coreDNSImage, coreDNSVersion, FLANNEL_CNI_PLUGIN_VERSION, FLANNEL_VERSION, kubernetesMinor } from '../../../../manifests/addons/versions.ts';

const repo = new URL('../../../../', import.meta.url);
const read = (p: string) => readFileSync(new URL(p, repo), 'utf8');
/** `NAME="${NAME:-value}"` defaults of a bed script. */
const scriptDefault = (file: string, name: string) => new RegExp(`${name}="\\$\\{${name}:-([^}]+)\\}"`).exec(read(file))?.[1];

const deployed = {
  'lib/constants.ts DEFAULT_KUBERNETES_VERSION': DEFAULT_KUBERNETES_VERSION,
  'kubeception.config.ts kubernetesVersion': siteConfig.kubernetesVersion ?? DEFAULT_KUBERNETES_VERSION,
  'test/bed/build-k8s.sh K8S_VERSION': scriptDefault('test/bed/build-k8s.sh', 'K8S_VERSION'),
};

for (const [where, version] of Object.entries(deployed))
  test(`a CoreDNS version is pinned for ${where} (${version})`, () => {
    assert.ok(version, `no version found for ${where}`);
    assert.ok(coreDNSVersion(version), `Kubernetes ${kubernetesMinor(version)} moved without manifests/addons/versions.ts: add kubeadm's CoreDNS version for it`);
  });

test("kubeadm's pairings: 1.34 → v1.12.1, 1.35 → v1.13.1; unknown minors have none", () => {
  assert.equal(coreDNSVersion('v1.34.4'), 'v1.12.1');
  assert.equal(coreDNSVersion('v1.35.0'), 'v1.13.1');
  assert.equal(coreDNSVersion('v1.33.0'), undefined);
  assert.equal(coreDNSVersion('latest'), undefined);
  assert.deepEqual(Object.keys(COREDNS_VERSIONS).sort(), ['1.34', '1.35']);
});

test('the bed builds the pinned versions', () => {
  const bedMinor = kubernetesMinor(deployed['test/bed/build-k8s.sh K8S_VERSION']!)!;
  for (const file of ['test/bed/build-addons.sh', 'test/bed/images.sh']) {
    assert.equal(scriptDefault(file, 'COREDNS_VERSION'), COREDNS_VERSIONS[bedMinor], `${file} COREDNS_VERSION`);
    assert.equal(scriptDefault(file, 'FLANNEL_VERSION'), FLANNEL_VERSION, `${file} FLANNEL_VERSION`);
  }
  assert.match(FLANNEL_CNI_PLUGIN_VERSION, /^v\d+\.\d+\.\d+-flannel\d+$/);
});

test("kubeadm's GetDNSImage naming", () => {
  assert.equal(coreDNSImage('registry.k8s.io', 'v1.12.1'), 'registry.k8s.io/coredns/coredns:v1.12.1');
  assert.equal(coreDNSImage('registry.example.com:5000/k8s', 'v1.12.1'), 'registry.example.com:5000/k8s/coredns:v1.12.1');
});
