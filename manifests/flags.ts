/**
 * Command-line flags of kube-apiserver, kube-controller-manager and kube-scheduler, as kubeadm's
 * static pods set them, for both instances of each component: the bootstrap one (static pod,
 * reading the PKI from `certificatesDir` on the host) and the self-hosted one (reading the same
 * files from a Secret). Where a file lives is the caller's {@link Locate}; everything else is shared,
 * so the two instances differ only in the flags the hand-off needs.
 *
 * Order: kubeadm's defaults, then the component's `extraArgs`, then the pinned flags of
 * {@link RESERVED_FLAGS} and the bootstrap's `endpoint-reconciler-type=none`; sorted by name (kubeadm's
 * `ArgumentsToCommand`), so the same config always yields the same command.
 * @see kubernetes/cmd/kubeadm/app/phases/controlplane/manifests.go (getAPIServerCommand, ...)
 */
import { ETCD_CLIENT_PORT } from '../lib/constants.ts';
import { ConfigError } from '../lib/errors.ts';
import { serverTLSBootstrap } from '../lib/config/kubelet-defaults.ts';
import { url } from '../lib/net/cidr.ts';
import { hardeningFlags } from './apiserver-hardening.ts';
import type { ExtraArgs, ResolvedConfig } from '../lib/types.ts';

/** PKI files a control-plane component reads, by path relative to `certificatesDir` (kubeadm's names). */
export const PKI_FILES = [
  'ca.crt', 'ca.key', 'apiserver.crt', 'apiserver.key', 'apiserver-kubelet-client.crt', 'apiserver-kubelet-client.key',
  'front-proxy-ca.crt', 'front-proxy-client.crt', 'front-proxy-client.key', 'etcd/ca.crt', 'apiserver-etcd-client.crt',
  'apiserver-etcd-client.key', 'sa.key', 'sa.pub',
] as const;

/** A PKI file, named by its path relative to `certificatesDir` (kubeadm's names). */
export type PkiFile = (typeof PKI_FILES)[number];

/** Where a component finds a PKI file: an absolute path inside its container. */
export type Locate = (file: PkiFile) => string;

/** Which of the two instances of a component the flags are for. */
export type Instance = 'bootstrap' | 'self-hosted';

/** `ExtraArgs` sections of the config, as named in errors. */
type Section = 'apiServer' | 'controllerManager' | 'scheduler';

/**
 * Flags kubeception sets itself and `extraArgs` may not: `secure-port` (the port scheme of
 * `controlPlanePorts`; the apiserver's comes from `localAPIEndpoint.bindPort` and
 * `bootstrapAPIEndpoint.bindPort`), `permit-port-sharing` (the self-hosted rolling updates need it)
 * and the controllers' `leader-elect` (it is what keeps the bootstrap and self-hosted instances from
 * acting at once). `lib/config/validate.ts` can reject them early from this list.
 */
export const RESERVED_FLAGS: Readonly<Record<Section, readonly string[]>> = {
  apiServer: ['secure-port', 'permit-port-sharing'],
  controllerManager: ['secure-port', 'permit-port-sharing', 'leader-elect'],
  scheduler: ['secure-port', 'permit-port-sharing', 'leader-elect'],
};

/**
 * `--name=value` for defaults ← `extraArgs` ← pinned, sorted by name.
 * @throws ConfigError `config-invalid` if `extraArgs` sets a {@link RESERVED_FLAGS} entry.
 */
export function toArgs(section: Section, defaults: ExtraArgs, extraArgs: ExtraArgs, pinned: ExtraArgs): string[] {
  for (const name of RESERVED_FLAGS[section])
    if (name in extraArgs)
      throw new ConfigError('config-invalid', {
        what: `${section}.extraArgs.${name}`,
        why: 'kubeception sets this flag itself: the bootstrap and self-hosted control planes share the node and hand over through it',
        fix: name === 'secure-port' && section === 'apiServer' ? 'remove it and set localAPIEndpoint.bindPort instead' : `remove ${name} from ${section}.extraArgs`,
      });
  const merged = { ...defaults, ...extraArgs, ...pinned };
  return Object.keys(merged).sort().map((k) => `--${k}=${merged[k]}`);
}

/** Flags the self-hosted instances add to let an updated pod bind while the old one still runs. */
const sharing = (instance: Instance): ExtraArgs => (instance === 'self-hosted' ? { 'permit-port-sharing': 'true' } : {});

/**
 * Leader election of the controllers. The bootstrap instances hold the leases with a short duration
 * (8 s, renew deadline 6 s; the defaults are 15 s and 10 s): they are removed without releasing
 * their lease (upstream never releases on exit), and the self-hosted instances, which wait on the
 * same lease, take it over once the duration *recorded in the lease* has passed since its last
 * renewal (client-go's leaderelection reads `leaseDurationSeconds` from the record) — ≈ 8 s after the
 * hand-off instead of ≈ 17 s, during which no Deployment of the bootstrap's last steps gets a pod.
 * They retry every 500 ms (default 2 s): their first try usually comes before the new apiserver's
 * RBAC roles exist and is refused, and the retry is what the self-hosted apiserver's pod waits for.
 * Pinned for the bootstrap instances only; `extraArgs` may tune the self-hosted ones' election.
 */
