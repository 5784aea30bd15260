/**
 * The health gate between two batches of a node upgrade: every workload's pod is Ready and the API
 * serves. Pure: the controller lists the pods and asks the apiserver, this judges.
 *
 * A workload's pod is one a ReplicaSet, StatefulSet, DaemonSet or ReplicationController owns, not
 * terminating and not finished (a Job's pods, static pods and bare pods are not looked at: a finished
 * or one-off pod says nothing about the cluster serving).
 */

/** What the gate needs of one pod. */
export interface PodFacts {
  namespace: string;
  name: string;
  /** `status.phase`: Pending, Running, Succeeded, Failed. */
  phase: string;
  /** The pod's `Ready` condition is True. */
  ready: boolean;
  /** The kind of its controlling owner (`ownerReferences[].controller`), if any. */
  controllerKind?: string;
  /** `metadata.deletionTimestamp` is set. */
  terminating: boolean;
}

export interface HealthVerdict {
  ok: boolean;
  /** What failed (pods named, at most 5), or what passed. */
  why: string;
}

const WORKLOAD_KINDS = new Set(['ReplicaSet', 'StatefulSet', 'DaemonSet', 'ReplicationController']);

/**
 * The verdict.
 * @param apiServing whether the apiserver answered (and why not).
 * @param namespaces only these namespaces' pods count; empty or absent: every namespace.
 */
export function healthGate(pods: readonly PodFacts[], apiServing: { ok: boolean; why?: string }, namespaces?: readonly string[]): HealthVerdict {
  if (!apiServing.ok) return { ok: false, why: `the API does not serve: ${apiServing.why ?? 'no answer'}` };
  const counted = pods.filter((p) => (!namespaces?.length || namespaces.includes(p.namespace)) && p.controllerKind !== undefined && WORKLOAD_KINDS.has(p.controllerKind) && !p.terminating && p.phase !== 'Succeeded' && p.phase !== 'Failed');
  const notReady = counted.filter((p) => !p.ready).map((p) => `${p.namespace}/${p.name}`).sort();
  if (notReady.length) return { ok: false, why: `${notReady.length} workload pod(s) not Ready: ${notReady.slice(0, 5).join(', ')}${notReady.length > 5 ? ', …' : ''}` };
  return { ok: true, why: `the API serves; ${counted.length} workload pod(s) Ready` };
}
