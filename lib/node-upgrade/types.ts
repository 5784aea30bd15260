/**
 * The NodeUpgradePlan object (group `kubeception.io`, version `v1alpha1`, cluster-scoped): what the
 * node upgrade controller reads (`spec`) and writes (`status`). Plain data, no API client; the CRD
 * that declares it is manifests/node-upgrade.ts.
 */

export const NODE_UPGRADE_GROUP = 'kubeception.io';
export const NODE_UPGRADE_VERSION = 'v1alpha1';
export const NODE_UPGRADE_API_VERSION = `${NODE_UPGRADE_GROUP}/${NODE_UPGRADE_VERSION}`;
export const NODE_UPGRADE_KIND = 'NodeUpgradePlan';
export const NODE_UPGRADE_PLURAL = 'nodeupgradeplans';
/** The plan `upgrade apply --nodes` creates and `upgrade status|pause|resume|rollback` address by default. */
export const DEFAULT_PLAN_NAME = 'kubelet';

/** Defaults of the optional spec fields. */
export const PLAN_DEFAULTS = { maxUnavailable: 1, nodeTimeoutSeconds: 1_800, drainTimeoutSeconds: 300, healthTimeoutSeconds: 300 } as const;

/**
 * How the agent runs `kubeception upgrade node` on a host (chrooted into the host's /): set on the
 * controller's Deployment by `upgrade apply --nodes`, never in a plan — a plan is a cluster object
 * more people may be allowed to write than kube-system's Deployments, and what the agent runs, it runs
 * as root on every selected Node.
 */
export interface AgentSettings {
  /** The site directory (holding kubeception.config.ts) on every node. Default `/etc/kubeception`. */
  siteDir: string;
  /** The host's kubeception command. Default `["kubeception"]`. */
  command: readonly string[];
}

export const AGENT_DEFAULTS: AgentSettings = { siteDir: '/etc/kubeception', command: ['kubeception'] };

/** What the operator asks for. */
export interface NodeUpgradePlanSpec {
  /** The kubelet version every selected Node ends at, e.g. `v1.37.2`. */
  targetVersion: string;
  /** Node labels that must all match (`matchLabels`); none: every Node. */
  nodeSelector?: Record<string, string>;
  /** At most this many selected Nodes are out of service at once (a batch). Default 1. */
  maxUnavailable?: number;
  /** True: the controller does nothing (a batch under way stays as it is). */
  paused?: boolean;
  /**
   * True (set by `kubeception upgrade rollback` on a Failed plan): each failed Node whose agent rolled
   * it back to its previous kubelet is uncordoned and marked `RolledBack`; the plan ends `RolledBack`.
   */
  rollback?: boolean;
  /** One Node's limit from its cordon to Ready at the target, in seconds (default 1800). */
  nodeTimeoutSeconds?: number;
  drain?: {
    /** Evictions a PodDisruptionBudget refuses are retried for this long, in seconds (default 300). */
    timeoutSeconds?: number;
  };
  healthGate?: {
    /** Namespaces whose workloads' pods must be Ready between batches; none: every namespace. */
    namespaces?: string[];
    /** How long a finished batch may wait for the gate, in seconds (default 300). */
    timeoutSeconds?: number;
  };
}

/**
 * One Node's progress. `Draining` (cordoned, pods being evicted) → `Upgrading` (the agent runs on it)
 * → `Upgraded` (Ready at the target; waits for its batch and the health gate) → `Done` (uncordoned if
 * kubeception cordoned it). `Failed` stops the rollout; `Stopped` is a Node of a failed batch that
 * was uncordoned before its agent started (untouched); `RolledBack` a failed Node returned to
 * service at its previous kubelet after `spec.rollback`.
 */
export type NodePhase = 'Draining' | 'Upgrading' | 'Upgraded' | 'Done' | 'Failed' | 'Stopped' | 'RolledBack';

export interface NodeProgress {
  name: string;
  phase: NodePhase;
  /** The batch (1, 2, …) it belongs to. */
  batch: number;
  /** Its kubelet version when its batch started. */
  fromVersion: string;
  /** True when kubeception set its cordon (only such a cordon is lifted). */
  cordonedByUs: boolean;
  /** When its batch started it (RFC 3339). */
  startedAt: string;
  /** Why it failed, or what it waits for. */
  message?: string;
  /** Failed only: its agent put the previous kubelet back and saw it Ready (the agent's `kubelet-upgrade-rolled-back`). */
  rolledBack?: boolean;
}

/** A condition as every Kubernetes API object reports one. */
export interface PlanCondition {
  type: 'Progressing' | 'Paused' | 'Failed' | 'Complete' | 'RolledBack';
  status: 'True' | 'False';
  reason: string;
  message: string;
  lastTransitionTime: string;
}

export type PlanPhase = 'Pending' | 'Progressing' | 'Paused' | 'Failed' | 'Complete' | 'RolledBack';

export interface NodeUpgradePlanStatus {
  phase?: PlanPhase;
  /** The batch under way or last finished (0: none started). */
  batch?: number;
  /** When every Node of the current batch was Upgraded (the health gate's clock), RFC 3339. */
  batchUpgradedAt?: string;
  nodes?: NodeProgress[];
  /** Selected Nodes left alone because an operator cordoned them (never uncordoned by kubeception). */
  held?: string[];
  conditions?: PlanCondition[];
  observedGeneration?: number;
}

export interface NodeUpgradePlan {
  apiVersion: typeof NODE_UPGRADE_API_VERSION;
  kind: typeof NODE_UPGRADE_KIND;
  metadata: { name: string; generation?: number; resourceVersion?: string; uid?: string };
  spec: NodeUpgradePlanSpec;
  status?: NodeUpgradePlanStatus;
}
