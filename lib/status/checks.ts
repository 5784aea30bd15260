/**
 * The checks of `kubeception status`, as pure functions of what was read from the cluster and the
 * host (lib/status/gather.ts reads it): each returns one {@link CheckResult} naming its state and why.
 * A `fail` makes the cluster unhealthy (exit 1); a `warn` is reported and does not.
 * @see https://www.talos.dev/latest/reference/cli/#talosctl-health (the checks talosctl health waits on)
 */

/** `pass`: as it should be; `warn`: works, but needs attention soon; `fail`: not working. */
export type CheckState = 'pass' | 'warn' | 'fail';

/** One named check's result. */
export interface CheckResult {
  /** Stable id, e.g. `etcd`, `nodes`, `coredns`. */
  name: string;
  state: CheckState;
  /** One line: what was found, and for warn/fail why. */
  detail: string;
  /** Per-item lines (a member, a node, a certificate), when the check has items. */
  items?: string[];
  /** Wall time of the check (ms), set by the gatherer. */
  ms?: number;
  /**
   * A leader check's Lease `renewTime` (ms since the epoch, the leader's clock): a leader renews
   * every 2 s, and the health gate (lib/status/gate.ts) waits to see it advance after a roll.
   */
  renewedAt?: number;
}

const result = (name: string, state: CheckState, detail: string, items?: string[]): CheckResult => ({ name, state, detail, ...(items?.length && { items }) });

/** The worst of `states` (fail > warn > pass); pass for none. */
export const worst = (states: readonly CheckState[]): CheckState => (states.includes('fail') ? 'fail' : states.includes('warn') ? 'warn' : 'pass');

/** True when no check failed. */
export const healthy = (checks: readonly CheckResult[]) => checks.every((c) => c.state !== 'fail');

/** An etcd member as the check sees it: `why` undefined when it answered healthy. */
export interface MemberHealth {
  name: string;
  clientUrl: string;
  learner: boolean;
  why?: string;
}

/**
 * etcd: every voting member healthy. Quorum (more than half of the voting members healthy) is named
 * either way; a learner does not count for quorum.
 */
export function etcdCheck(members: readonly MemberHealth[]): CheckResult {
  const voting = members.filter((m) => !m.learner);
  const ok = voting.filter((m) => m.why === undefined).length;
  const quorum = ok > voting.length / 2;
  const items = members.map((m) => `${m.name || '(unstarted)'} ${m.clientUrl}${m.learner ? ' (learner)' : ''}: ${m.why === undefined ? 'healthy' : m.why}`);
  if (!voting.length) return result('etcd', 'fail', 'no voting member listed', items);
  const summary = `${ok}/${voting.length} voting members healthy, quorum ${quorum ? 'held' : 'LOST'}`;
  return result('etcd', ok === voting.length && members.every((m) => m.why === undefined) ? 'pass' : 'fail', summary, items);
}

/** Each apiserver endpoint's `/readyz` answer: `why` undefined when ready. */
export function apiserversCheck(endpoints: readonly { endpoint: string; why?: string }[]): CheckResult {
  const items = endpoints.map((e) => `${e.endpoint}: ${e.why === undefined ? 'ready' : e.why}`);
  if (!endpoints.length) return result('apiservers', 'fail', 'the kubernetes Service has no endpoints', items);
  const ready = endpoints.filter((e) => e.why === undefined).length;
  return result('apiservers', ready === endpoints.length ? 'pass' : 'fail', `${ready}/${endpoints.length} apiservers answer /readyz`, items);
}

/** The fields of a coordination.k8s.io/v1 Lease the check reads. */
export interface LeaseLike {
  spec?: { holderIdentity?: string; renewTime?: string | Date; leaseDurationSeconds?: number };
}

/**
 * A leader-elected component (`kube-controller-manager`, `kube-scheduler`) has a leader: its Lease
 * in kube-system is held and was renewed within its lease duration (default 15 s).
 */
export function leaderCheck(component: string, lease: LeaseLike | undefined, now: Date): CheckResult {
  const name = `${component.replace(/^kube-/, '')}-leader`;
  if (!lease) return result(name, 'fail', `no Lease kube-system/${component}: no ${component} has ever led`);
  const holder = lease.spec?.holderIdentity;
  const renewed = lease.spec?.renewTime ? new Date(lease.spec.renewTime) : undefined;
  if (!holder || !renewed) return result(name, 'fail', `Lease kube-system/${component} has no holder`);
  const ageS = Math.max(0, (now.getTime() - renewed.getTime()) / 1000);
  const limit = lease.spec?.leaseDurationSeconds ?? 15;
  const who = holder.split('_')[0];
  const renewedAt = renewed.getTime();
  if (ageS > limit) return { ...result(name, 'fail', `leader ${who} last renewed ${ageS.toFixed(0)} s ago (lease duration ${limit} s): no ${component} is leading`), renewedAt };
  return { ...result(name, 'pass', `${who} leads (renewed ${ageS.toFixed(1)} s ago)`), renewedAt };
}

