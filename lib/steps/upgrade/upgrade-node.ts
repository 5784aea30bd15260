/**
 * The steps of `kubeception upgrade node` (tasks/upgrade-node.ts), kubeadm's `upgrade node` plus the
 * drain and uncordon its guide asks the operator for: the node follows the cluster's version (its
 * kube-apiserver's `/version`); kubeception does not ship binaries, so the distro must have installed
 * a kubelet of exactly that version first.
 *
 * Host effects: the kubelet's config.yaml and unit drop-in rewritten (as bootstrap/join write them),
 * the kubelet restarted. Cluster effects: the Node cordoned (annotation
 * `kubeception.io/upgrade-drained`), its pods evicted through the Eviction API (PodDisruptionBudgets
 * honoured; DaemonSet, static and self-hosted control-plane pods stay), then uncordoned.
 * @see https://kubernetes.io/docs/tasks/administer-cluster/kubeadm/upgrading-linux-nodes/
 */
import { join } from 'node:path';
import { HostStateError, KubeceptionError, PreflightError, RolledBackError, TimeoutError } from '../../errors.ts';
import type { Cluster, V1Node, V1Pod } from '../../k8s/client.ts';
import { kubeconfigPaths } from '../../k8s/endpoints.ts';
import { cluster, kubeconfigFileCluster } from '../../k8s/apiserver.ts';
import { pollUntil } from '../../util/poll.ts';
import { parseVersion, compareVersions } from '../../upgrade/skew.ts';
import { restartKubelet, writeBackKubeletFiles, writeKubeletFiles } from '../bootstrap/kubelet.ts';
import type { UpgradeNodeContext } from '../contexts.ts';
import type { StepOutcome } from '../../engine/dsl.ts';
import { MANAGED_BY } from '../../../manifests/common.ts';
import { CSR_APPROVER_NAME } from '../../../manifests/csr-approver.ts';
import { JOIN_SERVICE_NAME } from '../../../manifests/join-service.ts';
import { NODE_UPGRADE_AGENT_NAME, NODE_UPGRADE_CONTROLLER_NAME } from '../../../manifests/node-upgrade-controller.ts';
import { SELF_HOSTED_COMPONENTS } from '../self-hosted/self-hosted.ts';

/** Annotation on a Node cordoned by `upgrade node` (only such a cordon is lifted by it). */
export const DRAINED_ANNOTATION = 'kubeception.io/upgrade-drained';

/** The API client `upgrade node` uses: `--kubeconfig`, else admin.conf on a control-plane node. */
async function nodeApi(ctx: UpgradeNodeContext): Promise<Cluster> {
  if (ctx.options.kubeconfig) return kubeconfigFileCluster(ctx.files, ctx.options.kubeconfig, 'evict pods and patch Nodes');
  if (await ctx.files.exists(kubeconfigPaths(ctx.config).admin)) return cluster(ctx, 'final');
  throw new HostStateError('kubeconfig-missing', {
    what: 'upgrade node',
    why: `no --kubeconfig and no ${kubeconfigPaths(ctx.config).admin}: draining needs credentials that may evict pods, and the kubelet's own may not`,
    fix: 'pass --kubeconfig FILE with such credentials (e.g. a copy of admin.conf, removed afterwards)',
  });
}

async function readNode(ctx: UpgradeNodeContext, api: Cluster): Promise<V1Node> {
  const node = await api.read<V1Node>({ apiVersion: 'v1', kind: 'Node', metadata: { name: ctx.config.nodeName } });
  if (!node) throw new HostStateError('node-missing', { what: `Node ${ctx.config.nodeName}`, why: 'the cluster has no Node of this name', fix: 'run `upgrade node` on a node that joined the cluster (or set nodeName)' });
  return node;
}

