/**
 * The one versions table, like kubeadm's constants: per Kubernetes minor, the CoreDNS version, the
 * pause (sandbox) image and the etcd version kubeadm of that release pairs with it, flannel and its CNI
 * plugin as flannel's own `kube-flannel.yml` of that release pairs them (flannel is not tied to a
 * Kubernetes minor: every row names the same release), and whether kubeception bootstraps that minor.
 * kube-proxy is the Kubernetes version itself. The test bed builds the same versions
 * (test/bed/build-addons.sh, images.sh, build-etcd.sh); test/unit/manifests/addons/versions.test.ts
 * fails when the Kubernetes version moves without this table, when the bed drifts from it, or (when
 * the release's module is in the bed's Go module cache) when a pin differs from kubeadm's constant.
 * @see kubernetes/cmd/kubeadm/app/constants/constants.go (CoreDNSVersion, PauseVersion, DefaultEtcdVersion)
 * @see flannel-io/flannel Documentation/kube-flannel.yml
 * @see https://kubernetes.io/releases/ (support periods)
 */

/** What kubeception does with a Kubernetes minor. */
export type MinorSupport =
  /** Bootstrapped, joined and upgraded to: an upstream-supported minor. */
  | 'supported'
  /**
   * Past upstream end of life: only an existing cluster at this minor is served (re-run, join, reset,
   * and `upgrade apply` to the next minor); a new cluster is refused by bootstrap's preflight
   * `KubernetesVersionSupport`.
   */
  | 'existing-clusters';

/** The versions paired with one Kubernetes minor. */
export interface MinorVersions {
  support: MinorSupport;
  /** kubeadm's `CoreDNSVersion`, e.g. `v1.14.6`. */
  coreDNS: string;
  /** kubeadm's `PauseVersion` (the tag of `registry.k8s.io/pause`), e.g. `3.10.2`. */
  pause: string;
  /** kubeadm's `DefaultEtcdVersion` without its `-0` image suffix, e.g. `3.7.0`. */
  etcd: string;
  /** flannel (flanneld, `ghcr.io/flannel-io/flannel`). */
  flannel: string;
  /** The flannel CNI plugin image that flannel release's kube-flannel.yml pairs with it. */
  flannelCNIPlugin: string;
}

const FLANNEL = { flannel: 'v0.28.4', flannelCNIPlugin: 'v1.9.1-flannel1' } as const;

/** Kubernetes minor (`1.37`) → its pairings. Every minor kubeception knows; any other is refused. */
export const KUBERNETES_MINORS: Readonly<Record<string, Readonly<MinorVersions>>> = Object.freeze({
  '1.34': { support: 'existing-clusters', coreDNS: 'v1.12.1', pause: '3.10.1', etcd: '3.6.5', ...FLANNEL },
  '1.35': { support: 'supported', coreDNS: 'v1.13.1', pause: '3.10.1', etcd: '3.6.6', ...FLANNEL },
  '1.36': { support: 'supported', coreDNS: 'v1.14.2', pause: '3.10.2', etcd: '3.6.8', ...FLANNEL },
  '1.37': { support: 'supported', coreDNS: 'v1.14.6', pause: '3.10.2', etcd: '3.7.0', ...FLANNEL },
});

/** The minors a new cluster may be bootstrapped at, oldest first (`['1.35', '1.36', '1.37']`). */
export const SUPPORTED_MINORS: readonly string[] = Object.keys(KUBERNETES_MINORS).filter((m) => KUBERNETES_MINORS[m]!.support === 'supported');

/** Kubernetes minor → the CoreDNS version kubeadm of that minor installs (a view of {@link KUBERNETES_MINORS}). */
export const COREDNS_VERSIONS: Readonly<Record<string, string>> = Object.freeze(
  Object.fromEntries(Object.entries(KUBERNETES_MINORS).map(([m, v]) => [m, v.coreDNS])),
);

/** flannel (flanneld, `ghcr.io/flannel-io/flannel`): the same release for every minor of the table. */
export const FLANNEL_VERSION = FLANNEL.flannel;
/** The flannel CNI plugin image flannel v0.28.4's kube-flannel.yml pairs with it. */
export const FLANNEL_CNI_PLUGIN_VERSION = FLANNEL.flannelCNIPlugin;

/** Default images of flannel (no `imageRepository` applies: flannel is not a Kubernetes image). */
export const FLANNEL_IMAGE = `ghcr.io/flannel-io/flannel:${FLANNEL_VERSION}`;
export const FLANNEL_CNI_PLUGIN_IMAGE = `ghcr.io/flannel-io/flannel-cni-plugin:${FLANNEL_CNI_PLUGIN_VERSION}`;

/** `v1.34.4` → `1.34`; undefined if not a `vMAJOR.MINOR.PATCH` version. */
export function kubernetesMinor(kubernetesVersion: string): string | undefined {
  return /^v(\d+\.\d+)\.\d+/.exec(kubernetesVersion)?.[1];
}

/** The table's row for `kubernetesVersion` (`v1.37.2` → the `1.37` row), or undefined for a minor it does not know. */
export function minorVersions(kubernetesVersion: string): Readonly<MinorVersions> | undefined {
  const minor = kubernetesMinor(kubernetesVersion);
  return minor === undefined ? undefined : KUBERNETES_MINORS[minor];
}

/** kubeadm's CoreDNS version for `kubernetesVersion` (`v1.34.4` → `v1.12.1`), or undefined if not in the table. */
export function coreDNSVersion(kubernetesVersion: string): string | undefined {
  return minorVersions(kubernetesVersion)?.coreDNS;
}

/** kubeadm's pause image tag for `kubernetesVersion` (`v1.36.3` → `3.10.2`), or undefined if not in the table. */
export function pauseVersion(kubernetesVersion: string): string | undefined {
  return minorVersions(kubernetesVersion)?.pause;
}

/**
 * The sandbox (pause) image of `kubernetesVersion`, as kubeadm's `GetPauseImage` names it:
 * `<imageRepository>/pause:<PauseVersion>`; undefined for a minor the table does not know.
 * @see kubernetes/cmd/kubeadm/app/images/images.go (GetPauseImage)
 */
export function pauseImage(imageRepository: string, kubernetesVersion: string): string | undefined {
  const tag = pauseVersion(kubernetesVersion);
  return tag === undefined ? undefined : `${imageRepository}/pause:${tag}`;
}

/** kubeadm's etcd version for `kubernetesVersion` (`v1.37.2` → `3.7.0`), or undefined if not in the table. */
export function etcdPairing(kubernetesVersion: string): string | undefined {
  return minorVersions(kubernetesVersion)?.etcd;
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
