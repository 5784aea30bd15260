/**
 * Meaning rules for config values that pass their shape but would turn the config against the host
 * or the cluster (issue 24): certificate lifetimes, the directories kubeception writes keys and etcd
 * data into, etcd flags and KubeletConfiguration fields kubeception sets itself, and line breaks in
 * flag values. Pure; called by ./validate.ts. Every rule throws ConfigError `config-invalid` naming
 * the field (`<file>: <field>`), why and the fix, before anything runs.
 */
import { parseDuration } from '../join/token.ts';
import { ConfigError } from '../errors.ts';
import { DEFAULT_RENEWAL_WINDOW_DAYS } from '../constants.ts';
import { CA_VALIDITY_DAYS, LEAF_VALIDITY_DAYS } from '../pki/certs.ts';
import type { DistroSettings, ExtraArgs, KubeceptionConfig } from '../types.ts';

function bad(field: string, file: string, why: string, fix: string): never {
  throw new ConfigError('config-invalid', { what: `${file}: ${field}`, why, fix });
}

/** The longest certificate lifetime accepted: 100 years (X.509 times beyond 9999 cannot be encoded). */
export const MAX_VALIDITY_HOURS = 876_000;
const hours = (days: number) => `${Math.round(days * 24 * 1e6) / 1e6}h`;

/**
 * `certificateValidityPeriod`, `caCertificateValidityPeriod`, `certificateRenewalWindow` in days.
 * Rules: each a positive duration; CA and leaf at most {@link MAX_VALIDITY_HOURS}; a leaf no longer
 * than the CAs (kubeadm warns: a leaf outliving its CA is cut by it); the renewal window shorter than
 * the leaves' validity (else every run re-issues every leaf and rolls the control plane). Unset
 * values count with their defaults (kubeadm's 87600h / 8760h; the window 2160h).
 */
export function certificateLifetimes(cfg: KubeceptionConfig, file: string): { certificateValidityDays?: number; caCertificateValidityDays?: number; certificateRenewBeforeDays?: number } {
  const days = (field: 'certificateValidityPeriod' | 'caCertificateValidityPeriod' | 'certificateRenewalWindow') => {
    const v = cfg[field];
    if (v === undefined) return undefined;
    const ms = parseDuration(v);
    if (!ms) bad(field, file, `"${v}" is not a positive duration`, 'use hours, minutes and seconds, e.g. 8760h, 90m or 1h30m');
    if (field !== 'certificateRenewalWindow' && ms > MAX_VALIDITY_HOURS * 3_600_000)
      bad(field, file, `"${v}" is more than kubeception accepts: at most ${MAX_VALIDITY_HOURS}h (100 years)`, `set ${field} to ${MAX_VALIDITY_HOURS}h or less (kubeadm's defaults: 87600h for CAs, 8760h for leaves)`);
    return ms / 86_400_000;
  };
  const leaf = days('certificateValidityPeriod');
  const ca = days('caCertificateValidityPeriod');
  const window = days('certificateRenewalWindow');
  const [leafDays, caDays, windowDays] = [leaf ?? LEAF_VALIDITY_DAYS, ca ?? CA_VALIDITY_DAYS, window ?? DEFAULT_RENEWAL_WINDOW_DAYS];
  if (leafDays > caDays)
    bad('certificateValidityPeriod', file, `${hours(leafDays)} is longer than the CAs' ${hours(caDays)}${ca === undefined ? ' (caCertificateValidityPeriod unset: the default)' : ''}: a leaf cannot outlive the CA that signs it`, `set certificateValidityPeriod to ${hours(caDays)} or less, or raise caCertificateValidityPeriod`);
  if (windowDays >= leafDays)
    bad('certificateRenewalWindow', file, `the renewal window ${hours(windowDays)}${window === undefined ? ' (the default)' : ''} is not shorter than the leaves' validity ${hours(leafDays)}: every run would re-issue every leaf and roll the control plane`, `set certificateRenewalWindow below ${hours(leafDays)}, e.g. a third of it (${hours(leafDays / 3)})`);
  return { ...(leaf !== undefined && { certificateValidityDays: leaf }), ...(ca !== undefined && { caCertificateValidityDays: ca }), ...(window !== undefined && { certificateRenewBeforeDays: window }) };
}

/**
 * Trees owned by the OS or another component: certificatesDir and etcd.dataDir may be neither one,
 * nor inside one, nor a parent of one. With their reason.
 */