/**
 * `upgrade-node-preflight`: the cluster's version, the kubelet binary's (`kubelet --version`) and the
 * running one's (the Node's `kubeletVersion`). The binary must be exactly the cluster's version —
 * or, with `installedLater` (a distro whose task installs the kubelet itself after the drain, such as
 * distros/kubic's `kubelet-install`), at most that version.
 * @throws PreflightError `KubeletBinaryVersion` (exit 2; nothing changed).
 */
export async function upgradeNodePreflight(ctx: UpgradeNodeContext, opts: { installedLater?: boolean } = {}): Promise<StepOutcome> {
  const api = await nodeApi(ctx);
  const [target, node] = [await api.version(), await readNode(ctx, api)];
  const bin = await ctx.sh.which(ctx.config.distro.binaries.kubelet);
  if (!bin) throw new HostStateError('kubelet-missing', { what: ctx.config.distro.binaries.kubelet, why: 'the kubelet binary is not on PATH', fix: 'install the kubelet' });
  const out = (await ctx.sh.read([bin, '--version'], { timeoutMs: 15_000 })).stdout.trim();
  const binary = /v\d+\.\d+\.\d+\S*/.exec(out)?.[0] ?? out;
  const [b, t] = [parseVersion(binary), parseVersion(target)];
  const order = b && t ? compareVersions(b, t) : undefined;
  if (order === undefined || order > 0 || (order < 0 && !opts.installedLater))
    throw new PreflightError([{ id: 'KubeletBinaryVersion', ignorable: false, message: `${bin} is ${binary}, the cluster is ${target}${order !== undefined && order > 0 ? ' (a kubelet must never be newer than the kube-apiserver)' : ''}`, fix: `install the kubelet ${target} with the distro's package manager, then run \`kubeception upgrade node\` again` }]);
  const running = node.status?.nodeInfo?.kubeletVersion ?? '?';
  ctx.state.upgradeNode = { target, binary, running, worker: !(await ctx.files.exists(join(ctx.config.certificatesDir, 'ca.key'))) };
  return { changed: false, detail: `cluster ${target}; kubelet binary ${binary}${order === 0 ? '' : ' (the distro installs the new one after the drain)'}; running kubelet ${running}` };
}

const plan = (ctx: UpgradeNodeContext) => {
  if (!ctx.state.upgradeNode) throw new Error('upgrade-node-preflight did not run');
  return ctx.state.upgradeNode;
};

/** `skipIf` of drain: the running kubelet is already the target and the node is not cordoned by an earlier run. */
export async function nodeAtTarget(ctx: UpgradeNodeContext): Promise<string | false> {
  const p = plan(ctx);
  const node = await readNode(ctx, await nodeApi(ctx));
  if (p.running === p.target && !node.metadata?.annotations?.[DRAINED_ANNOTATION]) return `the kubelet already runs ${p.target}`;
  return false;
}

/**
 * Why `drain` leaves a pod on the node, or undefined if it is evicted: a DaemonSet's pod and a static
 * pod (as `kubectl drain --ignore-daemonsets` does), and a pod of the self-hosted control plane
 * (kube-system, `tier=control-plane`, a {@link SELF_HOSTED_COMPONENTS} component, managed by
 * kubeception): it is this node's share of the control plane, as a static pod is on a kubeadm node,
 * and the kubelet's restart does not stop its containers. Evicted, its replacement waits for the
 * uncordon and a scheduler — on one control-plane node, the scheduler just evicted (seen on the bed:
 * kube-controller-manager and kube-scheduler Pending for good after `upgrade node`, the next upgrade's
 * DaemonSet roll never observed). Likewise kubeception's own control-plane services (join service, CSR
 * approver, node upgrade controller), and the node upgrade agent's pod, which runs this very drain
 * when the controller upgrades the node (evicted, the upgrade would die with it).
 */