const election = (instance: Instance): ExtraArgs =>
  instance === 'bootstrap' ? { 'leader-elect': 'true', 'leader-elect-lease-duration': '8s', 'leader-elect-renew-deadline': '6s', 'leader-elect-retry-period': '500ms' } : { 'leader-elect': 'true' };

/**
 * Client rate limits of the bootstrap controllers (the defaults are 20 requests/s, burst 30). The
 * bootstrap controller-manager starts its controllers one after another, each fetching its own
 * service-account credentials (`--use-service-account-credentials`) — ≈ 150 ms each at the default
 * limit, ≈ 6 s in all before its informers start and the DaemonSet controller creates the
 * self-hosted apiserver's pod. The bootstrap instances live for a minute on an empty cluster.
 */
const bootstrapClientLimits = (instance: Instance): ExtraArgs => (instance === 'bootstrap' ? { 'kube-api-qps': '200', 'kube-api-burst': '300' } : {});

/**
 * `--profiling=false` on kube-apiserver, kube-controller-manager and kube-scheduler (CIS Kubernetes
 * Benchmark 1.2.15, 1.3.2, 1.4.1: no /debug/pprof handlers). A default: `extraArgs: { profiling:
 * 'true' }` turns the handlers back on for a profiling session.
 */
const NO_PROFILING: ExtraArgs = { profiling: 'false' };

/**
 * kube-apiserver's flags. The bootstrap instance runs `--endpoint-reconciler-type=none` whatever
 * `extraArgs` say, so only the final apiserver (lease reconciler, its `bindPort`) writes the
 * `kubernetes` Service's endpoints and the two never fight over them.
 * @param port `--secure-port`.
 * @throws ConfigError `config-invalid` for a reserved flag in `apiServer.extraArgs`.
 */
export function apiServerFlags(config: ResolvedConfig, at: Locate, port: number, instance: Instance): string[] {
  const extra = config.apiServer.extraArgs;
  const defaults: ExtraArgs = {
    // Self-hosted: each DaemonSet pod advertises its own node (env HOST_IP = status.hostIP).
    'advertise-address': instance === 'self-hosted' ? '$(HOST_IP)' : config.localAPIEndpoint.advertiseAddress,
    'allow-privileged': 'true',
    // authorization-mode and a structured authorization-config exclude each other (kubeadm drops the mode).
    ...(!('authorization-config' in extra) && { 'authorization-mode': 'Node,RBAC' }),
    'client-ca-file': at('ca.crt'),
    'enable-admission-plugins': 'NodeRestriction',
    'enable-bootstrap-token-auth': 'true',
    ...NO_PROFILING,
    // Audit log, encryption at rest, Pod Security Admission defaults (CIS): manifests/apiserver-hardening.ts.
    ...hardeningFlags(config, instance),
    'etcd-cafile': at('etcd/ca.crt'),
    'etcd-certfile': at('apiserver-etcd-client.crt'),
    'etcd-keyfile': at('apiserver-etcd-client.key'),
    'etcd-servers': url('https', '127.0.0.1', ETCD_CLIENT_PORT),
    // CIS 1.2.5: kubelet serving certificates come from the cluster CA (serverTLSBootstrap), so verify them.
    ...(serverTLSBootstrap(config) && { 'kubelet-certificate-authority': at('ca.crt') }),
    'kubelet-client-certificate': at('apiserver-kubelet-client.crt'),
    'kubelet-client-key': at('apiserver-kubelet-client.key'),
    'kubelet-preferred-address-types': 'InternalIP,Hostname,ExternalIP',
    'proxy-client-cert-file': at('front-proxy-client.crt'),
    'proxy-client-key-file': at('front-proxy-client.key'),
    'requestheader-allowed-names': 'front-proxy-client',
    'requestheader-client-ca-file': at('front-proxy-ca.crt'),
    'requestheader-extra-headers-prefix': 'X-Remote-Extra-',
    'requestheader-group-headers': 'X-Remote-Group',
    'requestheader-username-headers': 'X-Remote-User',
    // CIS 1.2.30: projected tokens expire when they say (about 1 h), not extended to a year for
    // clients that never re-read them; client-go (and client-node's in-cluster config) re-read them.
    'service-account-extend-token-expiration': 'false',
    'service-account-issuer': `https://kubernetes.default.svc.${config.networking.dnsDomain}`,
    'service-account-key-file': at('sa.pub'),
    'service-account-signing-key-file': at('sa.key'),
    'service-cluster-ip-range': config.networking.serviceSubnet,
    'tls-cert-file': at('apiserver.crt'),
    'tls-private-key-file': at('apiserver.key'),
  };
  const pinned: ExtraArgs = { 'secure-port': String(port), ...sharing(instance), ...(instance === 'bootstrap' && { 'endpoint-reconciler-type': 'none' }) };
  return toArgs('apiServer', defaults, extra, pinned);
}

