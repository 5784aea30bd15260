/**
 * The self-hosted control plane as cluster objects (bootkube's self-hosted assets): the
 * kube-apiserver DaemonSet on `localAPIEndpoint.bindPort`, and kube-controller-manager and
 * kube-scheduler Deployments on 10257 / 10259, all `hostNetwork` on nodes labelled
 * `node-role.kubernetes.io/control-plane`, reading their PKI and kubeconfigs from the node they run on
 * (read-only hostPath mounts at the host's paths; see ./self-hosted-inputs.ts for why not Secrets).
 *
 * Rolling updates surge (`maxSurge: 1, maxUnavailable: 0`) and every self-hosted component runs
 * `--permit-port-sharing` (SO_REUSEPORT), so a new pod binds the same port while the old one still
 * serves. The usual `maxUnavailable: 1` deadlocks on a single control-plane node: the DaemonSet
 * controller deletes the only apiserver and then needs that apiserver to create its replacement;
 * the only scheduler's replacement has no scheduler to place it; the only controller-manager may
 * exit before its ReplicaSet controller creates the new pod. Pods declare no `ports`, so the
 * scheduler's host-port check does not block the surge pod. While a surge lasts the kernel spreads
 * connections over both instances, so a new apiserver that is still starting answers some requests
 * (403/503, or not at all yet; clients retry), and the kubelet's probes of either pod reach either
 * instance. A new kube-apiserver binds the port within a second of its start (before it opens
 * storage) but may not serve for tens of seconds on a loaded host; with kubeadm's probes its pod was
 * Ready at once on answers from the old instance, and the old one went after `minReadySeconds`
 * whether the new one served or not (seen on the bed, 2026-12-07: a surge instance held stopped
 * after it bound the port had the old pod removed; in CI, `secrets rotate-key` once left a 47 s
 * `/readyz` gap: 12 unanswered, 13 × 403, 445 × 500 — an instance that began serving after the old
 * one had gone). So the apiserver's readiness is asymmetric ({@link apiServerReadiness}): a new pod
 * turns Ready only after {@link APISERVER_READY_IN_A_ROW} answered probes in a row — each a new
 * connection, which reaches a bound but unready new instance about half the time — and a Ready pod
 * turns unready only after as many failures in a row, because the DaemonSet controller removes an
 * old pod that turns unready while a surge pod exists (seen: with a failureThreshold of 1 the old
 * pod's own probes met the stopped new instance and it was removed 12 s in). Left: a new instance
 * that has not bound the port for all of those probes passes (it binds in its first second), and a
 * broken new pod that answers 200 (a bad image) replaces the old one; recovery from that is
 * re-running the bootstrap.
 *
 * The final apiserver keeps the default endpoint reconciler (lease) and owns the `kubernetes`
 * Service's endpoints.
 * @see https://github.com/kubernetes-retired/bootkube/blob/master/Documentation/design-principles.md
 * @see https://kubernetes.io/docs/tasks/manage-daemon/update-daemon-set/
 */
import { join } from 'node:path';
import type { V1ClusterRoleBinding, V1DaemonSet, V1Deployment, V1PodDisruptionBudget, V1PodTemplateSpec, V1Probe } from '@kubernetes/client-node';
import { CLUSTER_ADMINS_GROUP } from '../lib/pki/certs.ts';
import type { ResolvedConfig } from '../lib/types.ts';
import {
  componentLabels, controlPlaneSelector, controlPlaneTolerations, controlPlanePorts, hostPathMount, httpsProbe, image, MANAGED_BY,
  NAMESPACE, probeHost, type Manifest, type ManifestObject,
} from './common.ts';
import { kubeconfigPaths } from '../lib/k8s/endpoints.ts';
import { hardeningMounts } from './apiserver-hardening.ts';
import { apiServerFlags, controllerManagerFlags, schedulerFlags, type Locate } from './flags.ts';
import { checkInputs, FILES_DIGEST, filesDigest, selfHostedServiceAccounts, SELF_HOSTED_COMPONENTS, type SelfHostedComponent, type SelfHostedInputs } from './self-hosted-inputs.ts';

export type { SelfHostedInputs } from './self-hosted-inputs.ts';

/** The host's read-only mounts each component gets: `certificatesDir` (apiserver, controller-manager) and its one kubeconfig file (controllers). */
function hostMounts(config: ResolvedConfig, component: SelfHostedComponent): ReturnType<typeof hostPathMount>[] {
  const kc = kubeconfigPaths(config);
  const pki = hostPathMount('k8s-certs', config.certificatesDir, 'Directory');
  if (component === 'kube-apiserver') return [pki, ...hardeningMounts(config)];
  if (component === 'kube-controller-manager') return [pki, hostPathMount('kubeconfig', kc.controllerManager, 'File')];
  return [hostPathMount('kubeconfig', kc.scheduler, 'File')];
}

