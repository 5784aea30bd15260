/**
 * The node upgrade planner: given a NodeUpgradePlan's spec and status so far and what the controller
 * observed (the Nodes, the health gate, the clock), the next status and the actions that move the
 * rollout on. Pure: no API client, no clock of its own, so the controller may crash and run it again
 * at any point — everything it needs is in the plan's status and on the Nodes.
 *
 * Rules: a batch is at most `maxUnavailable` Nodes (less the selected Nodes outside it that are not
 * Ready); a Node an operator cordoned (unschedulable without {@link DRAINED_ANNOTATION}) is held, never
 * batched and never uncordoned; a batch's Node is uncordoned (if kubeception cordoned it) as soon as it
 * is Ready at the target; the next batch starts once every Node of the last one is Done and the health
 * gate passes; a Node that fails (its agent failed, the drain or its upgrade ran out of time, the Node
 * vanished) stops the rollout for good, stays cordoned and is named in the `Failed` condition; paused,
 * nothing happens. With `spec.rollback` on a Failed plan, each failed Node that its agent rolled back
 * (kubelet-restart's roll-back: the previous kubelet Ready again) is uncordoned and `RolledBack`; the
 * plan is `RolledBack` once no Node is failed or under way (a failed Node its agent could not roll
 * back waits for an operator). Nodes already at the target stay there (the supported skew).
 * @see https://kubernetes.io/docs/tasks/manage-daemon/update-daemon-set/ (maxUnavailable, as a DaemonSet rolls)
 */
import { PLAN_DEFAULTS, type NodeProgress, type NodeUpgradePlanSpec, type NodeUpgradePlanStatus, type PlanCondition } from './types.ts';
import type { HealthVerdict } from './health.ts';

/** What the controller saw of one Node. */
export interface NodeFacts {
  name: string;
  labels: Record<string, string>;
  /** `status.nodeInfo.kubeletVersion`. */
  kubeletVersion: string;
  /** The `Ready` condition is True. */
  ready: boolean;
  /** `spec.unschedulable`. */
  unschedulable: boolean;
  /** The Node carries kubeception's cordon annotation (`kubeception.io/upgrade-drained`). */
  ourCordon: boolean;
  /** No pod left on it that a drain evicts (only looked at for a Node being drained). */
  drained?: boolean;
  /** Why its agent Job failed, if it did. */
  agentFailed?: string;
  /** Its agent failed after rolling the kubelet back to the previous version (and saw it Ready). */
  agentRolledBack?: boolean;
}

export interface Observed {
  nodes: readonly NodeFacts[];
  /** The health gate now (workloads' pods Ready, the API serving). */
  health: HealthVerdict;
  /** The controller's clock, ms since the epoch. */
  nowMs: number;
}

/** What the controller does next; every action is idempotent. */
export type Action =
  | { kind: 'cordon'; node: string; target: string }
  | { kind: 'drain'; node: string }
  | { kind: 'start-agent'; node: string; target: string }
  | { kind: 'uncordon'; node: string };

export interface Step {
  status: NodeUpgradePlanStatus;
  actions: Action[];
}

/** True when the Node's kubelet is `target` (a build suffix such as `+abc` aside). */
export const atTarget = (n: NodeFacts, target: string) => n.kubeletVersion === target || n.kubeletVersion.startsWith(`${target}+`);

/** True when every `matchLabels` entry is on the Node. */
export const selects = (spec: NodeUpgradePlanSpec, n: NodeFacts) => Object.entries(spec.nodeSelector ?? {}).every(([k, v]) => n.labels[k] === v);

/** Sets a condition; `lastTransitionTime` changes only when its status does. */
export function setCondition(conds: readonly PlanCondition[] | undefined, c: Omit<PlanCondition, 'lastTransitionTime'>, now: string): PlanCondition[] {
  const old = conds?.find((x) => x.type === c.type);
  const next: PlanCondition = { ...c, lastTransitionTime: old && old.status === c.status ? old.lastTransitionTime : now };
  return [...(conds ?? []).filter((x) => x.type !== c.type), next].sort((a, b) => a.type.localeCompare(b.type));
}

/** The next status and actions. See the module's doc for the rules. */
export function planStep(spec: NodeUpgradePlanSpec, prev: NodeUpgradePlanStatus | undefined, obs: Observed): Step {
  const now = new Date(obs.nowMs).toISOString();
  const status: NodeUpgradePlanStatus = { ...prev, batch: prev?.batch ?? 0, nodes: (prev?.nodes ?? []).map((n) => ({ ...n })), conditions: [...(prev?.conditions ?? [])] };
  const held = obs.nodes.filter((n) => selects(spec, n) && n.unschedulable && !n.ourCordon && !status.nodes!.some((p) => p.name === n.name && p.phase !== 'Done')).map((n) => n.name).sort();
  status.held = held;
  if (spec.paused) {
    // A failed, complete or rolled-back rollout stays so (pausing it must not hide its end, nor resume it).
    if (status.phase !== 'Failed' && status.phase !== 'Complete' && status.phase !== 'RolledBack') status.phase = 'Paused';
    status.conditions = setCondition(status.conditions, { type: 'Paused', status: 'True', reason: 'Paused', message: 'spec.paused is true: nothing changes until it is false' }, now);
    return { status, actions: [] };
  }
  status.conditions = setCondition(status.conditions, { type: 'Paused', status: 'False', reason: 'Running', message: 'not paused' }, now);
  if (status.phase === 'RolledBack') return { status, actions: [] }; // the end, as Complete is
  const actions = advanceBatch(spec, status, obs, now);
  if (spec.rollback && status.phase === 'Failed') return { status, actions: [...actions, ...rollBack(status, obs, now)] };
  if (status.phase === 'Failed') return { status, actions };
  const current = status.nodes!.filter((n) => n.batch === status.batch);
  if (current.some((n) => n.phase !== 'Done')) {
    status.phase = 'Progressing';
    return { status, actions };
  }
  return { status, actions: [...actions, ...nextBatch(spec, status, obs, now)] };
}

