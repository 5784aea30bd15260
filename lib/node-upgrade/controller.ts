/**
 * The node upgrade controller (`kubeception node-upgrade-controller`, the
 * kubeception-node-upgrade-controller Deployment): every `intervalMs` it reads each NodeUpgradePlan,
 * the Nodes, the pods and the agent Jobs, asks the planner (plan.ts) what to do, does it, and writes
 * the plan's status. Every action is idempotent and all its state is in the plan's status and on the
 * Nodes, so it may be stopped and started again at any point.
 *
 * Cluster effects: Nodes cordoned with the annotation `kubeception.io/upgrade-drained` (uncordoned
 * only while they carry it: an operator's cordon is never lifted); pods evicted through the Eviction
 * API (PodDisruptionBudgets honoured; DaemonSet, static and self-hosted control-plane pods stay); an
 * agent Job per Node (manifests/node-upgrade-controller.ts); the plans' status.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Cluster, type KubernetesObject, type V1Node, type V1Pod } from '../k8s/client.ts';
import { DRAINED_ANNOTATION, drainSkipReason } from '../steps/upgrade/upgrade-node.ts';
import { agentJob, agentJobName } from '../../manifests/node-upgrade-controller.ts';
import { healthGate, type PodFacts } from './health.ts';
import { planStep, type Action, type NodeFacts } from './plan.ts';
import { NODE_UPGRADE_API_VERSION, NODE_UPGRADE_KIND, NODE_UPGRADE_PLURAL, PLAN_DEFAULTS, type AgentSettings, type NodeUpgradePlan } from './types.ts';

type Job = KubernetesObject & { status?: { failed?: number; conditions?: { type: string; status: string; reason?: string; message?: string }[] } };

export interface ControllerOptions {
  /** The agent Jobs' image. */
  image: string;
  /** What the agent runs on each host (from the controller's Deployment, never from a plan). */
  agent: AgentSettings;
  /** Between two passes. Default 2 s. */
  intervalMs?: number;
  /** The clock (ms since the epoch); tests move it. */
  now?: () => number;
  log: (line: string) => void;
}