const FOREIGN_TREES: Record<string, string> = {
  '/bin': 'the system\'s programs', '/sbin': 'the system\'s programs', '/lib': 'the system\'s libraries', '/lib32': 'the system\'s libraries', '/lib64': 'the system\'s libraries', '/libx32': 'the system\'s libraries',
  '/usr': 'the system\'s programs and libraries (including /usr/local)', '/boot': 'the boot loader and kernels', '/dev': 'device files', '/proc': 'a kernel file system', '/sys': 'a kernel file system',
  '/run': 'a tmpfs emptied at boot', '/var/run': 'a tmpfs emptied at boot', '/tmp': 'world-writable and emptied at boot', '/var/tmp': 'world-writable temporary files',
  '/var/log': 'the logs', '/var/cache': 'caches, which may be deleted', '/etc/ssl': 'the system trust store', '/etc/ca-certificates': 'the system trust store', '/etc/pki/tls': 'the system trust store',
  '/etc/systemd': 'systemd\'s configuration', '/etc/default': 'the distro\'s service settings', '/etc/sysconfig': 'the distro\'s service settings',
  '/etc/cni': 'the CNI configuration', '/opt/cni': 'the CNI plugins', '/var/lib/cni': 'the CNI plugins\' state', '/var/lib/containerd': 'containerd\'s state', '/var/lib/docker': 'Docker\'s state',
  '/var/lib/kubelet': 'the kubelet\'s directory', '/etc/kubernetes/manifests': 'the kubelet\'s static pod directory (every file there is run as a pod)',
};
/** Directories that are shared by design: refused only as they are (and as parents of the trees above). */
const SHARED_DIRS = ['/', '/etc', '/home', '/media', '/mnt', '/opt', '/root', '/srv', '/var', '/var/lib', '/etc/kubernetes', '/etc/pki'];

const normalize = (p: string) => p.replace(/\/+/g, '/').replace(/(.)\/$/, '$1');
/** True if `p` is `dir` or inside it (both normalised absolute paths). */
export const inside = (p: string, dir: string) => p === dir || p.startsWith(dir === '/' ? '/' : `${dir}/`);

/** What {@link dedicatedDir} says of a directory: what kubeception writes there, and an example of a good one. */
export interface DedicatedDirUse {
  writes: string;
  example: string;
  /** Appended to the "system directory" reason (e.g. that the directory is given to the etcd user). */
  also?: string;
}

/**
 * A directory kubeception writes into (`field` of the config): absolute, no `..`, not a foreign tree
 * of the OS or another component nor inside one, not a shared system directory nor a parent of a
 * foreign tree. @returns it normalised. @throws ConfigError `config-invalid` naming `field`.
 */
export function dedicatedDir(field: string, given: string, distro: DistroSettings, file: string, use: DedicatedDirUse): string {
  const trees: Record<string, string> = {
    ...FOREIGN_TREES,
    [distro.paths.kubeletConfigDir]: 'the kubelet\'s directory',
    [distro.paths.staticPodPath]: 'the kubelet\'s static pod directory (every file there is run as a pod)',
    [distro.paths.systemdDir]: 'systemd\'s unit directory',
  };
  const shared = [...SHARED_DIRS, distro.paths.secretsDir];
  if (!given.startsWith('/')) bad(field, file, `"${given}" is not an absolute path`, `set ${field} to an absolute path`);
  const p = normalize(given);
  const fix = `use a dedicated directory such as ${use.example}`;
  if (p.split('/').includes('..')) bad(field, file, `"${given}" contains "..": it is not the directory it seems`, fix);
  const named = p === given ? `"${given}"` : `"${given}" (${p})`;
  const tree = Object.keys(trees).find((t) => inside(p, t));
  if (tree) bad(field, file, `${named} is ${p === tree ? '' : `inside ${tree}, `}${trees[tree]}, not a dedicated directory: kubeception would write ${use.writes} there`, fix);
  if (shared.includes(p) || Object.keys(trees).some((t) => inside(t, p)))
    bad(field, file, `${named} is a system directory, not a dedicated one: kubeception would write ${use.writes} straight into it${use.also ?? ''}`, fix);
  return p;
}

/** certificatesDir and etcd.dataDir: each a {@link dedicatedDir}; neither inside the other. @returns them normalised. */
export function checkDirs(cfg: KubeceptionConfig, distro: DistroSettings, file: string): { certificatesDir: string; dataDir: string } {
  const one = (field: 'certificatesDir' | 'etcd.dataDir', given: string | undefined, fallback: string): string =>
    given === undefined
      ? fallback
      : dedicatedDir(field, given, distro, file, field === 'certificatesDir'
        ? { writes: 'keys', example: '/etc/kubernetes/pki' }
        : { writes: 'etcd data', example: '/var/lib/etcd/default', also: ' and give it to the etcd user' });
  const certificatesDir = one('certificatesDir', cfg.certificatesDir, distro.paths.certificatesDir);
  const dataDir = one('etcd.dataDir', cfg.etcd?.dataDir, distro.paths.etcdDataDir);
  if (inside(dataDir, certificatesDir))
    bad('etcd.dataDir', file, `${dataDir} is ${dataDir === certificatesDir ? '' : 'inside '}certificatesDir ${certificatesDir}: the data dir is given to the etcd user, and with it the keys`, 'use separate directories, e.g. /etc/kubernetes/pki and /var/lib/etcd/default');
  if (inside(certificatesDir, dataDir))
    bad('certificatesDir', file, `${certificatesDir} is inside etcd.dataDir ${dataDir}, which is given to the etcd user: it could replace the control plane's keys`, 'use separate directories, e.g. /etc/kubernetes/pki and /var/lib/etcd/default');
  return { certificatesDir, dataDir };
}

