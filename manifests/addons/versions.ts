/**
 * Pinned addon versions, in one table like kubeadm's constants: CoreDNS per Kubernetes minor (kubeadm's
 * pairing, `CoreDNSVersion` in cmd/kubeadm/app/constants/constants.go of that release), flannel and its
 * CNI plugin as flannel's own `kube-flannel.yml` of that release pairs them. The test bed builds the same
 * versions (test/bed/build-addons.sh); test/unit/manifests/addons/versions.test.ts fails when the
 * Kubernetes version moves without this table, or the bed drifts from it.
 * @see kubernetes/cmd/kubeadm/app/constants/constants.go (CoreDNSVersion)
 * @see flannel-io/flannel Documentation/kube-flannel.yml
 */

/** Kubernetes minor (`1.34`) → the CoreDNS version kubeadm of that minor installs. */
export const COREDNS_VERSIONS: Readonly<Record<string, string>> = Object.freeze({
  '1.34': 'v1.12.1',
  '1.35': 'v1.13.1',
});

/** flannel (flanneld, `ghcr.io/flannel-io/flannel`). */
export const FLANNEL_VERSION = 'v0.28.4';
/** The flannel CNI plugin image flannel v0.28.4's kube-flannel.yml pairs with it. */
export const FLANNEL_CNI_PLUGIN_VERSION = 'v1.9.1-flannel1';

/** Default images of flannel (no `imageRepository` applies: flannel is not a Kubernetes image). */
export const FLANNEL_IMAGE = `ghcr.io/flannel-io/flannel:${FLANNEL_VERSION}`;
export const FLANNEL_CNI_PLUGIN_IMAGE = `ghcr.io/flannel-io/flannel-cni-plugin:${FLANNEL_CNI_PLUGIN_VERSION}`;

/** `v1.34.4` → `1.34`; undefined if not a `vMAJOR.MINOR.PATCH` version. */
export function kubernetesMinor(kubernetesVersion: string): string | undefined {
  return /^v(\d+\.\d+)\.\d+/.exec(kubernetesVersion)?.[1];
}

/** kubeadm's CoreDNS version for `kubernetesVersion` (`v1.34.4` → `v1.12.1`), or undefined if not in the table. */
export function coreDNSVersion(kubernetesVersion: string): string | undefined {
  const minor = kubernetesMinor(kubernetesVersion);
  return minor === undefined ? undefined : COREDNS_VERSIONS[minor];
}

/**
 * The CoreDNS image, as kubeadm's `GetDNSImage` names it: `<repository>/coredns:<tag>`, where the
 * default repository `registry.k8s.io` becomes `registry.k8s.io/coredns` (the official image's path).
 * @param repository `dns.imageRepository`, else `imageRepository`.
 * @see kubernetes/cmd/kubeadm/app/images/images.go (GetDNSImage)
 */
export function coreDNSImage(repository: string, tag: string): string {
  return `${repository === 'registry.k8s.io' ? 'registry.k8s.io/coredns' : repository}/coredns:${tag}`;
}
