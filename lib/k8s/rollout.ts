/**
 * Restarting workloads the way `kubectl rollout restart` does (the pod template annotation
 * `kubectl.kubernetes.io/restartedAt`) and waiting until each rollout is complete: the controller
 * observed the change, every pod is updated and available, and no old pod is left. The self-hosted
 * workloads surge (maxSurge 1, maxUnavailable 0), so the old pod serves until the new one is ready.
 */
import { KubeceptionError, TimeoutError } from '../errors.ts';
import { pollUntil } from '../util/poll.ts';
import type { Cluster, KubernetesObject } from './client.ts';
import type { Context } from '../context.ts';

type Kind = 'DaemonSet' | 'Deployment';
interface Workload extends KubernetesObject {
  spec?: { replicas?: number };
  status?: Record<string, number | undefined>;
}

interface PodLike extends KubernetesObject {
  status?: {
    phase?: string;
    containerStatuses?: { ready?: boolean; restartCount?: number; state?: { waiting?: { reason?: string }; terminated?: { reason?: string } }; lastState?: { terminated?: { exitCode?: number; reason?: string } } }[];
  };
}

/** Restarts after which a pod created by this roll counts as failing ({@link rollAndWait}'s `failFast`). */
export const FAIL_FAST_RESTARTS = 2;

/**
 * A pod created at or after `sinceMs` (the roll's start, less 5 s of clock slack) whose container
 * exited and was restarted {@link FAIL_FAST_RESTARTS} times and is waiting in CrashLoopBackOff: the
 * new template does not run (a bad flag exits at once). A pod still starting, pulling or probed is not one.
 */
export function crashLoopingPod(pods: readonly PodLike[], sinceMs: number): PodLike | undefined {
  return pods.find((p) => {
    const created = new Date(String(p.metadata?.creationTimestamp ?? 0)).getTime();
    const c = p.status?.containerStatuses?.[0];
    return created >= sinceMs - 5_000 && !p.metadata?.deletionTimestamp && (c?.restartCount ?? 0) >= FAIL_FAST_RESTARTS && c?.state?.waiting?.reason === 'CrashLoopBackOff';
  });
}

/** `key=value` pairs of a workload's rollout status, for errors. */
const statusLine = (w?: Workload) =>
  w ? `generation ${w.metadata?.generation ?? '?'}, ${Object.entries(w.status ?? {}).filter(([, v]) => typeof v === 'number').map(([k, v]) => `${k}=${v}`).join(' ')}` : 'never read';

/** `name phase ready restarts reason` of a pod, for errors. */
const podLine = (p: PodLike) => {
  const c = p.status?.containerStatuses?.[0];
  const reason = c?.state?.waiting?.reason ?? c?.state?.terminated?.reason;
  const exit = c?.lastState?.terminated?.exitCode;
  return `${p.metadata?.name} ${p.status?.phase ?? '?'}${c ? ` ready=${c.ready} restarts=${c.restartCount}` : ''}${reason ? ` ${reason}` : ''}${exit !== undefined ? ` last-exit=${exit}` : ''}${p.metadata?.deletionTimestamp ? ' terminating' : ''}`;
};

interface LeaseLike extends KubernetesObject {
  spec?: { holderIdentity?: string; renewTime?: string | Date; leaseDurationSeconds?: number };
}

/**
 * What the controller that should act on a workload is doing, for errors: the kube-controller-manager
 * pods and its leader Lease (`kube-system/kube-controller-manager`: holder, seconds since the last
 * renewal). Read when a workload's `observedGeneration` lags its `generation`: only the leading
 * kube-controller-manager raises it.
 */
export async function controllerLine(api: Cluster): Promise<string> {
  const pods = await api.list<PodLike>('v1', 'Pod', 'kube-system', 'component=kube-controller-manager').catch(() => [] as PodLike[]);
  const lease = await api.read<LeaseLike>({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'kube-controller-manager', namespace: 'kube-system' } }).catch(() => undefined);
  const renewed = lease?.spec?.renewTime ? `${Math.round((Date.now() - new Date(lease.spec.renewTime).getTime()) / 1000)} s ago` : 'never';
  return `kube-controller-manager pods: ${pods.map(podLine).join('; ') || 'none'}; leader ${lease?.spec?.holderIdentity ?? 'none'} (lease renewed ${renewed})`;
}

/** True when the rollout of `w` is complete. */
export function rolledOut(kind: Kind, w: Workload): boolean {
  const s = w.status ?? {};
  if ((s.observedGeneration ?? 0) < (w.metadata?.generation ?? 0)) return false;
  if (kind === 'DaemonSet') {
    const want = s.desiredNumberScheduled ?? 0;
    return s.updatedNumberScheduled === want && s.numberAvailable === want && (s.numberUnavailable ?? 0) === 0 && (s.currentNumberScheduled ?? want) === want;
  }
  const want = w.spec?.replicas ?? 1;
  return s.updatedReplicas === want && s.availableReplicas === want && s.replicas === want;
}

/** How long a DaemonSet surge roll may sit with its new pods ready before {@link finishSurge} steps in. */
const STALL_MS = 60_000;

interface DsPod extends PodLike {
  spec?: { nodeName?: string };
  status?: PodLike['status'] & { conditions?: { type?: string; status?: string; lastTransitionTime?: string | Date }[] };
}

/**
 * The DaemonSet controller's last step of a surge roll, done for it when it has not happened: on
 * each node where a pod of the current template generation (`pod-template-generation`) has been
 * Ready for the DaemonSet's `minReadySeconds`, the pods of older generations are deleted (graceful).
 * Seen on the bed (kube-controller-manager v1.34 rolling kube-apiserver v1.34 → v1.35 on one node):
 * the controller never observed the surge pod it had created — its status counted only the old pod
 * — and would have waited for its 5-minute expectations timeout. The old pod's shutdown closes the
 * controller's watches; re-established against the new apiserver, they list again and see the pod.
 * @returns true if anything was deleted (it is tried once per roll).
 */