export function drainSkipReason(p: V1Pod): string | undefined {
  if (p.metadata?.ownerReferences?.some((o) => o.kind === 'DaemonSet')) return 'DaemonSet pod';
  if (p.metadata?.annotations?.['kubernetes.io/config.mirror']) return 'static pod';
  const l = p.metadata?.labels ?? {};
  const ours = p.metadata?.namespace === 'kube-system' && l[MANAGED_BY_KEY] === MANAGED_BY[MANAGED_BY_KEY];
  if (ours && l.tier === 'control-plane' && SELF_HOSTED_COMPONENTS.some(([, c]) => c === l.component)) return 'self-hosted control-plane pod';
  if (ours && l[NAME_KEY] === NODE_UPGRADE_AGENT_NAME) return 'the node upgrade agent (it runs this upgrade)';
  if (ours && OWN_SERVICES.includes(l[NAME_KEY] ?? '')) return "kubeception's control-plane service";
  return undefined;
}
const NAME_KEY = 'app.kubernetes.io/name';
/**
 * kubeception's own Deployments pinned to control-plane nodes. Evicted from the only control-plane node
 * they could not come back until its uncordon — the node upgrade controller that would lift it least of
 * all (it would wait for itself) — so on a control-plane node they stay, as the self-hosted plane does.
 */
const OWN_SERVICES: readonly string[] = [JOIN_SERVICE_NAME, CSR_APPROVER_NAME, NODE_UPGRADE_CONTROLLER_NAME];
const MANAGED_BY_KEY = 'app.kubernetes.io/managed-by';

/**
 * `drain`: cordon, then evict every pod on the node except those {@link drainSkipReason} keeps, retrying
 * evictions a PodDisruptionBudget blocks, until they are gone (`kubectl drain --ignore-daemonsets`).
 * @throws TimeoutError `drain-timeout` naming the pods left (300 s).
 */
