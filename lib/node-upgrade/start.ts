/**
 * What `kubeception upgrade apply vX.Y.Z --nodes` does once the control plane is at vX.Y.Z: the
 * NodeUpgradePlan CRD, the controller (RBAC, Deployment) and the plan `kubelet` for vX.Y.Z, so the
 * controller rolls every Node's kubelet in batches.
 *
 * Cluster effects: the CRD and the controller's objects applied (server-side apply); the plan created,
 * or — when a finished plan exists (Complete, Failed or RolledBack, of another target; Failed or
 * RolledBack of the same target: a new try once the cause is fixed) — that plan and its agent Jobs
 * (with their pods) deleted and a new one created. A plan at the same target that is under way or
 * Complete is left as it is (a re-run changes nothing).
 * @throws KubeceptionError `node-rollout-busy` when a plan of another target is still under way.
 */
import { KubeceptionError } from '../errors.ts';
import type { Cluster, KubernetesObject } from '../k8s/client.ts';
import { pollUntil } from '../util/poll.ts';
import { nodeUpgradeCrd } from '../../manifests/node-upgrade.ts';
import { nodeUpgradeControllerObjects } from '../../manifests/node-upgrade-controller.ts';
import { DEFAULT_PLAN_NAME, NODE_UPGRADE_API_VERSION, NODE_UPGRADE_KIND, type AgentSettings, type NodeUpgradePlan, type NodeUpgradePlanSpec } from './types.ts';

export interface NodeRolloutOptions {
  /** The controller's and agents' image (the config's `joinService.image`). */
  image: string;
  /** The apiserver port the controller's pod talks to (`localAPIEndpoint.bindPort`). */
  apiserverPort: number;
  /** What the agent runs on each host: into the controller's Deployment, not the plan. */
  agent: AgentSettings;
  /** The plan's spec beyond `targetVersion` (maxUnavailable, nodeSelector, …). */
  spec?: Omit<NodeUpgradePlanSpec, 'targetVersion'>;
  signal?: AbortSignal;
}

/** Applies the CRD and the controller, then creates the plan. @returns one line saying what was done. */
export async function startNodeRollout(api: Cluster, targetVersion: string, o: NodeRolloutOptions): Promise<string> {
  await api.apply([nodeUpgradeCrd(), ...nodeUpgradeControllerObjects(o.image, o.apiserverPort, o.agent)]);
  const ref = { apiVersion: NODE_UPGRADE_API_VERSION, kind: NODE_UPGRADE_KIND, metadata: { name: DEFAULT_PLAN_NAME } };
  // The CRD serves its kind a moment after it is created (Established): until then a list fails.
  const served = await pollUntil(() => api.list(NODE_UPGRADE_API_VERSION, NODE_UPGRADE_KIND).then(() => true, () => undefined), { timeoutMs: 30_000, intervalMs: 500, signal: o.signal });
  if (!served) throw new KubeceptionError('crd-not-served', { what: 'CustomResourceDefinition nodeupgradeplans.kubeception.io', why: 'NodeUpgradePlans were not served within 30 s of applying it', fix: 'check `kubectl get crd nodeupgradeplans.kubeception.io -o yaml` (its Established condition), then run the command again' });
  const old = await api.read<NodeUpgradePlan & KubernetesObject>(ref);
  const phase = old?.status?.phase ?? 'Pending';
  const ended = phase === 'Failed' || phase === 'RolledBack';
  if (old?.spec.targetVersion === targetVersion && !ended) return `NodeUpgradePlan ${DEFAULT_PLAN_NAME} for ${targetVersion} exists (${phase}): left as it is`;
  if (old && phase !== 'Complete' && !ended)
    throw new KubeceptionError('node-rollout-busy', { what: `NodeUpgradePlan ${DEFAULT_PLAN_NAME}`, why: `a rollout to ${old.spec.targetVersion} is ${phase}`, fix: '`kubeception upgrade status` shows it; let it finish (or delete the plan) before rolling the Nodes to another version' });
  if (old) {
    // Its agent Jobs go first: a new plan's Job for the same Node and target has the same name.
    const jobs = () => api.list(`batch/v1`, 'Job', 'kube-system', `kubeception.io/plan=${DEFAULT_PLAN_NAME}`);
    for (const j of await jobs()) await api.delete({ apiVersion: 'batch/v1', kind: 'Job', metadata: { name: j.metadata?.name, namespace: 'kube-system' } }, { propagationPolicy: 'Background' });
    await api.delete(ref);
    const gone = await pollUntil(async () => ((await jobs()).length ? undefined : true), { timeoutMs: 30_000, intervalMs: 500, signal: o.signal });
    if (!gone) throw new KubeceptionError('node-rollout-busy', { what: `NodeUpgradePlan ${DEFAULT_PLAN_NAME}`, why: "the old plan's agent Jobs were not gone within 30 s", fix: 'run the command again' });
  }
  const plan = { ...ref, spec: { ...o.spec, targetVersion } };
  const created = await pollUntil(() => api.create(plan).then((ok) => ok || undefined), { timeoutMs: 30_000, intervalMs: 500, signal: o.signal });
  if (!created) throw new KubeceptionError('node-rollout-busy', { what: `NodeUpgradePlan ${DEFAULT_PLAN_NAME}`, why: 'the old plan was not gone within 30 s', fix: 'run the command again' });
  return `NodeUpgradePlan ${DEFAULT_PLAN_NAME} created: the Nodes' kubelets roll to ${targetVersion} (\`kubeception upgrade status\`)`;
}
