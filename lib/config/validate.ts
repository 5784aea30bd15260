/**
 * Resolves the operator's config against the distro and the host, and checks its meaning. Pure:
 * host facts are passed in, so every rule has a table test.
 *
 * Rules (kubeadm's where it has one):
 * - nodeName: default the host name; lower-cased once; a DNS-1123 subdomain.
 * - advertiseAddress: an IP literal assigned to this host; default, as kubeadm: an address of the
 *   default route's interface (IPv4 first); with no default route, the first non-loopback IPv4 (else
 *   IPv6) address. When several addresses were candidates, `notices` says which one was taken and how
 *   to choose another.
 * - podSubnet, serviceSubnet: CIDRs without host bits; they must not overlap each other or any
 *   network of the host's interfaces.
 * - bindPort, bootstrap bindPort: 1–65535 and different; controlPlaneEndpoint host[:port], port 1–65535.
 * - Certificate lifetimes, certificatesDir / etcd.dataDir, reserved etcd flags and kubelet fields,
 *   line breaks in flag values: ./limits.ts.
 * - kubernetesVersion: `vMAJOR.MINOR.PATCH` of a minor in the versions table (1.35–1.37; 1.34 for
 *   existing clusters only, with a notice).
 */
import { ConfigError } from '../errors.ts';
import { cidrsOverlap, ipFamily, isIP, networkOf, normalizeIP, parseCidr, type Cidr } from '../net/cidr.ts';
import { RESERVED_FLAGS } from '../../manifests/flags.ts';
import { resolveAddons } from './addons.ts';
import { certificateLifetimes, checkDirs, checkEtcdExtraArgs, checkExtraArgValues, checkKubeletExtraConfig } from './limits.ts';
import { resolveSnapshots } from './snapshots.ts';
import { resolveApiServerHardening } from './hardening.ts';
import { KUBERNETES_MINORS, kubernetesMinor, minorVersions, SUPPORTED_MINORS } from '../../manifests/addons/versions.ts';
import * as C from '../constants.ts';
import type { DistroSettings, KubeceptionConfig, ResolvedConfig } from '../types.ts';

/** What validation needs to know about the host. */
export interface HostFacts {
  hostname: string;
  /** Non-loopback interface addresses with their networks (`cidr` as in os.networkInterfaces()) and interface names. */
  addresses: { address: string; cidr: string; iface?: string }[];
  /** Interfaces of the default routes, preferred first (IPv4 before IPv6, lowest metric first). */
  defaultRouteIfaces?: string[];
}

const DNS1123_LABEL = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const DNS1123_SUBDOMAIN = new RegExp(`^${DNS1123_LABEL}(\\.${DNS1123_LABEL})*$`);

/** True if `s` is a DNS-1123 subdomain (lower-case alphanumerics, `-` and `.`, ≤ 253 characters). */
export function isDns1123Subdomain(s: string): boolean {
  return s.length <= 253 && DNS1123_SUBDOMAIN.test(s) && s.split('.').every((l) => l.length <= 63);
}

function bad(field: string, file: string, why: string, fix: string): never {
  throw new ConfigError('config-invalid', { what: `${file}: ${field}`, why, fix });
}

function resolveNodeName(cfg: KubeceptionConfig, facts: HostFacts, file: string): string {
  const field = cfg.nodeName !== undefined ? 'nodeName' : 'nodeName (from the host name)';
  const name = (cfg.nodeName ?? facts.hostname).trim().toLowerCase();
  if (!isDns1123Subdomain(name))
    bad(
      field,
      file,
      `"${cfg.nodeName ?? facts.hostname}" is not a valid node name: it must be a DNS-1123 subdomain (lower-case letters, digits, '-' and '.', starting and ending with a letter or digit, at most 253 characters)`,
      `set nodeName to a DNS-1123 name such as "${name.replace(/[^a-z0-9.-]/g, '-').replace(/^[-.]+|[-.]+$/g, '') || 'node-1'}"`,
    );
  return name;
}