export async function drainNode(ctx: UpgradeNodeContext): Promise<StepOutcome> {
  const api = await nodeApi(ctx);
  const name = ctx.config.nodeName;
  await api.patch({ apiVersion: 'v1', kind: 'Node', metadata: { name } }, { metadata: { annotations: { [DRAINED_ANNOTATION]: plan(ctx).target } }, spec: { unschedulable: true } });
  const left = async () => (await api.list<V1Pod>('v1', 'Pod')).filter((p) => p.spec?.nodeName === name && !drainSkipReason(p) && p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed');
  let blocked: string[] = [];
  const evicted = new Set<string>();
  const done = await pollUntil(async () => {
    const pods = await left();
    if (!pods.length) return true;
    blocked = [];
    for (const p of pods) {
      const ref = `${p.metadata?.namespace}/${p.metadata?.name}`;
      if (p.metadata?.deletionTimestamp) continue;
      const r = await api.evict(p.metadata!.name!, p.metadata!.namespace!);
      if (r === 'blocked') blocked.push(ref);
      else if (r === 'evicted' && !evicted.has(ref)) {
        evicted.add(ref);
        ctx.log.info(`evicted ${ref}`);
      }
    }
    return undefined;
  }, { timeoutMs: 300_000, intervalMs: 2_000, signal: ctx.signal });
  if (!done) {
    const pods = (await left()).map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`);
    throw new TimeoutError('drain-timeout', { what: `Node ${name}`, why: `pods still on it after 300 s: ${pods.join(', ')}${blocked.length ? ` (evictions refused by a PodDisruptionBudget: ${blocked.join(', ')})` : ''}`, fix: 'check the PodDisruptionBudgets of those pods (kubectl get pdb -A), then run `kubeception upgrade node` again (the node stays cordoned)' });
  }
  return { changed: true, detail: `cordoned; ${evicted.size} pod(s) evicted` };
}

/** `kubelet-config`: config.yaml and the unit drop-in rewritten as bootstrap/join write them. */
export async function upgradeKubeletConfig(ctx: UpgradeNodeContext): Promise<StepOutcome> {
  const changed = await writeKubeletFiles(ctx, { bootstrap: plan(ctx).worker });
  return { changed: changed.length > 0, detail: changed.join(', ') || 'up to date' };
}

/**
 * For a site's or distro's `kubelet-install` step (one that installs the kubelet itself after the
 * drain): how to put the previous kubelet binary back. `kubelet-restart` calls `restore` when the
 * kubelet does not come up at the target, before it restarts the previous one. `restore` must be
 * idempotent and @returns a one-line detail (no secrets: it is printed and lands in the agent's log).
 */
export function onKubeletRollback(ctx: UpgradeNodeContext, restore: () => Promise<string>): void {
  plan(ctx).restoreBinary = restore;
}

/** How long `kubelet-restart` waits for the Node Ready at the target, and after a roll-back at the previous version. */
export const KUBELET_UPGRADE_WAIT_MS = 180_000;
export const KUBELET_ROLLBACK_WAIT_MS = 90_000;

/**
 * Polls the Node until it is Ready with kubelet `version`, with a Ready heartbeat at or after
 * `sinceMs` (a Node status the kubelet posted before a failed restart does not count).
 * @returns true, or false after `timeoutMs`; `last` gets what was seen last.
 */
async function nodeReadyAt(ctx: UpgradeNodeContext, api: Cluster, version: string, sinceMs: number, timeoutMs: number, last: (seen: string) => void): Promise<boolean> {
  const since = Math.floor(sinceMs / 1000) * 1000;
  return !!(await pollUntil(async () => {
    const node = await readNode(ctx, api).catch(() => undefined);
    const v = node?.status?.nodeInfo?.kubeletVersion;
    const ready = node?.status?.conditions?.find((c) => c.type === 'Ready');
    const fresh = Date.parse(String(ready?.lastHeartbeatTime ?? '')) >= since;
    last(`kubeletVersion ${v ?? '?'}, Ready ${ready?.status ?? '?'}${fresh ? '' : ' (no heartbeat since the restart)'}`);
    return v === version && ready?.status === 'True' && fresh ? true : undefined;
  }, { timeoutMs, intervalMs: 1_000, signal: ctx.signal }));
}

/**
 * `kubelet-restart`: restarts the kubelet (when it runs another version or its files changed) and
 * waits until the Node is Ready and reports the target kubeletVersion. When the kubelet does not come
 * up at the target (its unit fails or crash-loops, or no Ready Node within 180 s) the node is rolled
 * back in the same run, as kubeadm rolls back a control-plane component whose new static pod does not
 * come up: the kubelet files `kubelet-config` rewrote are written back, the previous binary is put
 * back if the `kubelet-install` step said how ({@link onKubeletRollback}), and the kubelet is
 * restarted and must be Ready at its previous version within 90 s. The Node stays cordoned.
 * Host effects: the kubelet restarted; on a roll-back also config.yaml / the unit drop-in (0600) as
 * they were, the install step's restore, and a second restart.
 * @throws RolledBackError `kubelet-upgrade-rolled-back` (exit 1) naming why the new kubelet failed and what was put back.
 * @throws KubeceptionError `kubelet-rollback-failed` when the roll-back did not bring the previous kubelet back.
 * @throws the restart's UnitError or TimeoutError `kubelet-upgrade-timeout` when there was nothing to put back.
 */
export async function restartUpgradedKubelet(ctx: UpgradeNodeContext): Promise<StepOutcome> {
  const p = plan(ctx);
  const api = await nodeApi(ctx);
  const restart = p.running !== p.target || ctx.state.kubeletRestart === true;
  const restartedAt = Date.now();
  let failure: KubeceptionError | undefined;
  if (restart)
    failure = await restartKubelet(ctx, { restart: true }).then(() => undefined, (err: unknown) => {
      if (!(err instanceof KubeceptionError) || ctx.signal.aborted) throw err;
      return err;
    });
  let last = '';
  if (!failure && !(await nodeReadyAt(ctx, api, p.target, restart ? restartedAt : 0, KUBELET_UPGRADE_WAIT_MS, (l) => (last = l))))
    failure = new TimeoutError('kubelet-upgrade-timeout', { what: `Node ${ctx.config.nodeName}`, why: `not Ready with kubelet ${p.target} within ${KUBELET_UPGRADE_WAIT_MS / 1000} s (last: ${last})`, fix: `check \`journalctl -u ${ctx.config.distro.units.kubelet}\`` });
  if (failure) throw await rollBackUpgradedKubelet(ctx, api, failure);
  return { changed: restart, detail: `${restart ? 'kubelet restarted; ' : ''}Node Ready, kubelet ${p.target}` };
}

