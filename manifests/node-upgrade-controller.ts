/**
 * The node upgrade controller and its agents as cluster objects (see lib/node-upgrade/): a
 * one-replica Deployment of kubeception's image (`kubeception node-upgrade-controller`) on a
 * control-plane node, and per Node of a batch a Job, the agent, pinned to that Node.
 *
 * The controller's ServiceAccount reads and lists NodeUpgradePlans and writes their status; gets,
 * lists and patches Nodes (cordon, uncordon); lists pods and evicts them (the Eviction API: PodDisruptionBudgets
 * honoured); creates and reads the agent Jobs in kube-system only (a Role there). It reads no Secret.
 *
 * The agent is privileged (it changes the host): it runs as root with the host's network, the host's
 * `/` mounted at /host, and chroots into it to run the host's `kubeception upgrade node` from the
 * site directory, so the distro's task (e.g. Kubic's `kubelet-install`), the kubelet's files and
 * systemd (over the host's D-Bus) are the host's own. Its credentials are its ServiceAccount's token,
 * written for the run into a kubeconfig under the host's /run (mode 0600, removed when it ends); that
 * ServiceAccount may get and patch Nodes, list pods and evict them: what `upgrade node`'s drain needs.
 * @see https://kubernetes.io/docs/concepts/scheduling-eviction/api-eviction/
 */
import { createHash } from 'node:crypto';
import type { V1ClusterRole, V1ClusterRoleBinding, V1Deployment, V1Job, V1Role, V1RoleBinding, V1ServiceAccount } from '@kubernetes/client-node';
import { NODE_UPGRADE_GROUP, NODE_UPGRADE_PLURAL, type AgentSettings } from '../lib/node-upgrade/types.ts';
import { MANAGED_BY, NAMESPACE, type Manifest } from './common.ts';
import { restrictedPod } from './join-service.ts';

export const NODE_UPGRADE_CONTROLLER_NAME = 'kubeception-node-upgrade-controller';
export const NODE_UPGRADE_AGENT_NAME = 'kubeception-node-upgrade-agent';
/** The controller's environment variable naming the agent's image. */
export const AGENT_IMAGE_ENV = 'KUBECEPTION_AGENT_IMAGE';
/** The controller's environment variables giving the agent's site directory and command (a JSON array of strings). */
export const AGENT_SITE_DIR_ENV = 'KUBECEPTION_AGENT_SITE_DIR';
export const AGENT_COMMAND_ENV = 'KUBECEPTION_AGENT_COMMAND';
/** Annotations on an agent Job: the Node and the target it upgrades to. */
export const AGENT_NODE_ANNOTATION = 'kubeception.io/node';
export const AGENT_TARGET_ANNOTATION = 'kubeception.io/target-version';
/** Where on the host the agent writes its kubeconfig for the run. */
const AGENT_RUN_DIR = '/run/kubeception-upgrade-agent';

const labels = (name: string) => ({ ...MANAGED_BY, 'app.kubernetes.io/name': name });

const role = (name: string, rules: V1ClusterRole['rules']): [Manifest<V1ServiceAccount>, Manifest<V1ClusterRole>, Manifest<V1ClusterRoleBinding>] => [
  { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace: NAMESPACE, labels: labels(name) } },
  { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: `kubeception:${name.replace(/^kubeception-/, '')}`, labels: labels(name) }, rules },
  {
    apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: `kubeception:${name.replace(/^kubeception-/, '')}`, labels: labels(name) },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: `kubeception:${name.replace(/^kubeception-/, '')}` },
    subjects: [{ kind: 'ServiceAccount', name, namespace: NAMESPACE }],
  },
];

const drainRules = [
  { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'patch'] },
  { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list'] },
  { apiGroups: [''], resources: ['pods/eviction'], verbs: ['create'] },
];

