/**
 * Shared types: the operator's config as written ({@link KubeceptionConfig}), the validated and
 * resolved config every step reads ({@link ResolvedConfig}), and the distro settings
 * ({@link DistroSettings}) loaded from `distros/<name>/<name>.toml`.
 *
 * Field names follow kubeadm's ClusterConfiguration / InitConfiguration where one exists.
 * @see https://kubernetes.io/docs/reference/config-api/kubeadm-config.v1beta4/
 */

/** Key types kubeception can generate, named as kubeadm's `encryptionAlgorithm`. */
export type EncryptionAlgorithm = 'RSA-2048' | 'RSA-3072' | 'RSA-4096' | 'ECDSA-P256' | 'ECDSA-P384';

/** `networking.plugin`: the pod network kubeception installs, or `none`. */
export type PodNetworkPlugin = 'flannel' | 'none';
/** flannel's backend: VXLAN overlay (works across L3 networks) or host-gw (routes; nodes on one L2 network). */
export type FlannelBackend = 'vxlan' | 'host-gw';

/** `extraArgs` of a component: flag name (without `--`) → value. */
export type ExtraArgs = Record<string, string>;

/** The config as an operator writes it in `kubeception.config.ts` (every field optional). */
export interface KubeceptionConfig {
  /** Distro settings to load from `distros/<distro>/`: `kubic` or `debian`. */
  distro?: string;
  /** Kubernetes version of the control-plane images, e.g. `v1.34.4`. */
  kubernetesVersion?: string;
  /** Node name; default: the host name, lower-cased. Must be a DNS-1123 subdomain. */
  nodeName?: string;
  /** The final (self-hosted) apiserver's address and port on this node. */
  localAPIEndpoint?: { advertiseAddress?: string; bindPort?: number };
  /** The temporary bootstrap apiserver's port (it listens on `advertiseAddress` too). Default 6444. */
  bootstrapAPIEndpoint?: { bindPort?: number };
  /** Stable address (DNS name or IP, optional `:port`) for the control plane; added to the apiserver SANs. */
  controlPlaneEndpoint?: string;
  networking?: {
    podSubnet?: string;
    serviceSubnet?: string;
    dnsDomain?: string;
    /** The pod network addon: `flannel` (default) or `none` (install your own; CoreDNS stays Pending until then). */
    plugin?: PodNetworkPlugin;
    /** flannel's settings: `backend` `vxlan` (default) or `host-gw`; full image references to use instead of the pinned ones. */
    flannel?: { backend?: FlannelBackend; image?: string; cniPluginImage?: string };
  };
  /** The CoreDNS addon (kubeadm's `dns`): `disabled` skips it for good; image overrides as kubeadm's. */
  dns?: { disabled?: boolean; imageRepository?: string; imageTag?: string };
  /** The kube-proxy addon (kubeadm's `proxy`): `disabled` skips it for good (e.g. a CNI that replaces it). */
  proxy?: { disabled?: boolean };
  /** Directory of the PKI (kubeadm's `certificatesDir`). Default from the distro. */
  certificatesDir?: string;
  /** Key algorithm for every generated key (kubeadm's values). Default `ECDSA-P256`; existing keys are kept. */
  encryptionAlgorithm?: EncryptionAlgorithm;
  /** Image registry for control-plane images. Default `registry.k8s.io`. */
  imageRepository?: string;
  /**
   * `auditLog`, `secretsEncryption`, `podSecurity`: the CIS Kubernetes Benchmark defaults (each on
   * unless `disabled`; docs/configuration.md says when to turn one off).
   */
  apiServer?: { extraSANs?: string[]; extraArgs?: ExtraArgs; auditLog?: AuditLogConfig; secretsEncryption?: { disabled?: boolean }; podSecurity?: PodSecurityConfig };
  controllerManager?: { extraArgs?: ExtraArgs };
  scheduler?: { extraArgs?: ExtraArgs };
  /** `snapshots`: `kubeception etcd snapshot` and the scheduled snapshots (see {@link EtcdSnapshotSettings}). */
  etcd?: { dataDir?: string; extraArgs?: ExtraArgs; snapshots?: EtcdSnapshotConfig };
  /** `extraConfig`: KubeletConfiguration fields that override kubeception's (e.g. `{ maxPods: 50 }`). */
  kubelet?: { cgroupDriver?: 'systemd' | 'cgroupfs'; criSocket?: string; extraConfig?: Record<string, unknown> };
  /** Preflight check ids to report as warnings instead of errors (kubeadm's `ignorePreflightErrors`); `all` ignores every check. */
  ignorePreflightErrors?: string[];
  /** Lifetime of leaf certificates kubeception issues, a duration such as `8760h` (kubeadm v1beta4's; default 8760h = 365 days). */
  certificateValidityPeriod?: string;
  /** Lifetime of the CAs it creates (kubeadm v1beta4's; default 87600h = 10 years). Existing CAs are never replaced. */
  caCertificateValidityPeriod?: string;
  /** `run bootstrap` re-issues a leaf that expires within this duration (default 2160h = 90 days, as k3s). */
  certificateRenewalWindow?: string;
  /** The in-cluster join service: the kubeception image to run (default `localhost/kubeception:v0.1.0`). */
  joinService?: { image?: string };
}

