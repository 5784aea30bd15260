/**
 * Constants: ports, CNs, groups, file names and timeouts, in one documented place.
 * @see kubernetes/cmd/kubeadm/app/constants/constants.go
 */

/** Default Kubernetes version of the control-plane images (the version the test bed builds; its minor's pairings are in manifests/addons/versions.ts). */
export const DEFAULT_KUBERNETES_VERSION = 'v1.37.2';
/**
 * Key algorithm of every generated key when `encryptionAlgorithm` is unset (kubeadm's field and
 * values). ECDSA-P256, not kubeadm's RSA-2048: every component (etcd, kube-apiserver incl. service
 * account signing, controller-manager, scheduler, kubelet, the join service) works with it on the bed
 * (e2e), and the whole PKI costs milliseconds instead of seconds of RSA key generation. See the
 * "Key algorithms" in docs/configuration.md (and docs/benchmarks.md) for the measurement.
 */
export const DEFAULT_ENCRYPTION_ALGORITHM = 'ECDSA-P256' as const;
export const DEFAULT_IMAGE_REPOSITORY = 'registry.k8s.io';
/** The kubeception image the join service runs: built locally (Containerfile, or test/bed/kubeception-image.sh). */
export const DEFAULT_JOIN_IMAGE = 'localhost/kubeception:v0.1.0';

/** The final (self-hosted) apiserver's port: kubeadm's default `bindPort`. */
export const APISERVER_PORT = 6443;
/** The temporary bootstrap apiserver's port; both apiservers coexist during the hand-off. */
export const BOOTSTRAP_APISERVER_PORT = 6444;
export const ETCD_CLIENT_PORT = 2379;
export const ETCD_PEER_PORT = 2380;
export const KUBELET_PORT = 10250;
export const CONTROLLER_MANAGER_PORT = 10257;
export const SCHEDULER_PORT = 10259;
/** NodePort of the in-cluster join service (the seed's). */
export const JOIN_NODE_PORT = 30000;

export const DEFAULT_POD_SUBNET = '10.244.0.0/16';
export const DEFAULT_SERVICE_SUBNET = '10.96.0.0/12';
export const DEFAULT_DNS_DOMAIN = 'cluster.local';

/** Subjects of the kubeconfig client certificates (kubeadm's). */
export const ADMIN_CN = 'kubernetes-admin';
export const MASTERS_GROUP = 'system:masters';
export const CONTROLLER_MANAGER_USER = 'system:kube-controller-manager';
export const SCHEDULER_USER = 'system:kube-scheduler';
export const NODES_GROUP = 'system:nodes';
/** The kubelet's user name for node `name`. */
export const nodeUser = (name: string) => `system:node:${name}`;

/** Label and taint key for control-plane nodes. */
export const CONTROL_PLANE_LABEL = 'node-role.kubernetes.io/control-plane';

/** Kubeconfig file names under the distro's secrets dir. */
export const KUBECONFIG = {
  admin: 'admin.conf',
  controllerManager: 'controller-manager.conf',
  scheduler: 'scheduler.conf',
} as const;
/** The kubelet's kubeconfig and config under the distro's kubelet config dir. */
export const KUBELET_KUBECONFIG = 'kubeconfig';
export const KUBELET_CONFIG = 'config.yaml';

/** Marker kubeception keeps in the etcd data dir: which etcd CA the data belongs to. */
export const ETCD_OWNER_MARKER = 'kubeception-owner.json';

/** `run bootstrap` re-issues leaves expiring within this many days (k3s's 90). */
export const DEFAULT_RENEWAL_WINDOW_DAYS = 90;

/** etcd health wait: attempts × interval. */
export const ETCD_HEALTH_TIMEOUT_MS = 60_000;
export const ETCD_HEALTH_INTERVAL_MS = 1_000;

/** Extra group of the bootstrap tokens kubeception creates (kubeadm's default node token group). */
export const BOOTSTRAP_TOKEN_GROUP = 'system:bootstrappers:kubeadm:default-node-token';
/**
 * Environment variables holding a join's secrets: the bootstrap token and the certificate key. The
 * printed join commands set them (a root process's environment is readable by root only, its command
 * line by every local user); the CLI reads them once at start and removes them, and no command it
 * runs inherits them (lib/host/sh.ts).
 */
export const SECRET_ENV = { token: 'KUBECEPTION_TOKEN', certificateKey: 'KUBECEPTION_CERTIFICATE_KEY' } as const;

/**
 * Where kubeception records restarts and reloads still owed to a unit after a config write (see
 * lib/host/pending.ts), so a run killed between the write and the restart is finished by the next.
 */
export const PENDING_DIR = '/var/lib/kubeception/pending';

/**
 * Signer of kubelet client certificates (TLS bootstrapping): the only CSRs kubeception's approver approves.
 * @see https://kubernetes.io/docs/reference/access-authn-authz/certificate-signing-requests/#kubernetes-signers
 */
export const KUBELET_CLIENT_SIGNER = 'kubernetes.io/kube-apiserver-client-kubelet';

/**
 * Signer of kubelet serving certificates (`serverTLSBootstrap: true`): kubeception's approver approves
 * a node's own request for its own addresses (lib/join/serving-csr.ts) and denies every other one.
 */
export const KUBELET_SERVING_SIGNER = 'kubernetes.io/kubelet-serving';

/** The CSR approver's environment variable listing the apiserver's shared SANs (comma-separated), which no kubelet serving certificate may name. */
export const RESERVED_SANS_ENV = 'KUBECEPTION_RESERVED_SANS';

/** The sysctl.d file with the kernel tunables the kubelet checks (`protectKernelDefaults`, lib/steps/bootstrap/kernel-tunables.ts). */
export const KUBELET_SYSCTL_FILE = '/etc/sysctl.d/90-kubeception-kubelet.conf';

/**
 * key → value the kubelet's container manager checks with protectKernelDefaults (utilsysctl's
 * constants); kubeception writes them to {@link KUBELET_SYSCTL_FILE}, and the bed shadows any the VM
 * has different (test/bed/upper.ts).
 */
export const KUBELET_SYSCTLS: Readonly<Record<string, string>> = {
  'vm.overcommit_memory': '1',
  'vm.panic_on_oom': '0',
  'kernel.panic': '10',
  'kernel.panic_on_oops': '1',
  'kernel.keys.root_maxkeys': '1000000',
  'kernel.keys.root_maxbytes': '25000000',
};