function resolveAdvertiseAddress(cfg: KubeceptionConfig, facts: HostFacts, file: string, notices: string[]): string {
  const given = cfg.localAPIEndpoint?.advertiseAddress;
  const field = 'localAPIEndpoint.advertiseAddress';
  if (given === undefined) {
    const candidates = [...facts.addresses.filter((a) => !a.address.includes(':')), ...facts.addresses.filter((a) => a.address.includes(':') && !a.address.startsWith('fe80'))];
    const viaRoute = (facts.defaultRouteIfaces ?? []).map((i) => candidates.find((a) => a.iface === i)).find(Boolean);
    const pick = viaRoute ?? candidates[0];
    if (!pick) bad(field, file, 'the host has no non-loopback address to advertise', `set ${field} to this host's IP`);
    if (candidates.length > 1)
      notices.push(
        `advertise address ${pick.address} (${pick.iface ?? '?'}, ${viaRoute ? "the default route's interface" : 'no default route: the first address'}) chosen among ${candidates.map((a) => `${a.address} (${a.iface ?? '?'})`).join(', ')}; set ${field} in ${file} to choose another`,
      );
    return pick.address;
  }
  if (!isIP(given)) bad(field, file, `"${given}" is not an IP address (kubeadm requires an IP here)`, `set ${field} to an IPv4 or IPv6 address of this host`);
  const ip = normalizeIP(given);
  if (!facts.addresses.some((a) => normalizeIP(a.address) === ip))
    bad(
      field,
      file,
      `${ip} is not assigned to any interface of this host (it has: ${facts.addresses.map((a) => a.address).join(', ') || 'none'})`,
      `set ${field} to one of this host's addresses, or add ${ip} to an interface`,
    );
  return ip;
}

function cidr(field: string, value: string, file: string): Cidr {
  const c = parseCidr(value);
  // The example is the field's own default: suggesting the serviceSubnet default for podSubnet would clash.
  const example = field.endsWith('podSubnet') ? C.DEFAULT_POD_SUBNET : field.endsWith('serviceSubnet') ? C.DEFAULT_SERVICE_SUBNET : '10.0.0.0/16';
  if (typeof c === 'string') bad(field, file, c, `set ${field} to a CIDR such as ${example}`);
  return c;
}

function checkRanges(pod: Cidr, svc: Cidr, facts: HostFacts, file: string, podS: string, svcS: string) {
  if (cidrsOverlap(pod, svc))
    bad(
      'networking.podSubnet, networking.serviceSubnet',
      file,
      `podSubnet ${podS} and serviceSubnet ${svcS} overlap; pod IPs and Service ClusterIPs must be distinct`,
      'choose non-overlapping ranges, e.g. podSubnet 10.244.0.0/16 and serviceSubnet 10.96.0.0/12',
    );
  for (const a of facts.addresses) {
    const net = networkOf(a.cidr);
    if (!net) continue;
    for (const [field, range, text] of [['networking.podSubnet', pod, podS], ['networking.serviceSubnet', svc, svcS]] as const)
      if (cidrsOverlap(range, net) && !isClusterInterface(a.iface, net, range))
        bad(field, file, `${text} overlaps the host network ${a.cidr}; traffic to those hosts would be routed into the cluster`, `choose a ${field} outside ${a.cidr}`);
  }
}

/** CNI bridges, overlays and kube-proxy's dummy device: the cluster's own addresses on the host. */
const CLUSTER_IFACES = /^(cni\d*|cbr0|flannel\..*|cali.*|cilium_.*|kube-ipvs0|kube-bridge|vxlan\..*|tunl0|weave|genev_sys_.*)$/;

/** True for an interface of the cluster itself (e.g. the CNI bridge `cni0` holding a pod-subnet address). */
function isClusterInterface(iface: string | undefined, net: Cidr, range: Cidr): boolean {
  return !!iface && CLUSTER_IFACES.test(iface) && net.prefix >= range.prefix;
}