/** The controller's and the agent's ServiceAccounts and RBAC. Pure. */
export function nodeUpgradeRbac(): (Manifest<V1ServiceAccount> | Manifest<V1ClusterRole> | Manifest<V1ClusterRoleBinding> | Manifest<V1Role> | Manifest<V1RoleBinding>)[] {
  return [
    ...role(NODE_UPGRADE_CONTROLLER_NAME, [
      { apiGroups: [NODE_UPGRADE_GROUP], resources: [NODE_UPGRADE_PLURAL], verbs: ['get', 'list', 'watch'] },
      { apiGroups: [NODE_UPGRADE_GROUP], resources: [`${NODE_UPGRADE_PLURAL}/status`], verbs: ['get', 'update'] },
      ...drainRules,
    ]),
    // The agent Jobs (privileged) only in kube-system: a Role, so the controller's token cannot make a
    // Job in any other namespace.
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: JOBS_ROLE, namespace: NAMESPACE, labels: labels(NODE_UPGRADE_CONTROLLER_NAME) }, rules: [{ apiGroups: ['batch'], resources: ['jobs'], verbs: ['get', 'create'] }] },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: JOBS_ROLE, namespace: NAMESPACE, labels: labels(NODE_UPGRADE_CONTROLLER_NAME) },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: JOBS_ROLE },
      subjects: [{ kind: 'ServiceAccount', name: NODE_UPGRADE_CONTROLLER_NAME, namespace: NAMESPACE }],
    },
    ...role(NODE_UPGRADE_AGENT_NAME, drainRules),
  ];
}

const JOBS_ROLE = 'kubeception:node-upgrade-agent-jobs';

/**
 * RBAC and the controller's Deployment (`kubeception node-upgrade-controller`). `agent` (what the agent
 * runs on each host) goes into the Deployment's environment: only who may change kube-system's
 * Deployments decides what runs as root on the Nodes, not who may write a NodeUpgradePlan. Pure.
 */