/** The fields of a v1 Node the checks read. */
export interface NodeLike {
  metadata?: { name?: string };
  spec?: { podCIDR?: string; unschedulable?: boolean };
  status?: { conditions?: { type: string; status: string; reason?: string; message?: string }[]; nodeInfo?: { kubeletVersion?: string } };
}

const condition = (n: NodeLike, type: string) => n.status?.conditions?.find((c) => c.type === type);

/** Every Node Ready; each one's kubelet version listed. */
export function nodesCheck(nodes: readonly NodeLike[]): CheckResult {
  const items = nodes.map((n) => {
    const ready = condition(n, 'Ready');
    const state = ready?.status === 'True' ? 'Ready' : `NotReady (${ready?.reason ?? 'no Ready condition'}${ready?.message ? `: ${ready.message.slice(0, 100)}` : ''})`;
    return `${n.metadata?.name} ${n.status?.nodeInfo?.kubeletVersion ?? '?'}: ${state}${n.spec?.unschedulable ? ', cordoned' : ''}`;
  });
  if (!nodes.length) return result('nodes', 'fail', 'no Node registered', items);
  const notReady = nodes.filter((n) => condition(n, 'Ready')?.status !== 'True').map((n) => n.metadata?.name);
  const versions = [...new Set(nodes.map((n) => n.status?.nodeInfo?.kubeletVersion ?? '?'))].join(', ');
  if (notReady.length) return result('nodes', 'fail', `${notReady.length}/${nodes.length} NotReady: ${notReady.join(', ')}`, items);
  return result('nodes', 'pass', `${nodes.length}/${nodes.length} Ready (kubelet ${versions})`, items);
}

/** The fields of a v1 Pod the checks read. */
export interface PodLike {
  metadata?: { name?: string };
  spec?: { nodeName?: string };
  status?: { phase?: string; conditions?: { type: string; status: string }[] };
}

const podReady = (p: PodLike) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

/**
 * The pod network on every node: the node has a pod CIDR, no `NetworkUnavailable=True` condition,
 * and (when the plugin is a DaemonSet, e.g. flannel) a Ready plugin pod on it. `pluginPods`
 * undefined: no plugin is managed (podNetwork.plugin none) and only the node conditions count.
 */
export function podNetworkCheck(nodes: readonly NodeLike[], plugin: string, pluginPods: readonly PodLike[] | undefined): CheckResult {
  const items: string[] = [];
  const bad: string[] = [];
  for (const n of nodes) {
    const name = n.metadata?.name ?? '?';
    const why: string[] = [];
    if (!n.spec?.podCIDR) why.push('no podCIDR');
    const nu = condition(n, 'NetworkUnavailable');
    if (nu?.status === 'True') why.push(`NetworkUnavailable (${nu.reason ?? '?'})`);
    if (pluginPods) {
      const mine = pluginPods.filter((p) => p.spec?.nodeName === name);
      if (!mine.length) why.push(`no ${plugin} pod`);
      else if (!mine.some(podReady)) why.push(`${plugin} pod ${mine[0]!.metadata?.name} not Ready (${mine[0]!.status?.phase ?? '?'})`);
    }
    items.push(`${name} ${n.spec?.podCIDR ?? '-'}: ${why.length ? why.join(', ') : 'ok'}`);
    if (why.length) bad.push(name);
  }
  if (!nodes.length) return result('pod-network', 'fail', 'no Node registered', items);
  if (bad.length) return result('pod-network', 'fail', `${plugin}: ${bad.length}/${nodes.length} nodes without a working pod network: ${bad.join(', ')}`, items);
  return result('pod-network', 'pass', `${plugin}: ${nodes.length}/${nodes.length} nodes`, items);
}

/** The fields of an apps/v1 Deployment the check reads. */
export interface DeploymentLike {
  spec?: { replicas?: number };
  status?: { availableReplicas?: number; readyReplicas?: number };
}

/** A Deployment kubeception runs (the join service, the CSR approver): at least one replica available. */
export function deploymentCheck(name: string, what: string, d: DeploymentLike | undefined): CheckResult {
  if (!d) return result(name, 'fail', `Deployment kube-system/${what} is missing: run \`kubeception run bootstrap\``);
  const want = d.spec?.replicas ?? 1;
  const available = d.status?.availableReplicas ?? 0;
  if (available < 1) return result(name, 'fail', `Deployment kube-system/${what}: 0/${want} replicas available`);
  return result(name, available < want ? 'warn' : 'pass', `Deployment kube-system/${what}: ${available}/${want} replicas available`);
}

/** CoreDNS answered the query for the kubernetes Service: `answer` (the addresses), or why not. */
export function corednsCheck(query: string, server: string, expected: string, answer: readonly string[] | { error: string }): CheckResult {
  if ('error' in answer) return result('coredns', 'fail', `${query} @${server}: ${answer.error}`);
  if (!answer.includes(expected)) return result('coredns', 'fail', `${query} @${server} answered ${answer.join(', ') || 'nothing'}, not ${expected}`);
  return result('coredns', 'pass', `${query} @${server} → ${expected}`);
}

