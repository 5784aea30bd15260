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
import { COREDNS_VERSIONS, coreDNSImage, coreDNSVersion, etcdPairing, FLANNEL_CNI_PLUGIN_VERSION, FLANNEL_VERSION, KUBERNETES_MINORS, kubernetesMinor, pauseImage, pauseVersion, SUPPORTED_MINORS } from '../../../../manifests/addons/versions.ts';
import { PAUSE_IMAGE, PAUSE_VERSIONS } from '../../../bed/kubelet.ts';

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

test("kubeadm's pairings per minor (constants.go of v1.34.4, v1.35.4, v1.36.3, v1.37.2); unknown minors have none", () => {
  assert.deepEqual(
    Object.entries(KUBERNETES_MINORS).map(([m, v]) => `${m} ${v.support} coredns=${v.coreDNS} pause=${v.pause} etcd=${v.etcd}`),
    [
      '1.34 existing-clusters coredns=v1.12.1 pause=3.10.1 etcd=3.6.5',
      '1.35 supported coredns=v1.13.1 pause=3.10.1 etcd=3.6.6',
      '1.36 supported coredns=v1.14.2 pause=3.10.2 etcd=3.6.8',
      '1.37 supported coredns=v1.14.6 pause=3.10.2 etcd=3.7.0',
    ],
  );
  assert.deepEqual(SUPPORTED_MINORS, ['1.35', '1.36', '1.37']);
  assert.equal(coreDNSVersion('v1.34.4'), 'v1.12.1');
  assert.equal(coreDNSVersion('v1.37.0'), 'v1.14.6');
  assert.equal(pauseVersion('v1.36.3'), '3.10.2');
  assert.equal(pauseImage('registry.k8s.io', 'v1.35.4'), 'registry.k8s.io/pause:3.10.1');
  assert.equal(etcdPairing('v1.37.2'), '3.7.0');
  for (const v of ['v1.33.0', 'v1.38.0', 'latest']) {
    assert.equal(coreDNSVersion(v), undefined, v);
    assert.equal(pauseImage('registry.k8s.io', v), undefined, v);
  }
  assert.deepEqual(Object.keys(COREDNS_VERSIONS).sort(), ['1.34', '1.35', '1.36', '1.37']);
  for (const v of Object.values(KUBERNETES_MINORS)) assert.deepEqual([v.flannel, v.flannelCNIPlugin], [FLANNEL_VERSION, FLANNEL_CNI_PLUGIN_VERSION]);
});

test("the default version's minor is supported; the bed's sandbox image is its pause and every pause of the table is imported", () => {
  assert.equal(KUBERNETES_MINORS[kubernetesMinor(DEFAULT_KUBERNETES_VERSION)!]?.support, 'supported');
  assert.equal(PAUSE_IMAGE, pauseImage('registry.k8s.io', DEFAULT_KUBERNETES_VERSION));
  assert.deepEqual(PAUSE_VERSIONS, ['3.10.1', '3.10.2']);
  assert.equal(scriptDefault('test/bed/images.sh', 'PAUSE_VERSIONS'), PAUSE_VERSIONS.join(' '));
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