export async function finishSurge(ctx: Pick<Context, 'signal'> & { log?: { warn(m: string): void } }, api: Cluster, name: string, ds: Workload & { spec?: { minReadySeconds?: number } }): Promise<boolean> {
  const gen = String(ds.metadata?.generation ?? '');
  const minReadyMs = (ds.spec?.minReadySeconds ?? 0) * 1000;
  const pods = await api.list<DsPod>('v1', 'Pod', 'kube-system', `component=${name}`).catch(() => [] as DsPod[]);
  const readyLongEnough = (p: DsPod) => {
    const c = p.status?.conditions?.find((x) => x.type === 'Ready');
    return c?.status === 'True' && !!c.lastTransitionTime && Date.now() - new Date(c.lastTransitionTime).getTime() >= minReadyMs;
  };
  const old: DsPod[] = [];
  for (const node of new Set(pods.map((p) => p.spec?.nodeName))) {
    const here = pods.filter((p) => p.spec?.nodeName === node && !p.metadata?.deletionTimestamp);
    if (!here.some((p) => p.metadata?.labels?.['pod-template-generation'] === gen && readyLongEnough(p))) continue;
    old.push(...here.filter((p) => p.metadata?.labels?.['pod-template-generation'] !== gen));
  }
  for (const p of old) {
    ctx.log?.warn(`DaemonSet kube-system/${name}: the surge roll has not finished ${STALL_MS / 1000} s in although the new pod on ${p.spec?.nodeName} is ready; deleting the old pod ${p.metadata?.name} (the controller's next step)`);
    await api.delete({ apiVersion: 'v1', kind: 'Pod', metadata: { name: p.metadata?.name, namespace: 'kube-system' } });
  }
  return old.length > 0;
}

/**
 * Restarts each existing workload in `targets` (kube-system), one after the other, waiting for each
 * (reads that fail while the apiserver itself rolls count as "not yet").
 * @param opts.failFast stop waiting as soon as a pod this roll created crash-loops ({@link crashLoopingPod}).
 * @returns the `Kind/name` of the workloads restarted (absent ones are skipped).
 * @throws TimeoutError `rollout-timeout` naming the workload; KubeceptionError `rollout-failed`
 *   (failFast) naming the workload and its failing pod.
 */
export async function rollAndWait(ctx: Pick<Context, 'signal'> & { log?: { warn(m: string): void } }, api: Cluster, targets: [Kind, string][], opts: { rolling?: ReadonlySet<string>; timeoutMs?: number; failFast?: boolean; sinceMs?: number } = {}): Promise<string[]> {
  const timeoutMs = opts.timeoutMs ?? 300_000;
  const done: string[] = [];
  for (const [kind, name] of targets) {
    const ref = { apiVersion: 'apps/v1', kind, metadata: { name, namespace: 'kube-system' } };
    const exists = await pollUntil(() => api.read(ref).then((o) => (o ? 'yes' : 'no'), () => undefined), { timeoutMs: 60_000, intervalMs: 1_000, signal: ctx.signal });
    if (exists !== 'yes') continue;
    // A workload whose template just changed (`opts.rolling`, as `Kind/namespace/name`) is already rolling: only wait.
    if (!opts.rolling?.has(`${kind}/kube-system/${name}`))
      await pollUntil(() => api.patch(ref, { spec: { template: { metadata: { annotations: { 'kubectl.kubernetes.io/restartedAt': new Date().toISOString() } } } } }).then(() => true, () => undefined), { timeoutMs: 60_000, intervalMs: 1_000, signal: ctx.signal });
    let last: Workload | undefined;
    const started = Date.now();
    let nudged = false;
    let failing: PodLike | undefined;
    const ok = await pollUntil(async () => {
      const w = await api.read<Workload>(ref).catch(() => undefined);
      last = w ?? last;
      if (w && rolledOut(kind, w)) return true;
      if (opts.failFast) {
        failing = crashLoopingPod(await api.list<PodLike>('v1', 'Pod', 'kube-system', `component=${name}`).catch(() => []), opts.sinceMs ?? started);
        if (failing) return false;
      }
      if (kind === 'DaemonSet' && w && !nudged && Date.now() - started > STALL_MS) nudged = await finishSurge(ctx, api, name, w);
      return undefined;
    }, { timeoutMs, intervalMs: 1_000, signal: ctx.signal });
    if (failing)
      throw new KubeceptionError('rollout-failed', {
        what: `${kind} kube-system/${name}`,
        why: `its new pod keeps failing: ${podLine(failing)}`,
        fix: `see why: kubectl -n kube-system logs ${failing.metadata?.name} --previous`,
      });
    if (!ok) {
      const pods = await api.list<PodLike>('v1', 'Pod', 'kube-system', `component=${name}`).catch(() => []);
      const unobserved = (last?.status?.observedGeneration ?? 0) < (last?.metadata?.generation ?? 0);
      throw new TimeoutError('rollout-timeout', {
        what: `${kind} kube-system/${name}`,
        why: `the restart did not complete within ${timeoutMs / 1000} s (last status: ${statusLine(last)}; pods: ${pods.map(podLine).join('; ') || 'none'}${unobserved ? `; the controller never observed generation ${last?.metadata?.generation}: ${await controllerLine(api)}` : ''})`,
        fix: `check its pods: kubectl -n kube-system get pods -l component=${name}`,
      });
    }
    done.push(`${kind}/${name}`);
  }
  return done;
}