export function nodeUpgradeControllerObjects(image: string, apiserverPort: number, agent: AgentSettings): (ReturnType<typeof nodeUpgradeRbac>[number] | Manifest<V1Deployment>)[] {
  const pod = restrictedPod(image, NODE_UPGRADE_CONTROLLER_NAME, ['node-upgrade-controller'], { cpu: '5m', memory: '128Mi', cpuLimit: '500m', memoryLimit: '320Mi' }, apiserverPort);
  return [
    ...nodeUpgradeRbac(),
    {
      apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: NODE_UPGRADE_CONTROLLER_NAME, namespace: NAMESPACE, labels: labels(NODE_UPGRADE_CONTROLLER_NAME) },
      spec: {
        replicas: 1,
        // Never two controllers at once (a surge would let two act on one plan).
        strategy: { type: 'Recreate' },
        selector: { matchLabels: { 'app.kubernetes.io/name': NODE_UPGRADE_CONTROLLER_NAME } },
        template: {
          metadata: { labels: labels(NODE_UPGRADE_CONTROLLER_NAME) },
          spec: {
            serviceAccountName: NODE_UPGRADE_CONTROLLER_NAME, automountServiceAccountToken: true,
            // It also tolerates a cordon: restarted while it upgrades the only control-plane node (cordoned
            // by itself), it must come back there to lift that cordon.
            nodeSelector: pod.nodeSelector, tolerations: [...(pod.tolerations ?? []), { key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoSchedule' }], securityContext: pod.securityContext,
            containers: [{ ...pod.container, env: [...pod.container.env, { name: AGENT_IMAGE_ENV, value: image }, { name: AGENT_SITE_DIR_ENV, value: agent.siteDir }, { name: AGENT_COMMAND_ENV, value: JSON.stringify(agent.command) }], volumeMounts: [{ name: 'tmp', mountPath: '/tmp' }] }],
            volumes: [{ name: 'tmp', emptyDir: { sizeLimit: '64Mi' } }],
          },
        },
      },
    },
  ];
}

/** The agent Job's name for one Node, plan and target: stable, so a restarted controller finds the Job it made. */
export function agentJobName(plan: string, node: string, target: string): string {
  return `kubeception-upgrade-${createHash('sha256').update(`${plan}\n${node}\n${target}`).digest('hex').slice(0, 12)}`;
}

/**
 * The shell the agent runs: a kubeconfig of its ServiceAccount token under the host's /run, then the
 * host's kubeception (`$2…`) in the site directory (`$1`), chrooted into the host's `/`.
 */
const AGENT_SCRIPT = [
  'set -eu',
  'umask 077',
  `d=/host${AGENT_RUN_DIR}`,
  'sa=/var/run/secrets/kubernetes.io/serviceaccount',
  'mkdir -p "$d"',
  "trap 'rm -rf \"$d\"' EXIT",
  'cp "$sa/ca.crt" "$d/ca.crt"',
  `printf 'apiVersion: v1\\nkind: Config\\nclusters:\\n- name: cluster\\n  cluster:\\n    server: https://%s:%s\\n    certificate-authority: ${AGENT_RUN_DIR}/ca.crt\\nusers:\\n- name: agent\\n  user:\\n    token: %s\\ncontexts:\\n- name: agent\\n  context:\\n    cluster: cluster\\n    user: agent\\ncurrent-context: agent\\n' "$KUBERNETES_SERVICE_HOST" "$KUBERNETES_SERVICE_PORT" "$(cat "$sa/token")" > "$d/kubeconfig"`,
  `chroot /host /bin/sh -c 'cd "$1" && shift && "$@" upgrade node --kubeconfig ${AGENT_RUN_DIR}/kubeconfig' agent "$@"`,
].join('\n');

/**
 * The agent Job for one Node: privileged, pinned to the Node (`nodeName`: no scheduler, no cordon in
 * the way), tolerating every taint, never restarted (a failure stops the rollout; its pod's log says
 * why), deleted 24 h after it ends. Pure.
 */
export function agentJob(o: { plan: string; node: string; target: string; image: string; siteDir: string; command: readonly string[]; timeoutSeconds: number }): Manifest<V1Job> {
  return {
    apiVersion: 'batch/v1', kind: 'Job',
    metadata: { name: agentJobName(o.plan, o.node, o.target), namespace: NAMESPACE, labels: { ...labels(NODE_UPGRADE_AGENT_NAME), 'kubeception.io/plan': o.plan }, annotations: { [AGENT_NODE_ANNOTATION]: o.node, [AGENT_TARGET_ANNOTATION]: o.target } },
    spec: {
      backoffLimit: 0, activeDeadlineSeconds: o.timeoutSeconds, ttlSecondsAfterFinished: 86_400,
      template: {
        metadata: { labels: labels(NODE_UPGRADE_AGENT_NAME) },
        spec: {
          nodeName: o.node, restartPolicy: 'Never', hostNetwork: true, dnsPolicy: 'ClusterFirstWithHostNet', priorityClassName: 'system-node-critical',
          serviceAccountName: NODE_UPGRADE_AGENT_NAME, automountServiceAccountToken: true,
          tolerations: [{ operator: 'Exists' }],
          containers: [{
            name: 'agent', image: o.image, imagePullPolicy: 'IfNotPresent',
            command: ['/bin/sh', '-c', AGENT_SCRIPT, 'agent', o.siteDir, ...o.command],
            // A failure's last log lines (the CLI's `error <code>: …`) become the termination message the controller reads.
            terminationMessagePolicy: 'FallbackToLogsOnError',
            securityContext: { privileged: true, runAsUser: 0, runAsGroup: 0 },
            volumeMounts: [{ name: 'host', mountPath: '/host' }],
          }],
          volumes: [{ name: 'host', hostPath: { path: '/', type: 'Directory' } }],
        },
      },
    },
  };
}