/** Moves each Node of the current batch on; marks the plan Failed when one fails. */
function advanceBatch(spec: NodeUpgradePlanSpec, status: NodeUpgradePlanStatus, obs: Observed, now: string): Action[] {
  const actions: Action[] = [];
  for (const p of status.nodes!.filter((n) => n.batch === status.batch)) {
    const n = obs.nodes.find((x) => x.name === p.name);
    const failed = status.phase === 'Failed';
    const why = failure(spec, p, n, obs.nowMs);
    if (why && !(failed && p.phase === 'Draining')) {
      Object.assign(p, { phase: 'Failed', message: why, ...(p.phase === 'Upgrading' && n?.agentRolledBack && { rolledBack: true }) });
      if (!failed) fail(status, 'NodeUpgradeFailed', `Node ${p.name}: ${why}`, now);
      continue;
    }
    if (p.phase === 'Draining' && failed) {
      // The rollout stopped before this Node's agent ran: its cordon is lifted, it is left as it was.
      if (p.cordonedByUs) actions.push({ kind: 'uncordon', node: p.name });
      Object.assign(p, { phase: 'Stopped', message: 'the rollout failed before its upgrade started' });
    } else if (p.phase === 'Draining' && n) {
      if (p.cordonedByUs && !n.unschedulable) actions.push({ kind: 'cordon', node: p.name, target: spec.targetVersion });
      if (n.drained) Object.assign(p, { phase: 'Upgrading', message: 'the agent upgrades the kubelet' });
      actions.push(n.drained ? { kind: 'start-agent', node: p.name, target: spec.targetVersion } : { kind: 'drain', node: p.name });
    } else if (p.phase === 'Upgrading' && n) {
      if (n.ready && atTarget(n, spec.targetVersion)) {
        if (p.cordonedByUs) actions.push({ kind: 'uncordon', node: p.name });
        Object.assign(p, { phase: 'Done', message: `Ready, kubelet ${spec.targetVersion}` });
      } else actions.push({ kind: 'start-agent', node: p.name, target: spec.targetVersion });
    }
  }
  if (status.phase !== 'Failed' && status.nodes!.some((n) => n.batch === status.batch) && status.nodes!.every((n) => n.batch !== status.batch || n.phase === 'Done'))
    status.batchUpgradedAt ??= now;
  return actions;
}

/** Why a Node of the batch has failed, or undefined. */
function failure(spec: NodeUpgradePlanSpec, p: NodeProgress, n: NodeFacts | undefined, nowMs: number): string | undefined {
  if (p.phase !== 'Draining' && p.phase !== 'Upgrading') return undefined;
  if (!n) return 'the Node was deleted during its upgrade';
  if (p.phase === 'Upgrading' && n.agentFailed) return `the upgrade agent failed: ${n.agentFailed}`;
  const elapsedS = (nowMs - Date.parse(p.startedAt)) / 1000;
  const drainS = spec.drain?.timeoutSeconds ?? PLAN_DEFAULTS.drainTimeoutSeconds;
  if (p.phase === 'Draining' && !n.drained && elapsedS > drainS) return `pods still on it after ${drainS} s (a PodDisruptionBudget may refuse their eviction)`;
  const nodeS = spec.nodeTimeoutSeconds ?? PLAN_DEFAULTS.nodeTimeoutSeconds;
  if (elapsedS > nodeS) return `not Ready with kubelet ${spec.targetVersion} within ${nodeS} s (kubelet ${n.kubeletVersion}, Ready ${n.ready})`;
  return undefined;
}

function fail(status: NodeUpgradePlanStatus, reason: 'NodeUpgradeFailed' | 'HealthGate', message: string, now: string): void {
  status.phase = 'Failed';
  status.conditions = setCondition(status.conditions, { type: 'Failed', status: 'True', reason, message }, now);
  status.conditions = setCondition(status.conditions, { type: 'Progressing', status: 'False', reason: 'Failed', message: 'the rollout stopped: no further batch starts' }, now);
}

const NOT_ROLLED_BACK = 'not rolled back by its agent: put its previous kubelet back by hand (the distro\'s package), then `kubectl uncordon`';