/** Ports other components of the node listen on, and the NodePort range. */
const TAKEN_PORTS: Record<number, string> = {
  2379: 'etcd (clients)', 2380: 'etcd (peers)', 2381: 'etcd (metrics)', 10249: 'kube-proxy (metrics)', 10250: 'the kubelet', 10256: 'kube-proxy (healthz)',
  10257: 'kube-controller-manager', 10259: 'kube-scheduler', 10357: 'the bootstrap kube-controller-manager', 10359: 'the bootstrap kube-scheduler',
};

function checkPort(field: string, v: number, file: string) {
  if (!Number.isInteger(v) || v < 1 || v > 65535) bad(field, file, `${v} is not a TCP port (1–65535)`, `set ${field} to a free port`);
  if (TAKEN_PORTS[v]) bad(field, file, `port ${v} is used by ${TAKEN_PORTS[v]} on this node`, `use another port (defaults: 6443 final, 6444 bootstrap)`);
  if (v >= 30000 && v <= 32767) bad(field, file, `port ${v} is in the NodePort range 30000–32767 (the join service uses 30000)`, 'use a port below 30000');
}

/**
 * `controlPlaneEndpoint`: `host[:port]` or `[IPv6][:port]`, no scheme; the host an IP or a DNS
 * name, the port 1–65535 (kubeadm's `ValidateAPIEndpoint` / `ParseHostPort`).
 */
function checkEndpoint(value: string | undefined, file: string): void {
  if (value === undefined) return;
  const m = /^\[([^\]]*)\](?::(\d*))?$/.exec(value) ?? /^([^:[\]]*)(?::(\d*))?$/.exec(value);
  const fix = 'give a DNS name or IP with an optional port and no scheme, e.g. cp.example.com:6443';
  if (!m) bad('controlPlaneEndpoint', file, `"${value}" is not host[:port]`, fix);
  const [host, port] = [m[1]!, m[2]];
  const v6 = value.startsWith('[');
  if (v6 ? !isIP(host) || ipFamily(host) !== 6 : !(isIP(host) || isDns1123Subdomain(host.toLowerCase())))
    bad('controlPlaneEndpoint', file, `"${host}" is neither an IP address nor a DNS name${v6 ? ' (only an IPv6 address goes in brackets)' : ''}`, fix);
  if (port !== undefined && !(/^[1-9]\d{0,4}$/.test(port) && Number(port) <= 65535))
    bad('controlPlaneEndpoint', file, `port ${port || '(empty)'} is not a TCP port (1–65535)`, 'use the port the load balancer forwards to the apiservers, e.g. 6443');
}

/**
 * The Kubernetes minor must be in the versions table (manifests/addons/versions.ts): a supported one,
 * or one kept for existing clusters only (a notice says so; bootstrap's preflight
 * `KubernetesVersionSupport` refuses a new cluster at it).
 */
function checkMinor(kubernetesVersion: string, file: string, notices: string[]): void {
  const minor = kubernetesMinor(kubernetesVersion);
  const row = minorVersions(kubernetesVersion);
  const existing = Object.keys(KUBERNETES_MINORS).filter((m) => KUBERNETES_MINORS[m]!.support === 'existing-clusters');
  if (!row)
    bad(
      'kubernetesVersion',
      file,
      `Kubernetes ${minor} is not supported: kubeception supports ${SUPPORTED_MINORS.join(', ')}${existing.length ? ` (and ${existing.join(', ')} for existing clusters only)` : ''}`,
      `set kubernetesVersion to a release of a supported minor, e.g. ${C.DEFAULT_KUBERNETES_VERSION} (the default)`,
    );
  if (row.support === 'existing-clusters')
    notices.push(`Kubernetes ${minor} is past upstream end of life: kubeception serves existing ${minor} clusters only (upgrade them with \`kubeception upgrade apply\` to ${SUPPORTED_MINORS[0]}); supported: ${SUPPORTED_MINORS.join(', ')}`);
}

const IMAGE_REF = /^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(\/[a-z0-9]+([._-][a-z0-9]+)*)*$/;

/**
 * Applies defaults and checks meaning.
 * @param file the config file, named in errors.
 * @throws ConfigError `config-invalid` naming the field, why, and how to fix it.
 */