/** A Pod Security Standards level (Pod Security Admission's names). */
export type PodSecurityLevel = 'privileged' | 'baseline' | 'restricted';

/**
 * `apiServer.auditLog` as written: kube-apiserver's audit log (CIS 1.2.16–1.2.19) with kubeception's
 * policy. Defaults in {@link AuditLogSettings}.
 */
export interface AuditLogConfig {
  /** True: no audit policy and no audit log. Default false. */
  disabled?: boolean;
  /** Directory of the log files on each control-plane node (absolute). Default `/var/log/kubernetes/audit`. */
  dir?: string;
  /** `--audit-log-maxage`: days a rotated file is kept. Default 30 (the benchmark's minimum). */
  maxAgeDays?: number;
  /** `--audit-log-maxbackup`: rotated files kept. Default 10. */
  maxBackups?: number;
  /** `--audit-log-maxsize`: megabytes before a file is rotated. Default 100. */
  maxSizeMB?: number;
}

/** `apiServer.auditLog` resolved. */
export interface AuditLogSettings {
  disabled: boolean;
  dir: string;
  maxAgeDays: number;
  maxBackups: number;
  maxSizeMB: number;
}

/**
 * `apiServer.podSecurity` as written: Pod Security Admission's cluster-wide defaults, for namespaces
 * without `pod-security.kubernetes.io/*` labels. Defaults in {@link PodSecuritySettings}.
 */
export interface PodSecurityConfig {
  /** True: no AdmissionConfiguration (every namespace unlabelled is `privileged`, upstream's default). Default false. */
  disabled?: boolean;
  /** Default `baseline`. */
  enforce?: PodSecurityLevel;
  /** Default `restricted`. */
  warn?: PodSecurityLevel;
  /** Default `restricted`. */
  audit?: PodSecurityLevel;
  /** Namespaces exempt besides `kube-system` (where the control plane and the addons run). */
  exemptNamespaces?: string[];
}

/** `apiServer.podSecurity` resolved; `exemptNamespaces` includes `kube-system`, sorted. */
export interface PodSecuritySettings {
  disabled: boolean;
  enforce: PodSecurityLevel;
  warn: PodSecurityLevel;
  audit: PodSecurityLevel;
  exemptNamespaces: string[];
}

/** `etcd.snapshots` as written (every field optional; defaults in {@link EtcdSnapshotSettings}). */
export interface EtcdSnapshotConfig {
  /** Directory of the snapshots (absolute). Default `/var/lib/kubeception/snapshots`. */
  dir?: string;
  /** Snapshots of this node kept; older ones are pruned after each save. Default 5 (k3s's). */
  retention?: number;
  /** How often the scheduled snapshot runs, a duration such as `12h` (k3s's default) or `30m`. */
  interval?: string;
  /** True: no scheduled snapshots (`kubeception etcd snapshot save` still works). Default false. */
  disabled?: boolean;
  /**
   * The 32-byte key (64 hex digits, file mode 0600) that encrypts each snapshot's PKI part; created
   * on the first save if absent. Copy it off the host: a restore needs it. Never inside `dir`.
   * Default `/etc/kubeception/snapshot.key`.
   */
  keyFile?: string;
}