/** The pod template every self-hosted component shares; `component` names its SA and container. */
function podTemplate(config: ResolvedConfig, component: SelfHostedComponent, args: string[], probe: (kind: 'liveness' | 'readiness' | 'startup') => V1Probe): V1PodTemplateSpec {
  const mounts = hostMounts(config, component);
  return {
    metadata: { labels: componentLabels(component) },
    spec: {
      hostNetwork: true,
      priorityClassName: 'system-node-critical',
      serviceAccountName: component,
      automountServiceAccountToken: false,
      nodeSelector: controlPlaneSelector(),
      tolerations: controlPlaneTolerations(),
      containers: [{
        name: component,
        image: image(config, component),
        imagePullPolicy: 'IfNotPresent',
        command: [component, ...args],
        volumeMounts: mounts.map((m) => m.mount),
        startupProbe: probe('startup'),
        livenessProbe: probe('liveness'),
        readinessProbe: probe('readiness'),
      }],
      volumes: mounts.map((m) => m.volume),
    },
  };
}

const metadata = (name: string) => ({ name, namespace: NAMESPACE, labels: componentLabels(name) });
const selector = (component: string) => ({ matchLabels: { component, tier: 'control-plane' } });
const surge = () => ({ type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } });

/**
 * Answered `/readyz` probes in a row (1 s apart) before a kube-apiserver pod turns Ready, and failed
 * ones before it turns unready. While a surge pod's instance is bound but not ready each probe fails
 * with p ≈ ½, so it passes for ready with p ≈ 2⁻¹⁵ per try; a try ends at the first failure, and a
 * probe that meets an instance which does not answer yet takes `timeoutSeconds` (15 s) to fail.
 */
export const APISERVER_READY_IN_A_ROW = 15;

/** Seconds a surge kube-apiserver pod must stay Ready before the old one is removed (it is Ready only after {@link APISERVER_READY_IN_A_ROW} answered probes). */
export const APISERVER_MIN_READY_SECONDS = 10;

/**
 * The kube-apiserver's readiness probe: kubeadm's (`/readyz`, 1 s, 15 s timeout) with
 * {@link APISERVER_READY_IN_A_ROW} as both success and failure threshold (see the module docstring).
 */
export function apiServerReadiness(host: string, port: number): V1Probe {
  return { ...httpsProbe('readiness', host, port, '/readyz'), successThreshold: APISERVER_READY_IN_A_ROW, failureThreshold: APISERVER_READY_IN_A_ROW };
}

/** Where the components find their PKI files: the host's `certificatesDir`, mounted at the same path. */
const onHost = (config: ResolvedConfig): Locate => (file) => join(config.certificatesDir, file);

/** The environment variable the apiserver's `--advertise-address` reads: the node's IP (downward API). */
export const HOST_IP_ENV = 'HOST_IP';

/**
 * The kube-apiserver DaemonSet: one pod per control-plane node, each advertising its own node's IP
 * (`--advertise-address=$(HOST_IP)`, `status.hostIP`), so the `kubernetes` Service lists every
 * control-plane node; probes `/livez`, `/readyz` on the pod's IP (the node's: host network) and
 * `bindPort`, unless `apiServer.extraArgs` pins a `bind-address`.
 */
export function apiServerDaemonSet(config: ResolvedConfig): Manifest<V1DaemonSet> {
  const port = controlPlanePorts(config).selfHosted.apiServer;
  const host = probeHost(config.apiServer.extraArgs, '');
  const args = apiServerFlags(config, onHost(config), port, 'self-hosted');
  const template = podTemplate(config, 'kube-apiserver', args, (kind) => (kind === 'readiness' ? apiServerReadiness(host, port) : httpsProbe(kind, host, port, '/livez')));
  template.spec!.containers[0]!.env = [{ name: HOST_IP_ENV, valueFrom: { fieldRef: { fieldPath: 'status.hostIP' } } }];
  return { apiVersion: 'apps/v1', kind: 'DaemonSet', metadata: metadata('kube-apiserver'), spec: { selector: selector('kube-apiserver'), updateStrategy: surge(), minReadySeconds: APISERVER_MIN_READY_SECONDS, template } };
}

/**
 * A controller's Deployment: one replica per control-plane node (`replicas`, at least 1), spread by a
 * *preferred* pod anti-affinity on `kubernetes.io/hostname` — a required one would leave a surge
 * pod unschedulable once every control-plane node runs a replica — with leader election choosing
 * the active one. Probes `/healthz` on its port.
 */
