/**
 * Pieces every manifest builder shares: the namespace, labels, images, tolerations, volumes and
 * probes, and the port scheme that lets the bootstrap and the self-hosted control plane run side by
 * side on one node. Pure data: same config in, deep-equal objects out. Helpers return fresh objects,
 * so no two manifests share a nested object.
 */
import type {
  KubernetesObject, V1ClusterRoleBinding, V1ConfigMap, V1DaemonSet, V1Deployment, V1PodDisruptionBudget, V1Probe, V1Secret, V1ServiceAccount,
  V1ObjectMeta, V1Toleration, V1Volume, V1VolumeMount,
} from '@kubernetes/client-node';
import { CONTROL_PLANE_LABEL, CONTROLLER_MANAGER_PORT, SCHEDULER_PORT } from '../lib/constants.ts';
import type { ResolvedConfig } from '../lib/types.ts';

/** Every control-plane object lives here. */
export const NAMESPACE = 'kube-system';

/** Label on every object kubeception writes (the recommended `app.kubernetes.io/managed-by`). */
export const MANAGED_BY = { 'app.kubernetes.io/managed-by': 'kubeception' } as const;

/** Components that have a control-plane image (`${imageRepository}/<name>:${kubernetesVersion}`). */
export type ImageName = 'kube-apiserver' | 'kube-controller-manager' | 'kube-scheduler' | 'kube-proxy';

/** `--secure-port` of the bootstrap kube-controller-manager (healthz, metrics) on 127.0.0.1. */
export const BOOTSTRAP_CONTROLLER_MANAGER_PORT = 10357;
/** `--secure-port` of the bootstrap kube-scheduler (healthz, metrics) on 127.0.0.1. */
export const BOOTSTRAP_SCHEDULER_PORT = 10359;
/** kube-proxy's healthz (all addresses) and metrics (127.0.0.1) ports: its defaults. */
export const KUBE_PROXY_HEALTHZ_PORT = 10256;
export const KUBE_PROXY_METRICS_PORT = 10249;

/**
 * The port scheme. The bootstrap and self-hosted instances of each component run `hostNetwork` on
 * the same node at the same time (until the static manifests are removed), so their serving ports
 * must differ: the self-hosted instances keep the well-known ports (6443 or `bindPort`, 10257,
 * 10259: what monitoring and kubeadm's docs expect, and what stays after the hand-off), the
 * bootstrap instances take `bootstrapAPIEndpoint.bindPort` (6444) and the well-known port + 100.
 * Waits can then tell the two apart by port. Controller-manager and scheduler serve on 127.0.0.1
 * only (kubeadm's `bind-address`), the apiservers on every address.
 */
export function controlPlanePorts(config: ResolvedConfig) {
  return {
    bootstrap: { apiServer: config.bootstrapAPIEndpoint.bindPort, controllerManager: BOOTSTRAP_CONTROLLER_MANAGER_PORT, scheduler: BOOTSTRAP_SCHEDULER_PORT },
    selfHosted: { apiServer: config.localAPIEndpoint.bindPort, controllerManager: CONTROLLER_MANAGER_PORT, scheduler: SCHEDULER_PORT },
  };
}

/** A model type with the fields every manifest sets made required: `apiVersion`, `kind`, `metadata.name`. */
export type Manifest<T extends KubernetesObject> = T & { apiVersion: string; kind: string; metadata: V1ObjectMeta & { name: string } };

/** Any object the cluster-object builders return; each is a `KubernetesObject` (what `Cluster.apply` takes). */
export type ManifestObject =
  | Manifest<V1ServiceAccount> | Manifest<V1ClusterRoleBinding> | Manifest<V1Secret> | Manifest<V1ConfigMap> | Manifest<V1DaemonSet> | Manifest<V1Deployment> | Manifest<V1PodDisruptionBudget>;

/** `registry.k8s.io/kube-apiserver:v1.34.4` from `imageRepository` and `kubernetesVersion`. */
export function image(config: ResolvedConfig, name: ImageName): string {
  return `${config.imageRepository}/${name}:${config.kubernetesVersion}`;
}

/** Labels of a control-plane pod: kubeadm's `component` and `tier`, plus {@link MANAGED_BY}. */
export function componentLabels(component: string): Record<string, string> {
  return { component, tier: 'control-plane', ...MANAGED_BY };
}

/**
 * Tolerations of the self-hosted control plane: the control-plane taint, and `not-ready` /
 * `unreachable` for ever (any effect), so a node whose CNI is not up yet still runs its control plane
 * and nothing evicts it. kube-proxy tolerates everything instead (kubeadm's `operator: Exists`).
 */
export const controlPlaneTolerations = (): V1Toleration[] => [
  { key: CONTROL_PLANE_LABEL, operator: 'Exists', effect: 'NoSchedule' },
  { key: 'node.kubernetes.io/not-ready', operator: 'Exists' },
  { key: 'node.kubernetes.io/unreachable', operator: 'Exists' },
];

/** `nodeSelector` of the self-hosted control plane: nodes labelled `node-role.kubernetes.io/control-plane: ""`. */
export const controlPlaneSelector = (): Record<string, string> => ({ [CONTROL_PLANE_LABEL]: '' });

/**
 * A read-only hostPath volume and its mount at the same path inside the container (kubeadm's way,
 * so flags name host paths). `type` makes the kubelet fail the pod if the path is missing.
 */
export function hostPathMount(name: string, path: string, type: 'Directory' | 'File'): { volume: V1Volume; mount: V1VolumeMount } {
  return { volume: { name, hostPath: { path, type } }, mount: { name, mountPath: path, readOnly: true } };
}

/**
 * An HTTPS GET probe for control-plane components, kubeadm's timings except the startup probe's.
 * `host` is a bare IP (the kubelet brackets IPv6 itself); `kind` picks the thresholds:
 * liveness 8 × 10 s, readiness 3 × 1 s, startup 240 × 1 s (kubeadm's 4-minute start budget, asked
 * every second where kubeadm asks every 10 s from 10 s on).
 * @see kubernetes/cmd/kubeadm/app/util/staticpod/utils.go (LivenessProbe, ReadinessProbe, StartupProbe)
 */
export function httpsProbe(kind: 'liveness' | 'readiness' | 'startup', host: string, port: number, path: string): V1Probe {
  const timing = {
    liveness: { initialDelaySeconds: 10, periodSeconds: 10, failureThreshold: 8 },
    readiness: { periodSeconds: 1, failureThreshold: 3 },
    // Every second for up to 240 s (kubeadm: from 10 s on, every 10 s, 24 times — the same budget):
    // a pod is Ready, and a rollout or the bootstrap moves on, within a second of its serving
    // instead of at the next 10 s mark; one GET a second only while it starts.
    startup: { periodSeconds: 1, failureThreshold: 240 },
  }[kind];
  // No host: the kubelet probes the pod's IP (a host-network pod's is its node's).
  return { httpGet: { ...(host && { host }), port, path, scheme: 'HTTPS' }, timeoutSeconds: 15, ...timing };
}

/**
 * The address a probe reaches a component on: its `bind-address` from `extraArgs` if that is one
 * address, else `fallback` (kubeadm's `getProbeAddress`). A bare IP, unbracketed.
 */
export function probeHost(extraArgs: Record<string, string>, fallback: string): string {
  const bind = extraArgs['bind-address'];
  return bind && bind !== '0.0.0.0' && bind !== '::' ? bind : fallback;
}
