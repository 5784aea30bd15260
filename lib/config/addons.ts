/**
 * Resolves and checks the addon fields of the config: `networking.plugin` and `networking.flannel`,
 * `dns` (CoreDNS) and `proxy` (kube-proxy), plus the address rules the addons depend on (the `kube-dns`
 * Service's address inside `serviceSubnet`, per-node pod CIDRs inside `podSubnet`). Pure.
 */
import { ConfigError } from '../errors.ts';
import { clusterDNSIP, parseCidr } from '../net/cidr.ts';
import { COREDNS_VERSIONS, coreDNSImage, coreDNSVersion, FLANNEL_CNI_PLUGIN_IMAGE, FLANNEL_IMAGE, kubernetesMinor } from '../../manifests/addons/versions.ts';
import type { KubeceptionConfig, ResolvedConfig } from '../types.ts';

/** What the addon rules read from the already-resolved part of the config. */
export interface AddonInputs {
  kubernetesVersion: string;
  imageRepository: string;
  podSubnet: string;
  serviceSubnet: string;
}

/** Node CIDR mask the controller-manager uses by default (`--node-cidr-mask-size-ipv4`); at most 16 bits above the pod subnet's. */
const NODE_MASK_V4 = 24;
const IMAGE_WITH_TAG = /^[a-z0-9][^\s]*(:[\w.-]+|@sha256:[0-9a-f]{64})$/;
const REPOSITORY = /^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(\/[a-z0-9]+([._-][a-z0-9]+)*)*$/;
const TAG = /^[\w][\w.-]{0,127}$/;

function bad(field: string, file: string, why: string, fix: string): never {
  throw new ConfigError('config-invalid', { what: `${file}: ${field}`, why, fix });
}

function checkSubnets(a: AddonInputs, file: string): void {
  try {
    clusterDNSIP(a.serviceSubnet);
  } catch {
    bad('networking.serviceSubnet', file, `${a.serviceSubnet} is too small: the kube-dns Service (and the kubelets' clusterDNS) takes its 10th address`, 'use a serviceSubnet with at least 16 addresses (IPv4 /28 or larger), e.g. 10.96.0.0/12');
  }
  const pod = parseCidr(a.podSubnet);
  if (typeof pod !== 'string' && pod.family === 'ipv4' && (pod.prefix > NODE_MASK_V4 || pod.prefix < NODE_MASK_V4 - 16))
    bad('networking.podSubnet', file, `${a.podSubnet}: kube-controller-manager gives each node a /${NODE_MASK_V4} of it, so its prefix must be between /${NODE_MASK_V4 - 16} and /${NODE_MASK_V4}`, 'use e.g. podSubnet 10.244.0.0/16');
}

function image(field: string, value: string | undefined, fallback: string, file: string): string {
  if (value === undefined) return fallback;
  if (!IMAGE_WITH_TAG.test(value)) bad(field, file, `"${value}" is not an image reference with a tag or digest`, `use e.g. ${fallback}`);
  return value;
}

function resolveDns(cfg: KubeceptionConfig, a: AddonInputs, file: string): ResolvedConfig['dns'] {
  const disabled = cfg.dns?.disabled ?? false;
  const repository = cfg.dns?.imageRepository ?? a.imageRepository;
  if (cfg.dns?.imageRepository !== undefined && !REPOSITORY.test(repository)) bad('dns.imageRepository', file, `"${repository}" is not an image repository`, 'use e.g. registry.example.com:5000/k8s');
  if (cfg.dns?.imageTag !== undefined && !TAG.test(cfg.dns.imageTag)) bad('dns.imageTag', file, `"${cfg.dns.imageTag}" is not an image tag`, 'use e.g. v1.12.1');
  const tag = cfg.dns?.imageTag ?? coreDNSVersion(a.kubernetesVersion);
  if (tag === undefined && !disabled)
    bad(
      'kubernetesVersion',
      file,
      `no CoreDNS version is pinned for Kubernetes ${kubernetesMinor(a.kubernetesVersion)} (manifests/addons/versions.ts knows ${Object.keys(COREDNS_VERSIONS).join(', ')})`,
      'set dns.imageTag to the CoreDNS version kubeadm of that release installs, or use a Kubernetes version from the table',
    );
  return { disabled, image: coreDNSImage(repository, tag ?? 'none') };
}

/**
 * The resolved `podNetwork`, `dns` and `proxy` sections.
 * @param file the config file, named in errors.
 * @throws ConfigError `config-invalid` naming the field: a serviceSubnet without a 10th address, a
 *   podSubnet that cannot be cut into per-node /24s, a bad image reference, or no CoreDNS version
 *   pinned for the Kubernetes minor (unless `dns.imageTag` or `dns.disabled` is set).
 */
export function resolveAddons(cfg: KubeceptionConfig, a: AddonInputs, file: string): Pick<ResolvedConfig, 'podNetwork' | 'dns' | 'proxy'> {
  checkSubnets(a, file);
  const f = cfg.networking?.flannel;
  return {
    podNetwork: {
      plugin: cfg.networking?.plugin ?? 'flannel',
      flannel: {
        backend: f?.backend ?? 'vxlan',
        image: image('networking.flannel.image', f?.image, FLANNEL_IMAGE, file),
        cniPluginImage: image('networking.flannel.cniPluginImage', f?.cniPluginImage, FLANNEL_CNI_PLUGIN_IMAGE, file),
      },
    },
    dns: resolveDns(cfg, a, file),
    proxy: { disabled: cfg.proxy?.disabled ?? false },
  };
}