export function resolveConfig(cfg: KubeceptionConfig, distro: DistroSettings, facts: HostFacts, file: string): ResolvedConfig {
  const nodeName = resolveNodeName(cfg, facts, file);
  const notices: string[] = [];
  const advertiseAddress = resolveAdvertiseAddress(cfg, facts, file, notices);
  const bindPort = cfg.localAPIEndpoint?.bindPort ?? C.APISERVER_PORT;
  const bootstrapPort = cfg.bootstrapAPIEndpoint?.bindPort ?? C.BOOTSTRAP_APISERVER_PORT;
  checkPort('localAPIEndpoint.bindPort', bindPort, file);
  checkPort('bootstrapAPIEndpoint.bindPort', bootstrapPort, file);
  if (bindPort === bootstrapPort)
    bad('bootstrapAPIEndpoint.bindPort', file, `the bootstrap and final apiservers both use port ${bindPort}; they must coexist during the hand-off`, 'use different ports (defaults 6444 and 6443)');
  const podSubnet = cfg.networking?.podSubnet ?? C.DEFAULT_POD_SUBNET;
  const serviceSubnet = cfg.networking?.serviceSubnet ?? C.DEFAULT_SERVICE_SUBNET;
  const pod = cidr('networking.podSubnet', podSubnet, file);
  const svc = cidr('networking.serviceSubnet', serviceSubnet, file);
  checkRanges(pod, svc, facts, file, podSubnet, serviceSubnet);
  const family = ipFamily(advertiseAddress) === 6 ? 'ipv6' : 'ipv4';
  for (const [field, c, text] of [['networking.serviceSubnet', svc, serviceSubnet], ['networking.podSubnet', pod, podSubnet]] as const)
    if (c.family !== family)
      bad(field, file, `${text} is ${c.family === 'ipv4' ? 'IPv4' : 'IPv6'} but the advertise address ${advertiseAddress} is ${family === 'ipv4' ? 'IPv4' : 'IPv6'}; ${field.endsWith('serviceSubnet') ? 'kube-apiserver requires the service range to match the advertise address family' : 'single-stack clusters use one IP family for nodes and pods'}`, `set ${field} to an ${family === 'ipv4' ? 'IPv4' : 'IPv6'} range (e.g. ${family === 'ipv4' ? (field.endsWith('serviceSubnet') ? '10.96.0.0/12' : '10.244.0.0/16') : field.endsWith('serviceSubnet') ? 'fd00:96::/108' : 'fd00:244::/56'})`);
  if (pod.family === 'ipv6' && pod.prefix > 48)
    bad('networking.podSubnet', file, `${podSubnet} is too small: kube-controller-manager gives each node a /64 of it`, 'use an IPv6 podSubnet of /48 or larger, e.g. fd00:244::/48');
  for (const [section, args] of [['apiServer', cfg.apiServer?.extraArgs], ['controllerManager', cfg.controllerManager?.extraArgs], ['scheduler', cfg.scheduler?.extraArgs]] as const)
    for (const flag of RESERVED_FLAGS[section])
      if (args && flag in args)
        bad(`${section}.extraArgs.${flag}`, file, `kubeception sets --${flag} itself: the bootstrap and self-hosted instances depend on it`, `remove ${flag} from ${section}.extraArgs`);
  const dnsDomain = cfg.networking?.dnsDomain ?? C.DEFAULT_DNS_DOMAIN;
  if (!isDns1123Subdomain(dnsDomain)) bad('networking.dnsDomain', file, `"${dnsDomain}" is not a DNS-1123 subdomain`, 'use a domain such as cluster.local');
  const kubernetesVersion = cfg.kubernetesVersion ?? C.DEFAULT_KUBERNETES_VERSION;
  if (!/^v\d+\.\d+\.\d+$/.test(kubernetesVersion)) bad('kubernetesVersion', file, `"${kubernetesVersion}" is not a version like ${C.DEFAULT_KUBERNETES_VERSION}`, 'set kubernetesVersion to vMAJOR.MINOR.PATCH');
  checkMinor(kubernetesVersion, file, notices);
  const encryptionAlgorithm = cfg.encryptionAlgorithm ?? C.DEFAULT_ENCRYPTION_ALGORITHM;
  const extraSANs = (cfg.apiServer?.extraSANs ?? []).map((s, i) => {
    if (isIP(s)) return normalizeIP(s);
    if (!isDns1123Subdomain(s.replace(/^\*\./, ''))) bad(`apiServer.extraSANs[${i}]`, file, `"${s}" is neither an IP address nor a DNS name`, 'use an IP or a lower-case DNS name');
    return s;
  });
  const dirs = checkDirs(cfg, distro, file);
  checkKubeletExtraConfig(cfg.kubelet?.extraConfig, file);
  for (const [section, args] of [['apiServer', cfg.apiServer?.extraArgs], ['controllerManager', cfg.controllerManager?.extraArgs], ['scheduler', cfg.scheduler?.extraArgs], ['etcd', cfg.etcd?.extraArgs]] as const) {
    for (const flag of Object.keys(args ?? {}))
      if (!/^[a-z0-9][a-z0-9-]*$/.test(flag)) bad(`${section}.extraArgs["${flag}"]`, file, `"${flag}" is not a flag name`, `write flag names without leading dashes, e.g. { "v": "5" } for --v=5`);
    checkExtraArgValues(section, args, file);
  }
  checkEtcdExtraArgs(cfg.etcd?.extraArgs, file);
  if (cfg.imageRepository !== undefined && !IMAGE_REF.test(cfg.imageRepository)) bad('imageRepository', file, `"${cfg.imageRepository}" is not an image repository`, 'use e.g. registry.k8s.io or registry.example.com:5000/k8s');
  if (cfg.joinService?.image !== undefined && !/^[a-z0-9][^\s]*(:[\w.-]+|@sha256:[0-9a-f]{64})$/.test(cfg.joinService.image)) bad('joinService.image', file, `"${cfg.joinService.image}" is not an image reference with a tag or digest`, 'use e.g. registry.example.com/kubeception:v0.1.0');
  checkEndpoint(cfg.controlPlaneEndpoint, file);
  const imageRepository = cfg.imageRepository ?? C.DEFAULT_IMAGE_REPOSITORY;
  const addons = resolveAddons(cfg, { kubernetesVersion, imageRepository, podSubnet, serviceSubnet }, file);
  return {
    ...certificateLifetimes(cfg, file),
    distro,
    kubernetesVersion,
    nodeName,
    localAPIEndpoint: { advertiseAddress, bindPort },
    bootstrapAPIEndpoint: { bindPort: bootstrapPort },
    controlPlaneEndpoint: cfg.controlPlaneEndpoint,
    networking: { podSubnet, serviceSubnet, dnsDomain },
    certificatesDir: dirs.certificatesDir,
    encryptionAlgorithm,
    imageRepository,
    apiServer: { extraSANs, extraArgs: cfg.apiServer?.extraArgs ?? {}, ...resolveApiServerHardening(cfg, distro, dirs, file) },
    controllerManager: { extraArgs: cfg.controllerManager?.extraArgs ?? {} },
    scheduler: { extraArgs: cfg.scheduler?.extraArgs ?? {} },
    etcd: { dataDir: dirs.dataDir, extraArgs: cfg.etcd?.extraArgs ?? {}, snapshots: resolveSnapshots(cfg, distro, dirs, file) },
    kubelet: { cgroupDriver: cfg.kubelet?.cgroupDriver ?? 'systemd', cgroupDriverSet: cfg.kubelet?.cgroupDriver !== undefined, criSocket: cfg.kubelet?.criSocket ?? distro.criSocket, extraConfig: cfg.kubelet?.extraConfig ?? {} },
    ignorePreflightErrors: cfg.ignorePreflightErrors ?? [],
    joinService: { image: cfg.joinService?.image ?? C.DEFAULT_JOIN_IMAGE },
    ...addons,
    ...(notices.length ? { notices } : {}),
  };
}