const nodeRef = (name: string) => ({ apiVersion: 'v1', kind: 'Node', metadata: { name } });
const podFacts = (p: V1Pod): PodFacts => ({
  namespace: p.metadata?.namespace ?? '', name: p.metadata?.name ?? '', phase: p.status?.phase ?? 'Pending',
  ready: p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false,
  controllerKind: p.metadata?.ownerReferences?.find((o) => o.controller)?.kind, terminating: !!p.metadata?.deletionTimestamp,
});
/** Pods a drain still has to move off `node` (what `upgrade node`'s drain waits for). */
const toEvict = (pods: readonly V1Pod[], node: string) => pods.filter((p) => p.spec?.nodeName === node && !drainSkipReason(p) && p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed');

/** The error code the agent's `upgrade node` ends with after rolling the kubelet back (lib/steps/upgrade/upgrade-node.ts). */
const ROLLED_BACK_CODE = 'error kubelet-upgrade-rolled-back:';

/**
 * Why a Job failed (with the first `error …` line of its pod's termination message — the agent's
 * last log lines, `FallbackToLogsOnError`), and whether the agent rolled the kubelet back; undefined
 * while it has not failed.
 */
function jobFailure(job: Job | undefined, pods: readonly V1Pod[]): { why: string; rolledBack: boolean } | undefined {
  const name = job?.metadata?.name;
  const c = job?.status?.conditions?.find((x) => x.type === 'Failed' && x.status === 'True');
  if (!c && !job?.status?.failed) return undefined;
  const pod = pods.find((p) => p.metadata?.namespace === job?.metadata?.namespace && p.metadata?.labels?.['job-name'] === name);
  const said = pod?.status?.containerStatuses?.[0]?.state?.terminated?.message ?? '';
  const lines = said.split('\n');
  const at = lines.findIndex((l) => l.startsWith('error '));
  // The CLI's `error <code>: <what>` and its `  why: …` line.
  const error = at < 0 ? undefined : [lines[at], lines[at + 1]?.startsWith('  why: ') ? lines[at + 1]!.trim() : undefined].filter(Boolean).join('; ').slice(0, 600);
  const why = c ? `Job ${name} ${c.reason ?? 'Failed'}${c.message ? `: ${c.message}` : ''}` : `Job ${name}: its pod failed`;
  return { why: `${why}${error ? ` — ${error}` : " (its pod's log says why)"}`, rolledBack: said.includes(ROLLED_BACK_CODE) };
}

/** One pass over one plan: observe, plan, act, write the status. @returns the actions done. */
export async function reconcilePlan(api: Cluster, plan: NodeUpgradePlan, opts: ControllerOptions): Promise<Action[]> {
  const [nodes, pods] = await Promise.all([api.list<V1Node>('v1', 'Node'), api.list<V1Pod>('v1', 'Pod')]);
  const apiServing = await api.version().then(() => ({ ok: true }), (err: Error) => ({ ok: false, why: err.message.split('\n')[0] }));
  const upgrading = new Set((plan.status?.nodes ?? []).filter((n) => n.phase === 'Upgrading').map((n) => n.name));
  const jobs = new Map(await Promise.all([...upgrading].map(async (n) => [n, await api.read<Job>({ apiVersion: 'batch/v1', kind: 'Job', metadata: { name: agentJobName(plan.metadata.name, n, plan.spec.targetVersion), namespace: 'kube-system' } })] as const)));
  const facts = nodes.map((n): NodeFacts => {
    const name = n.metadata?.name ?? '';
    const facts: NodeFacts = {
      name, labels: n.metadata?.labels ?? {}, kubeletVersion: n.status?.nodeInfo?.kubeletVersion ?? '',
      ready: n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false,
      unschedulable: n.spec?.unschedulable === true, ourCordon: !!n.metadata?.annotations?.[DRAINED_ANNOTATION],
      drained: toEvict(pods, name).length === 0,
    };
    const failure = jobFailure(jobs.get(name), pods);
    return failure ? { ...facts, agentFailed: failure.why, agentRolledBack: failure.rolledBack } : facts;
  });
  const health = healthGate(pods.map(podFacts), apiServing, plan.spec.healthGate?.namespaces);
  const step = planStep(plan.spec, plan.status, { nodes: facts, health, nowMs: (opts.now ?? Date.now)() });
  for (const a of step.actions) await act(api, plan, a, nodes, pods, opts);
  const status = { ...step.status, observedGeneration: plan.metadata.generation };
  if (JSON.stringify(status) !== JSON.stringify(plan.status)) {
    const written = await api.replaceStatus({ ...plan, status } as KubernetesObject, NODE_UPGRADE_PLURAL);
    if (!written) opts.log(`NodeUpgradePlan ${plan.metadata.name}: changed meanwhile; next pass`);
    else if (status.phase !== plan.status?.phase || status.batch !== plan.status?.batch) opts.log(`NodeUpgradePlan ${plan.metadata.name}: ${status.phase}, batch ${status.batch}`);
  }
  return step.actions;
}

/** Does one action (each is idempotent). */
async function act(api: Cluster, plan: NodeUpgradePlan, a: Action, nodes: readonly V1Node[], pods: readonly V1Pod[], opts: ControllerOptions): Promise<void> {
  const node = nodes.find((n) => n.metadata?.name === a.node);
  if (a.kind === 'cordon') {
    await api.patch(nodeRef(a.node), { metadata: { annotations: { [DRAINED_ANNOTATION]: a.target } }, spec: { unschedulable: true } });
    opts.log(`Node ${a.node}: cordoned`);
  } else if (a.kind === 'uncordon') {
    // Only a cordon that still carries kubeception's annotation is lifted (never an operator's).
    if (!node?.metadata?.annotations?.[DRAINED_ANNOTATION]) return;
    await api.patch(nodeRef(a.node), { metadata: { annotations: { [DRAINED_ANNOTATION]: null } }, spec: { unschedulable: false } });
    opts.log(`Node ${a.node}: uncordoned`);
  } else if (a.kind === 'drain') {
    for (const p of toEvict(pods, a.node).filter((x) => !x.metadata?.deletionTimestamp)) {
      const r = await api.evict(p.metadata!.name!, p.metadata!.namespace!);
      if (r !== 'gone') opts.log(`Node ${a.node}: pod ${p.metadata?.namespace}/${p.metadata?.name} ${r === 'blocked' ? 'eviction refused by a PodDisruptionBudget; retrying' : 'evicted'}`);
    }
  } else if (a.kind === 'start-agent') {
    const job = agentJob({
      plan: plan.metadata.name, node: a.node, target: a.target, image: opts.image,
      siteDir: opts.agent.siteDir, command: opts.agent.command,
      timeoutSeconds: plan.spec.nodeTimeoutSeconds ?? PLAN_DEFAULTS.nodeTimeoutSeconds,
    });
    if (await api.create(job)) opts.log(`Node ${a.node}: agent Job ${job.metadata.name} created`);
  }
}

/** Every plan once; a failure of one plan is logged and does not stop the others. */
export async function reconcileAll(api: Cluster, opts: ControllerOptions): Promise<void> {
  const plans = await api.list<NodeUpgradePlan & KubernetesObject>(NODE_UPGRADE_API_VERSION, NODE_UPGRADE_KIND);
  for (const plan of plans.sort((a, b) => a.metadata.name.localeCompare(b.metadata.name))) {
    try {
      await reconcilePlan(api, plan, opts);
    } catch (err) {
      opts.log(`NodeUpgradePlan ${plan.metadata.name}: ${(err as Error).message.split('\n')[0]}; next pass`);
    }
  }
}

/**
 * Runs the controller until `signal` aborts: a pass, then `intervalMs`, again.
 * @param kubeconfig kubeconfig text, or `in-cluster` (its ServiceAccount).
 * @returns when stopped (the pass under way finishes first).
 */
export async function runNodeUpgradeController(kubeconfig: string, signal: AbortSignal, opts: ControllerOptions): Promise<void> {
  const api = new Cluster(kubeconfig, kubeconfig === 'in-cluster' ? 'service account' : 'kubeconfig');
  while (!signal.aborted) {
    await reconcileAll(api, opts).catch((err: Error) => opts.log(`listing NodeUpgradePlans: ${err.message.split('\n')[0]}; next pass`));
    await sleep(opts.intervalMs ?? 2_000, undefined, { signal }).catch(() => undefined);
  }
}