/**
 * Controllers the bootstrap controller-manager does not run. It lives for about a minute on an empty
 * cluster, to create and schedule the self-hosted control plane's and the addons' pods (Deployments,
 * ReplicaSets, DaemonSets, ServiceAccounts and their CA, node CIDRs and taints, EndpointSlices,
 * CSRs, bootstrap tokens); the self-hosted controller-manager runs every controller after the
 * hand-off. These have nothing to do in that minute, and the garbage collector and the quota
 * controller discover every API resource and watch each one: started one after another (in map
 * order) before the DaemonSet controller, they held up the self-hosted apiserver's pod by ≈ 1.4 s
 * on the bed, and their watches loaded the bootstrap apiserver while that pod started. Names as
 * kube-controller-manager v1.34 and v1.35 know them (an unknown name stops it from starting).
 */
export const BOOTSTRAP_IDLE_CONTROLLERS = [
  'garbage-collector-controller',
  'resourcequota-controller',
  'namespace-controller',
  'horizontal-pod-autoscaler-controller',
  'disruption-controller',
  'statefulset-controller',
  'cronjob-controller',
  'job-controller',
  'ttl-after-finished-controller',
  'replicationcontroller-controller',
  'endpointslice-mirroring-controller',
  'persistentvolume-binder-controller',
  'persistentvolume-attach-detach-controller',
  'persistentvolume-expander-controller',
  'persistentvolumeclaim-protection-controller',
  'persistentvolume-protection-controller',
  'ephemeral-volume-controller',
  'volumeattributesclass-protection-controller',
  'resourceclaim-controller',
  'validatingadmissionpolicy-status-controller',
  'legacy-serviceaccount-token-cleaner-controller',
  'taint-eviction-controller',
] as const;

/**
 * kube-controller-manager's flags: signs CSRs with the cluster CA (kubelet TLS bootstrapping),
 * allocates node CIDRs from `podSubnet`, runs the bootstrap-token controllers.
 * @param kubeconfig path of its kubeconfig inside the container.
 * @param port `--secure-port` (served on 127.0.0.1).
 * @throws ConfigError `config-invalid` for a reserved flag in `controllerManager.extraArgs`.
 */
export function controllerManagerFlags(config: ResolvedConfig, at: Locate, kubeconfig: string, port: number, instance: Instance): string[] {
  const defaults: ExtraArgs = {
    'allocate-node-cidrs': 'true',
    'authentication-kubeconfig': kubeconfig,
    'authorization-kubeconfig': kubeconfig,
    'bind-address': '127.0.0.1',
    'client-ca-file': at('ca.crt'),
    'cluster-cidr': config.networking.podSubnet,
    'cluster-name': 'kubernetes',
    'cluster-signing-cert-file': at('ca.crt'),
    'cluster-signing-key-file': at('ca.key'),
    // kubeadm's set: the bootstrapsigner signs cluster-info per token; the tokencleaner deletes a
    // token Secret when it expires. The join service still answers "expired" for a grace period from
    // kubeception's token index (lib/join/token-index.ts), which holds no secret.
    controllers: instance === 'bootstrap' ? ['*', 'bootstrapsigner', 'tokencleaner', ...BOOTSTRAP_IDLE_CONTROLLERS.map((c) => `-${c}`)].join(',') : '*,bootstrapsigner,tokencleaner',
    kubeconfig,
    'requestheader-client-ca-file': at('front-proxy-ca.crt'),
    'root-ca-file': at('ca.crt'),
    'service-account-private-key-file': at('sa.key'),
    'service-cluster-ip-range': config.networking.serviceSubnet,
    'use-service-account-credentials': 'true',
    ...NO_PROFILING,
  };
  const pinned: ExtraArgs = { ...election(instance), ...bootstrapClientLimits(instance), 'secure-port': String(port), ...sharing(instance) };
  return toArgs('controllerManager', defaults, config.controllerManager.extraArgs, pinned);
}

/**
 * kube-scheduler's flags.
 * @param kubeconfig path of its kubeconfig inside the container.
 * @param port `--secure-port` (served on 127.0.0.1).
 * @throws ConfigError `config-invalid` for a reserved flag in `scheduler.extraArgs`.
 */
export function schedulerFlags(config: ResolvedConfig, kubeconfig: string, port: number, instance: Instance): string[] {
  const defaults: ExtraArgs = {
    'authentication-kubeconfig': kubeconfig,
    'authorization-kubeconfig': kubeconfig,
    'bind-address': '127.0.0.1',
    kubeconfig,
    ...NO_PROFILING,
  };
  const pinned: ExtraArgs = { ...election(instance), ...bootstrapClientLimits(instance), 'secure-port': String(port), ...sharing(instance) };
  return toArgs('scheduler', defaults, config.scheduler.extraArgs, pinned);
}