/** The roll-back of {@link restartUpgradedKubelet}. @returns the error to throw. */
async function rollBackUpgradedKubelet(ctx: UpgradeNodeContext, api: Cluster, failure: KubeceptionError): Promise<KubeceptionError> {
  const p = plan(ctx);
  const unit = ctx.config.distro.units.kubelet;
  const previous = ctx.state.kubeletPrevious ?? {};
  if (ctx.signal.aborted || ctx.dryRun || (!Object.keys(previous).length && !p.restoreBinary)) return failure;
  ctx.log.warn(`the kubelet ${p.target} did not come up (${failure.why.split('\n')[0]}); rolling back to ${p.running}`);
  const restored: string[] = [];
  const failed = (why: string) => new KubeceptionError('kubelet-rollback-failed', {
    what: `Node ${ctx.config.nodeName}`,
    why: `the kubelet ${p.target} did not come up (${failure.why.split('\n')[0]}), and the roll-back to ${p.running} failed: ${why}${restored.length ? ` (put back: ${restored.join(', ')})` : ''}`,
    fix: `bring the kubelet back by hand (the distro's kubelet ${p.running}; \`journalctl -u ${unit}\`); the Node stays cordoned until \`kubectl uncordon ${ctx.config.nodeName}\``,
    cause: failure,
  });
  try {
    restored.push(...(await writeBackKubeletFiles(ctx)));
    if (p.restoreBinary) restored.push(await p.restoreBinary());
    const at = Date.now();
    await restartKubelet(ctx, { restart: true });
    let last = '';
    if (!(await nodeReadyAt(ctx, api, p.running, at, KUBELET_ROLLBACK_WAIT_MS, (l) => (last = l))))
      return failed(`not Ready with kubelet ${p.running} within ${KUBELET_ROLLBACK_WAIT_MS / 1000} s (last: ${last})`);
  } catch (err) {
    if (ctx.signal.aborted) throw err;
    return failed((err as Error).message.split('\n')[0] ?? String(err));
  }
  return new RolledBackError('kubelet-upgrade-rolled-back', {
    what: `Node ${ctx.config.nodeName}`,
    why: `the kubelet ${p.target} did not come up (${failure.why.split('\n')[0]}); rolled back: ${restored.join(', ')} put back, the kubelet ${p.running} Ready again; the Node stays cordoned`,
    fix: `see why the new kubelet failed (\`journalctl -u ${unit}\`), fix that (the distro's kubelet ${p.target}, kubelet.extraConfig), then run \`kubeception upgrade node\` again — or return the Node to service at ${p.running} (\`kubeception upgrade rollback\` for a NodeUpgradePlan, else \`kubectl uncordon ${ctx.config.nodeName}\`)`,
    cause: failure,
  });
}

/** `uncordon`: lifts the cordon `drain` set (a cordon kubeception did not set is left as it is). */
export async function uncordonNode(ctx: UpgradeNodeContext): Promise<StepOutcome> {
  const api = await nodeApi(ctx);
  const node = await readNode(ctx, api);
  if (!node.metadata?.annotations?.[DRAINED_ANNOTATION]) return { changed: false, detail: node.spec?.unschedulable ? 'cordoned by someone else: left cordoned' : 'schedulable' };
  await api.patch({ apiVersion: 'v1', kind: 'Node', metadata: { name: ctx.config.nodeName } }, { metadata: { annotations: { [DRAINED_ANNOTATION]: null } }, spec: { unschedulable: false } });
  return { changed: true, detail: 'uncordoned' };
}