/** A certificate's expiry as the check sees it (lib/pki/expiry.ts's entries). */
export interface CertExpiry {
  name: string;
  notAfter?: Date;
  missing: boolean;
}

/** Fewer days left than this: warn (kubeadm's `certs check-expiration` shows the same residual time). */
export const CERT_WARN_DAYS = 30;

/** Certificates on this host: none expired (fail), none within {@link CERT_WARN_DAYS} or missing (warn). */
export function certificatesCheck(certs: readonly CertExpiry[], now: Date): CheckResult {
  const present = certs.filter((c) => !c.missing && c.notAfter);
  const days = (c: CertExpiry) => Math.floor((c.notAfter!.getTime() - now.getTime()) / 86_400_000);
  const items = certs.map((c) => `${c.name}: ${c.missing || !c.notAfter ? 'missing' : days(c) < 0 ? `EXPIRED ${-days(c)} d ago` : `${days(c)} d left`}`);
  if (!present.length) return result('certificates', 'fail', 'no certificate found on this host', items);
  const soonest = [...present].sort((a, b) => a.notAfter!.getTime() - b.notAfter!.getTime())[0]!;
  const expired = present.filter((c) => days(c) < 0).map((c) => c.name);
  const missing = certs.filter((c) => c.missing).map((c) => c.name);
  if (expired.length) return result('certificates', 'fail', `expired: ${expired.join(', ')}: run \`kubeception certs renew all\``, items);
  const line = `${present.length} certificates, the soonest (${soonest.name}) in ${days(soonest)} d`;
  if (days(soonest) < CERT_WARN_DAYS) return result('certificates', 'warn', `${line}: run \`kubeception certs renew all\``, items);
  if (missing.length) return result('certificates', 'warn', `${line}; missing: ${missing.join(', ')}`, items);
  return result('certificates', 'pass', line, items);
}

/**
 * The recovery copy (the last-known-good kube-apiserver static pod) is rendered from the live
 * DaemonSet's generation, and its watcher unit runs. `copyGeneration` undefined: no copy on disk.
 */
export function recoveryCheck(copyGeneration: number | undefined, dsGeneration: number | undefined, watcher: string): CheckResult {
  if (dsGeneration === undefined) return result('recovery', 'fail', 'DaemonSet kube-system/kube-apiserver is missing');
  if (copyGeneration === undefined) return result('recovery', 'fail', 'no recovery copy on this node: run `kubeception run bootstrap`');
  if (watcher !== 'active') return result('recovery', 'fail', `the recovery watcher is ${watcher}: \`systemctl start kubeception-recovery\``);
  if (copyGeneration !== dsGeneration) return result('recovery', 'warn', `copy of generation ${copyGeneration}, DaemonSet at ${dsGeneration}: run \`kubeception run bootstrap\` to refresh it`);
  return result('recovery', 'pass', `copy of DaemonSet generation ${dsGeneration}, watcher active`);
}

/**
 * The newest etcd snapshot is no older than twice the schedule's interval. `newest` undefined: none.
 * A disabled schedule with no snapshots passes (the operator chose it) and says so.
 */
export function snapshotsCheck(newest: { name: string; created: Date } | undefined, settings: { disabled: boolean; intervalMs: number; interval: string }, count: number, now: Date): CheckResult {
  if (!newest) return settings.disabled ? result('etcd-snapshots', 'pass', 'no snapshots (scheduled snapshots are disabled)') : result('etcd-snapshots', 'warn', `no snapshot yet (schedule every ${settings.interval}): \`kubeception etcd snapshot save\``);
  const ageH = (now.getTime() - newest.created.getTime()) / 3_600_000;
  const line = `${count} snapshots, the newest ${newest.name} ${ageH.toFixed(1)} h old`;
  if (!settings.disabled && now.getTime() - newest.created.getTime() > 2 * settings.intervalMs) return result('etcd-snapshots', 'warn', `${line}: older than twice the ${settings.interval} schedule (\`systemctl status kubeception-etcd-snapshot.timer\`)`);
  return result('etcd-snapshots', 'pass', line);
}

/** `upgrade apply`'s journal (lib/upgrade/journal.ts): an unfinished one is an upgrade in progress (or interrupted). */
export function upgradeCheck(journal: { from: string; to: string; started: string; phase: string } | undefined): CheckResult {
  if (!journal || journal.phase === 'done' || journal.phase === 'rolled-back')
    return result('upgrade', 'pass', journal ? `none in progress (last: ${journal.from} → ${journal.to}, ${journal.phase})` : 'none in progress');
  return result('upgrade', 'warn', `${journal.from} → ${journal.to} in phase ${journal.phase} since ${journal.started}: finish it with \`kubeception upgrade apply ${journal.to}\``);
}
