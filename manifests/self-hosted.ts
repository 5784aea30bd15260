/**
 * The self-hosted control plane as cluster objects (bootkube's self-hosted assets): the
 * kube-apiserver DaemonSet on `localAPIEndpoint.bindPort`, and kube-controller-manager and
 * kube-scheduler Deployments on 10257 / 10259, all `hostNetwork` on nodes labelled
 * `node-role.kubernetes.io/control-plane`, reading their PKI and kubeconfigs from Secrets.
 *
 * Rolling updates surge (`maxSurge: 1, maxUnavailable: 0`) and every self-hosted component runs
 * `--permit-port-sharing` (SO_REUSEPORT), so a new pod binds the same port while the old one still
 * serves. The usual `maxUnavailable: 1` deadlocks on a single control-plane node: the DaemonSet
 * controller deletes the only apiserver and then needs that apiserver to create its replacement;
 * the only scheduler's replacement has no scheduler to place it; the only controller-manager may
 * exit before its ReplicaSet controller creates the new pod. Pods declare no `ports`, so the
 * scheduler's host-port check does not block the surge pod. Caveats, both for the seconds a surge
 * lasts: the kernel spreads connections over both instances, so a new apiserver that is still
 * starting answers some requests (403/503; clients retry), and probes cannot tell the instances
 * apart, so a broken new pod may pass for ready; recovery from a bad image is re-running the bootstrap.
 *
 * The final apiserver keeps the default endpoint reconciler (lease) and owns the `kubernetes`
 * Service's endpoints.
 * @see https://github.com/kubernetes-retired/bootkube/blob/master/Documentation/design-principles.md
 * @see https://kubernetes.io/docs/tasks/manage-daemon/update-daemon-set/
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import type { V1ClusterRoleBinding, V1DaemonSet, V1Deployment, V1PodDisruptionBudget, V1PodTemplateSpec, V1Probe } from '@kubernetes/client-node';
import { CLUSTER_ADMINS_GROUP } from '../lib/pki/certs.ts';
import type { ResolvedConfig } from '../lib/types.ts';
import {
  componentLabels, controlPlaneSelector, controlPlaneTolerations, controlPlanePorts, httpsProbe, image, MANAGED_BY,
  NAMESPACE, probeHost, type Manifest, type ManifestObject,
} from './common.ts';
import { apiServerFlags, controllerManagerFlags, PKI_FILES, schedulerFlags, type Locate } from './flags.ts';
import {
  KUBECONFIG_KEY, SECRET_MOUNT, selfHostedSecrets, selfHostedServiceAccounts, type SelfHostedComponent, type SelfHostedSecrets,
} from './self-hosted-secrets.ts';

export type { SelfHostedSecrets } from './self-hosted-secrets.ts';

/** Paths of the Secret's files inside the container. */
const inSecret: Locate = (file) => join(SECRET_MOUNT, PKI_FILES[file]);
const kubeconfigInSecret = join(SECRET_MOUNT, KUBECONFIG_KEY);

/** The pod template every self-hosted component shares; `component` names its Secret, SA and container. */
function podTemplate(config: ResolvedConfig, component: SelfHostedComponent, args: string[], probe: (kind: 'liveness' | 'readiness' | 'startup') => V1Probe): V1PodTemplateSpec {
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
        volumeMounts: [{ name: 'secrets', mountPath: SECRET_MOUNT, readOnly: true }],
        startupProbe: probe('startup'),
        livenessProbe: probe('liveness'),
        readinessProbe: probe('readiness'),
      }],
      volumes: [{ name: 'secrets', secret: { secretName: component, defaultMode: 0o400 } }],
    },
  };
}

const metadata = (name: string) => ({ name, namespace: NAMESPACE, labels: componentLabels(name) });
const selector = (component: string) => ({ matchLabels: { component, tier: 'control-plane' } });
const surge = () => ({ type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } });

/** Seconds a surge kube-apiserver pod must stay ready before the old one is removed. */
export const APISERVER_MIN_READY_SECONDS = 30;

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
  const args = apiServerFlags(config, inSecret, port, 'self-hosted');
  const template = podTemplate(config, 'kube-apiserver', args, (kind) => httpsProbe(kind, host, port, kind === 'readiness' ? '/readyz' : '/livez'));
  template.spec!.containers[0]!.env = [{ name: HOST_IP_ENV, valueFrom: { fieldRef: { fieldPath: 'status.hostIP' } } }];
  // minReadySeconds: a surge pod's probes may be answered by the old instance (shared port), so give
  // the new one time to listen before the old one is removed.
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

/** The kube-controller-manager Deployment (kubeconfig from its Secret: the node-local apiserver). */
export function controllerManagerDeployment(config: ResolvedConfig, replicas = 1): Manifest<V1Deployment> {
  const port = controlPlanePorts(config).selfHosted.controllerManager;
  const args = controllerManagerFlags(config, inSecret, kubeconfigInSecret, port, 'self-hosted');
  return controllerDeployment(config, 'kube-controller-manager', args, port, config.controllerManager.extraArgs, replicas);
}

/** The kube-scheduler Deployment (kubeconfig from its Secret: the node-local apiserver). */
export function schedulerDeployment(config: ResolvedConfig, replicas = 1): Manifest<V1Deployment> {
  const port = controlPlanePorts(config).selfHosted.scheduler;
  const args = schedulerFlags(config, kubeconfigInSecret, port, 'self-hosted');
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
 * Every self-hosted object, in apply order: ServiceAccounts, RBAC, Secrets, then the apiserver
 * DaemonSet, the controllers' PodDisruptionBudgets and the controller-manager and scheduler Deployments.
 * @param secrets the files the Secrets carry (see {@link SelfHostedSecrets}).
 * @param opts.controlPlaneNodes the number of control-plane nodes: the controllers' replicas (default 1).
 * @throws KubeceptionError `self-hosted-input` for a missing PEM or a kubeconfig not pointing at the final apiserver.
 * @throws ConfigError `config-invalid` if an `extraArgs` section sets a reserved flag (see `RESERVED_FLAGS`).
 */
export function selfHostedObjects(config: ResolvedConfig, secrets: SelfHostedSecrets, opts: { controlPlaneNodes?: number } = {}): ManifestObject[] {
  const secretObjects = selfHostedSecrets(config, secrets);
  const digest = (name: string) => createHash('sha256').update(JSON.stringify(secretObjects.find((s) => s.metadata.name === name)?.data ?? {})).digest('hex');
  return [
    ...selfHostedServiceAccounts(),
    clusterAdminsBinding(),
    ...secretObjects,
    withSecretDigest(apiServerDaemonSet(config), digest('kube-apiserver')),
    ...controllerDisruptionBudgets(),
    withSecretDigest(controllerManagerDeployment(config, opts.controlPlaneNodes), digest('kube-controller-manager')),
    withSecretDigest(schedulerDeployment(config, opts.controlPlaneNodes), digest('kube-scheduler')),
  ];
}

/** Annotation on each self-hosted pod template: SHA-256 of its Secret's data. */
export const SECRET_DIGEST = 'kubeception.io/secret-sha256';

/**
 * Puts the Secret's digest on the pod template, so a changed Secret (renewed certificates) rolls the
 * workload (surge: the old pod serves until the new one is ready) instead of leaving pods on
 * certificates they loaded at start.
 */
function withSecretDigest<T extends Manifest<V1DaemonSet> | Manifest<V1Deployment>>(o: T, digest: string): T {
  const t = o.spec!.template;
  t.metadata = { ...t.metadata, annotations: { ...t.metadata?.annotations, [SECRET_DIGEST]: digest } };
  return o;
}