/** `spec.rollback` on a failed plan: returns the Nodes their agents rolled back to service. */
function rollBack(status: NodeUpgradePlanStatus, obs: Observed, now: string): Action[] {
  const actions: Action[] = [];
  for (const p of status.nodes!.filter((x) => x.phase === 'Failed')) {
    const n = obs.nodes.find((x) => x.name === p.name);
    if (p.rolledBack && n?.ready && n.kubeletVersion === p.fromVersion) {
      if (p.cordonedByUs) actions.push({ kind: 'uncordon', node: p.name });
      Object.assign(p, { phase: 'RolledBack', message: `Ready at kubelet ${p.fromVersion} (its agent rolled it back)${p.cordonedByUs ? '; uncordoned' : ''}` });
    } else if (!p.rolledBack && !p.message?.endsWith(NOT_ROLLED_BACK)) p.message = `${p.message ?? 'failed'}; ${NOT_ROLLED_BACK}`;
  }
  const open = status.nodes!.filter((x) => x.phase === 'Failed' || x.phase === 'Draining' || x.phase === 'Upgrading');
  const back = status.nodes!.filter((x) => x.phase === 'RolledBack').map((x) => x.name);
  if (open.length) {
    status.conditions = setCondition(status.conditions, { type: 'RolledBack', status: 'False', reason: 'Waiting', message: `rollback requested; waiting for ${open.map((x) => `${x.name} (${x.phase})`).join(', ')}` }, now);
    return actions;
  }
  status.phase = 'RolledBack';
  const kept = status.nodes!.filter((x) => x.phase === 'Done').map((x) => x.name);
  const message = `back in service at their previous kubelet: ${back.join(', ') || 'none'}${kept.length ? `; at the target (kept): ${kept.join(', ')}` : ''}`;
  status.conditions = setCondition(status.conditions, { type: 'RolledBack', status: 'True', reason: 'RolledBack', message }, now);
  status.conditions = setCondition(status.conditions, { type: 'Progressing', status: 'False', reason: 'RolledBack', message: 'the rollout was rolled back: no further batch starts' }, now);
  return actions;
}

/** The last batch is done: checks the health gate, then starts the next batch (or completes the plan). */
function nextBatch(spec: NodeUpgradePlanSpec, status: NodeUpgradePlanStatus, obs: Observed, now: string): Action[] {
  const selected = obs.nodes.filter((n) => selects(spec, n));
  const finished = new Set(status.nodes!.filter((n) => n.phase === 'Done').map((n) => n.name));
  const candidates = selected
    .filter((n) => !atTarget(n, spec.targetVersion) && !finished.has(n.name) && !status.held!.includes(n.name))
    .sort((a, b) => Number(a.ready) - Number(b.ready) || a.name.localeCompare(b.name));
  const progressing = (reason: string, message: string) => {
    status.phase = status.batch ? 'Progressing' : 'Pending';
    status.conditions = setCondition(status.conditions, { type: 'Progressing', status: 'True', reason, message }, now);
    return [];
  };
  if (status.batch && !obs.health.ok) {
    const limitS = spec.healthGate?.timeoutSeconds ?? PLAN_DEFAULTS.healthTimeoutSeconds;
    if (candidates.length && (obs.nowMs - Date.parse(status.batchUpgradedAt ?? now)) / 1000 > limitS) {
      fail(status, 'HealthGate', `health gate after batch ${status.batch} not passed within ${limitS} s: ${obs.health.why}`, now);
      return [];
    }
    if (candidates.length) return progressing('HealthGate', `batch ${status.batch} done; waiting for the health gate: ${obs.health.why}`);
  }
  if (!candidates.length) {
    status.phase = 'Complete';
    const message = `every selected Node runs kubelet ${spec.targetVersion}${status.held!.length ? `; held (cordoned by an operator, left alone): ${status.held!.join(', ')}` : ''}`;
    status.conditions = setCondition(status.conditions, { type: 'Complete', status: 'True', reason: 'Complete', message }, now);
    status.conditions = setCondition(status.conditions, { type: 'Progressing', status: 'False', reason: 'Complete', message }, now);
    return [];
  }
  const unavailable = selected.filter((n) => !n.ready && !candidates.includes(n)).length;
  const size = Math.max(0, (spec.maxUnavailable ?? PLAN_DEFAULTS.maxUnavailable) - unavailable);
  if (!size) return progressing('Unavailable', `${unavailable} selected Node(s) not Ready: no room for a batch within maxUnavailable`);
  const batch = candidates.slice(0, size);
  status.batch = (status.batch ?? 0) + 1;
  delete status.batchUpgradedAt;
  for (const n of batch)
    status.nodes!.push({ name: n.name, phase: 'Draining', batch: status.batch, fromVersion: n.kubeletVersion, cordonedByUs: true, startedAt: now, message: 'cordoned; evicting its pods' });
  progressing('BatchStarted', `batch ${status.batch}: ${batch.map((n) => n.name).join(', ')}`);
  return batch.flatMap((n): Action[] => [...(n.unschedulable ? [] : [{ kind: 'cordon' as const, node: n.name, target: spec.targetVersion }]), { kind: 'drain', node: n.name }]);
}