/** `etcd.snapshots` resolved. */
export interface EtcdSnapshotSettings {
  dir: string;
  retention: number;
  /** The interval as written (`12h`), and in milliseconds. */
  interval: string;
  intervalMs: number;
  disabled: boolean;
  keyFile: string;
}

/** Paths, unit names and binaries of one distro, from `distros/<name>/<name>.toml`. */
export interface DistroSettings {
  name: string;
  paths: {
    /** Kubelet config dir: `config.yaml` and the kubelet's kubeconfig live here. */
    kubeletConfigDir: string;
    /** The kubelet's `staticPodPath`. */
    staticPodPath: string;
    /** Kubeconfigs for admin, controller-manager, scheduler and the bootstrap control plane. */
    secretsDir: string;
    /** Default `certificatesDir`. */
    certificatesDir: string;
    /** Environment file the distro's etcd unit reads (`/etc/sysconfig/etcd`, `/etc/default/etcd`). */
    etcdEnvironmentFile: string;
    /** Default etcd data directory. */
    etcdDataDir: string;
    /** Directory for systemd drop-ins kubeception writes. */
    systemdDir: string;
  };
  units: { etcd: string; kubelet: string; containerRuntime: string };
  /** User the distro's etcd unit runs as; etcd's keys are owned by it (mode 0600). */
  etcdUser: string;
  binaries: { etcd: string; kubelet: string; kubectl: string };
  /** Default `criSocket`. */
  criSocket: string;
}

/** The validated config with every default applied. This is what steps read. */
export interface ResolvedConfig {
  distro: DistroSettings;
  kubernetesVersion: string;
  /** Lower-cased DNS-1123 node name; used for the kubelet cert CN, the Node, the etcd member. */
  nodeName: string;
  localAPIEndpoint: { advertiseAddress: string; bindPort: number };
  /** Choices made for the operator that they should know about (e.g. which of several addresses is advertised); preflight prints them as warnings. */
  notices?: string[];
  bootstrapAPIEndpoint: { bindPort: number };
  controlPlaneEndpoint?: string;
  networking: { podSubnet: string; serviceSubnet: string; dnsDomain: string };
  certificatesDir: string;
  encryptionAlgorithm: EncryptionAlgorithm;
  imageRepository: string;
  apiServer: { extraSANs: string[]; extraArgs: ExtraArgs; auditLog: AuditLogSettings; secretsEncryption: { disabled: boolean }; podSecurity: PodSecuritySettings };
  controllerManager: { extraArgs: ExtraArgs };
  scheduler: { extraArgs: ExtraArgs };
  etcd: { dataDir: string; extraArgs: ExtraArgs; snapshots: EtcdSnapshotSettings };
  /** `cgroupDriverSet`: the operator set `kubelet.cgroupDriver`; otherwise the kubelet follows the runtime's driver. */
  kubelet: { cgroupDriver: 'systemd' | 'cgroupfs'; cgroupDriverSet?: boolean; criSocket: string; extraConfig: Record<string, unknown> };
  ignorePreflightErrors: string[];
  joinService: { image: string };
  /** From `networking.plugin` and `networking.flannel`, images resolved. */
  podNetwork: { plugin: PodNetworkPlugin; flannel: { backend: FlannelBackend; image: string; cniPluginImage: string } };
  /** From `dns`: the CoreDNS image resolved (kubeadm's `GetDNSImage`). */
  dns: { disabled: boolean; image: string };
  proxy: { disabled: boolean };
  /** From `certificateValidityPeriod`, in days (fractions allowed); absent: the certificate table's. */
  certificateValidityDays?: number;
  /** From `caCertificateValidityPeriod`, in days; absent: the certificate table's. */
  caCertificateValidityDays?: number;
  /** From `certificateRenewalWindow`, in days; absent: {@link DEFAULT_RENEWAL_WINDOW_DAYS}. */
  certificateRenewBeforeDays?: number;
}