/** etcd flags kubeception sets itself (lib/etcd/config.ts), with what they are for: `etcd.extraArgs` may not set them. */
export const RESERVED_ETCD_FLAGS: Readonly<Record<string, string>> = Object.fromEntries([
  ...['name', 'data-dir', 'initial-cluster', 'initial-cluster-state', 'initial-cluster-token', 'initial-advertise-peer-urls', 'advertise-client-urls'].map((f) => [f, "the member's identity and membership"]),
  ...['listen-client-urls', 'listen-peer-urls', 'listen-metrics-urls'].map((f) => [f, 'where etcd listens: clients and peers over TLS, metrics on loopback']),
  ...['client-cert-auth', 'trusted-ca-file', 'cert-file', 'key-file', 'peer-client-cert-auth', 'peer-trusted-ca-file', 'peer-cert-file', 'peer-key-file'].map((f) => [f, "etcd's TLS: every client and peer must present a certificate of the etcd CA"]),
]);

/** etcd flags that would weaken what {@link RESERVED_ETCD_FLAGS} set up, with why. */
const WEAKENING_ETCD_FLAGS: Readonly<Record<string, string>> = {
  'auto-tls': 'makes etcd use self-signed client certificates, with no certificate check',
  'peer-auto-tls': 'makes etcd use self-signed peer certificates, with no certificate check',
  'experimental-peer-skip-client-san-verification': "skips the check of a peer certificate's names",
  'peer-skip-client-san-verification': "skips the check of a peer certificate's names",
  'enable-v2': 'opens the v2 API, which has no per-key authorization',
};

/** No line break or control character in a flag value: etcd's flags end up in an environment file, one per line. */
export function checkExtraArgValues(section: string, args: ExtraArgs | undefined, file: string): void {
  for (const [flag, value] of Object.entries(args ?? {}))
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
    if (/[\u0000-\u001f\u007f]/.test(value)) bad(`${section}.extraArgs.${flag}`, file, 'the value holds a line break or control character: it would end the flag and start another line (for etcd: another variable of its environment file)', `write ${flag}'s value on one line`);
}

/** etcd.extraArgs: none of the {@link RESERVED_ETCD_FLAGS}, none that weakens them. */
export function checkEtcdExtraArgs(args: ExtraArgs | undefined, file: string): void {
  for (const flag of Object.keys(args ?? {})) {
    if (flag in RESERVED_ETCD_FLAGS) bad(`etcd.extraArgs.${flag}`, file, `kubeception sets --${flag} itself: ${RESERVED_ETCD_FLAGS[flag]}`, `remove ${flag} from etcd.extraArgs${flag === 'data-dir' ? ' and set etcd.dataDir instead' : ''}`);
    if (flag in WEAKENING_ETCD_FLAGS) bad(`etcd.extraArgs.${flag}`, file, `--${flag} ${WEAKENING_ETCD_FLAGS[flag]}; kubeception runs etcd with certificates of the etcd CA only`, `remove ${flag} from etcd.extraArgs`);
  }
}

/** KubeletConfiguration fields kubeception sets from its own config; `kubelet.extraConfig` may not override them. */
const KUBELET_OWNED: Record<string, string> = {
  ...Object.fromEntries(['apiVersion', 'kind', 'cgroupDriver', 'containerRuntimeEndpoint', 'staticPodPath', 'clusterDNS', 'clusterDomain'].map((k) => [k, `kubeception sets ${k} itself (from kubelet.cgroupDriver, criSocket, networking and the distro)`])),
  authentication: 'kubeception sets authentication itself (from kubelet.cgroupDriver, criSocket, networking and the distro): anonymous access off, client certificates of the cluster CA, webhook tokens',
  authorization: 'kubeception sets authorization itself (from kubelet.cgroupDriver, criSocket, networking and the distro): Webhook, so the apiserver decides',
  readOnlyPort: 'kubeception sets readOnlyPort: 0 itself: any other port serves the pods and node data unauthenticated, to anyone who reaches the node',
};

/** kubelet.extraConfig: no {@link KUBELET_OWNED} field. */
export function checkKubeletExtraConfig(extra: Record<string, unknown> | undefined, file: string): void {
  for (const key of Object.keys(extra ?? {}))
    if (key in KUBELET_OWNED) bad(`kubelet.extraConfig.${key}`, file, KUBELET_OWNED[key]!, `remove ${key} from kubelet.extraConfig${key === 'cgroupDriver' ? ' and set kubelet.cgroupDriver instead' : ''}`);
}