function controllerDeployment(config: ResolvedConfig, component: 'kube-controller-manager' | 'kube-scheduler', args: string[], port: number, extraArgs: Record<string, string>, replicas: number): Manifest<V1Deployment> {
  const host = probeHost(extraArgs, '127.0.0.1');
  const template = podTemplate(config, component, args, (kind) => httpsProbe(kind, host, port, '/healthz'));
  template.spec!.affinity = {
    podAntiAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 100, podAffinityTerm: { topologyKey: 'kubernetes.io/hostname', labelSelector: selector(component) } }] },
  };
  return { apiVersion: 'apps/v1', kind: 'Deployment', metadata: metadata(component), spec: { replicas: Math.max(1, replicas), selector: selector(component), strategy: surge(), template } };
}

/** The kube-controller-manager Deployment (its node's controller-manager.conf: the node-local apiserver). */
export function controllerManagerDeployment(config: ResolvedConfig, replicas = 1): Manifest<V1Deployment> {
  const port = controlPlanePorts(config).selfHosted.controllerManager;
  const args = controllerManagerFlags(config, onHost(config), kubeconfigPaths(config).controllerManager, port, 'self-hosted');
  return controllerDeployment(config, 'kube-controller-manager', args, port, config.controllerManager.extraArgs, replicas);
}

/** The kube-scheduler Deployment (its node's scheduler.conf: the node-local apiserver). */
export function schedulerDeployment(config: ResolvedConfig, replicas = 1): Manifest<V1Deployment> {
  const port = controlPlanePorts(config).selfHosted.scheduler;
  const args = schedulerFlags(config, kubeconfigPaths(config).scheduler, port, 'self-hosted');
  return controllerDeployment(config, 'kube-scheduler', args, port, config.scheduler.extraArgs, replicas);
}

/**
 * PodDisruptionBudgets of the controllers: at most one replica evicted at a time (`maxUnavailable: 1`,
 * so a drain of a single control-plane node still goes through; with three replicas, two stay).
 */
export function controllerDisruptionBudgets(): Manifest<V1PodDisruptionBudget>[] {
  return (['kube-controller-manager', 'kube-scheduler'] as const).map((c) => ({
    apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: metadata(c), spec: { maxUnavailable: 1, selector: selector(c) },
  }));
}

/**
 * kubeadm's `kubeadm:cluster-admins` binding: cluster-admin for the group of the
 * `apiserver-kubelet-client` certificate, which the kubelets' webhook authorizer checks on
 * `kubectl logs/exec/port-forward`. The controllers' users already have their roles in the RBAC
 * bootstrap policy (`system:kube-controller-manager`, `system:kube-scheduler`).
 * @see kubernetes/cmd/kubeadm/app/phases/kubeconfig/kubeconfig.go (EnsureAdminClusterRoleBinding)
 */
export function clusterAdminsBinding(): Manifest<V1ClusterRoleBinding> {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: CLUSTER_ADMINS_GROUP, labels: { ...MANAGED_BY } },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: CLUSTER_ADMINS_GROUP }],
  };
}

/**
 * Every self-hosted object, in apply order: ServiceAccounts, RBAC, then the apiserver DaemonSet, the
 * controllers' PodDisruptionBudgets and the controller-manager and scheduler Deployments. No Secret:
 * the pods read their node's files.
 * @param inputs this node's files the components read (see {@link SelfHostedInputs}): checked, and
 *   hashed into each pod template ({@link FILES_DIGEST}), so renewed files roll the workload.
 * @param opts.controlPlaneNodes the number of control-plane nodes: the controllers' replicas (default 1).
 * @throws KubeceptionError `self-hosted-input` for a missing PEM or a kubeconfig not pointing at the final apiserver.
 * @throws ConfigError `config-invalid` if an `extraArgs` section sets a reserved flag (see `RESERVED_FLAGS`).
 */
export function selfHostedObjects(config: ResolvedConfig, inputs: SelfHostedInputs, opts: { controlPlaneNodes?: number } = {}): ManifestObject[] {
  checkInputs(config, inputs);
  const digest = (c: SelfHostedComponent) => filesDigest(c, inputs);
  return [
    ...selfHostedServiceAccounts(),
    clusterAdminsBinding(),
    withFilesDigest(apiServerDaemonSet(config), digest('kube-apiserver')),
    ...controllerDisruptionBudgets(),
    withFilesDigest(controllerManagerDeployment(config, opts.controlPlaneNodes), digest('kube-controller-manager')),
    withFilesDigest(schedulerDeployment(config, opts.controlPlaneNodes), digest('kube-scheduler')),
  ];
}

export { FILES_DIGEST, SELF_HOSTED_COMPONENTS };

/**
 * Puts the digest of the component's files on its pod template, so changed files (renewed
 * certificates) roll the workload (surge: the old pod serves until the new one is ready) instead of
 * leaving pods on certificates they loaded at start.
 */
function withFilesDigest<T extends Manifest<V1DaemonSet> | Manifest<V1Deployment>>(o: T, digest: string): T {
  const t = o.spec!.template;
  t.metadata = { ...t.metadata, annotations: { ...t.metadata?.annotations, [FILES_DIGEST]: digest } };
  return o;
}
