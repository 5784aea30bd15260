/**
 * The host-changing steps of `kubeception etcd restore SNAPSHOT` (tasks/etcd-restore.ts) around the
 * bootstrap's own: stop what could write to etcd or bring a pod back, put the snapshot's shared keys
 * where the host has none, restore the data dir as a new one-member cluster (the old one moved aside,
 * never deleted), and the end: the RTO. Between them the task runs bootstrap's steps (etcd, the
 * bootstrap control plane, the self-hosted one, the pivot), which converge on the restored data.
 *
 * Host effects: see each step. Kubernetes' order: every kube-apiserver stopped before etcd's data is
 * replaced, then restarted, with kube-controller-manager, kube-scheduler and the kubelet restarted too.
 * @see https://kubernetes.io/docs/tasks/administer-cluster/configure-upgrade-etcd/#restoring-an-etcd-cluster
 */
import { dirname, join } from 'node:path';
import { ETCD_OWNER_MARKER } from '../../constants.ts';
import { HostStateError, KubeceptionError } from '../../errors.ts';
import { pollUntil } from '../../util/poll.ts';
import { openSnapshot } from '../../etcd/snapshot-bundle.ts';
import { snapshotTools, lastLine } from '../../etcd/snapshot.ts';
import { etcdPeerUrl } from '../../etcd/config.ts';
import { asideName, restoreArgv, restoreClusterToken, type RestoreFacts } from '../../etcd/restore-plan.ts';
import { compactTime } from '../../etcd/snapshot-meta.ts';
import { SNAPSHOT_SERVICE } from '../../etcd/snapshot-schedule.ts';
import { RECOVERY_UNIT, recoveryPaths } from '../recovery/recovery.ts';
import { etcdCaHash } from '../bootstrap/etcd.ts';
import { activeApiserver } from '../bootstrap/control-plane.ts';
import { applyComponentByComponent, selfHostedManifests } from '../self-hosted/self-hosted.ts';
import { cluster } from '../../k8s/apiserver.ts';
import type { Context } from '../../context.ts';
import type { RestoreContext } from '../contexts.ts';
import type { StepOutcome } from '../../engine/dsl.ts';

/** The containers `stop-control-plane` stops: every kube-apiserver (self-hosted, recovery, bootstrap), controller-manager and scheduler. */
export const CONTROL_PLANE_CONTAINERS = ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler'] as const;

const facts = (ctx: RestoreContext): RestoreFacts => {
  const f = ctx.state.restore;
  if (!f) throw new HostStateError('restore-not-checked', { what: 'etcd-restore', why: 'restore-preflight did not run in this run', fix: 'run the whole task (`kubeception etcd restore NAME`), not --only/--skip restore-preflight' });
  return f;
};

const ctrArgv = (ctx: Context, ...args: string[]) => ['ctr', '--address', ctx.config.kubelet.criSocket.replace(/^unix:\/\//, ''), '-n', 'k8s.io', ...args];

/** IDs of the control-plane containers ({@link CONTROL_PLANE_CONTAINERS}) with a RUNNING task (reads). */
async function runningControlPlane(ctx: Context): Promise<string[]> {
  const ids = new Set<string>();
  for (const c of CONTROL_PLANE_CONTAINERS) {
    const r = await ctx.sh.read(ctrArgv(ctx, 'containers', 'ls', '-q', `labels."io.kubernetes.container.name"==${c}`), { allowFail: true, timeoutMs: 20_000 });
    for (const id of r.stdout.split('\n').map((l) => l.trim()).filter(Boolean)) ids.add(id);
  }
  if (!ids.size) return [];
  const tasks = await ctx.sh.read(ctrArgv(ctx, 'tasks', 'ls'), { allowFail: true, timeoutMs: 20_000 });
  return tasks.stdout.split('\n').map((l) => l.trim().split(/\s+/)).filter((w) => w[2] === 'RUNNING' && ids.has(w[0]!)).map((w) => w[0]!);
}

/**
 * `stop-control-plane`: the recovery watcher (it would activate the recovery pod), the kubelet (it
 * would restart pods), then SIGKILL to every control-plane container — no kube-apiserver may keep a
 * cache of the old data or write to the restored one — the active recovery manifest removed (its
 * last-known-good copy stays), and etcd stopped (and a snapshot being taken). Units stay enabled.
 * @throws KubeceptionError `restore-stop` (exit 1) when a control-plane container still runs 30 s after SIGKILL.
 */
export async function stopControlPlane(ctx: RestoreContext): Promise<StepOutcome> {
  const changed: string[] = [];
  const stop = async (unit: string) => {
    if (!['active', 'activating', 'reloading'].includes(await ctx.systemd.activeState(unit).catch(() => 'inactive'))) return;
    await ctx.systemd.stop(unit);
    changed.push(`${unit} stopped`);
  };
  await stop(RECOVERY_UNIT);
  await stop(ctx.config.distro.units.kubelet);
  const running = await runningControlPlane(ctx);
  for (const id of running) await ctx.sh.exec(ctrArgv(ctx, 'tasks', 'kill', '--signal', 'SIGKILL', id), { allowFail: true, timeoutMs: 20_000 });
  if (running.length && !ctx.dryRun) {
    const gone = await pollUntil(async () => ((await runningControlPlane(ctx)).length ? undefined : true), { timeoutMs: 30_000, intervalMs: 250, signal: ctx.signal });
    if (!gone) throw new KubeceptionError('restore-stop', { what: `control-plane containers ${(await runningControlPlane(ctx)).join(', ')}`, why: 'they still run 30 s after SIGKILL', fix: 'check containerd (`systemctl status containerd`, `ctr -n k8s.io tasks ls`), then run the restore again' });
  }
  if (running.length) changed.push(`${running.length} control-plane container(s) killed`);
  if (await ctx.files.remove(recoveryPaths(ctx.config).active)) changed.push('recovery static pod deactivated');
  await stop(SNAPSHOT_SERVICE);
  await stop(ctx.config.distro.units.etcd);
  return { changed: changed.length > 0, detail: changed.join(', ') || 'nothing was running' };
}

/** `restore-pki`: writes the shared PKI files the host lacks from the snapshot (keys 0600, certificates 0644); others are kept. */
export async function restorePki(ctx: RestoreContext): Promise<StepOutcome> {
  const f = facts(ctx);
  if (!f.pkiMissing.length) return { changed: false, detail: 'this host has the snapshot\'s shared keys' };
  const { pki } = await openSnapshot(ctx, f.name);
  const written: string[] = [];
  for (const rel of f.pkiMissing) {
    const path = join(ctx.config.certificatesDir, rel);
    // Written only where still absent: a key that appeared since the preflight is never replaced.
    if (await ctx.files.exists(path)) continue;
    if (await ctx.files.write(path, pki[rel]!, { mode: rel.endsWith('.key') ? 0o600 : 0o644, dirMode: 0o755 })) written.push(rel);
  }
  return { changed: written.length > 0, detail: `from the snapshot: ${written.join(', ') || 'none'}` };
}

/**
 * `restore-data-dir`: moves the old data dir (one holding anything) to `<dataDir>.before-restore-<UTC>`,
 * restores the snapshot with etcdutl into a root-only scratch directory beside it (so no other user
 * can redirect the write), as this node alone with a new cluster token (a new cluster id), the revision
 * bumped on etcd 3.6, renames it into place and writes the owner marker. On a failure the old data dir
 * is put back. The `etcd` step then gives the data dir to the etcd user and starts etcd.
 * Host effects: the rename aside, `<parent>/.kubeception-restore-<UTC>/` (0700, removed again), the
 * new `dataDir` (root's until the `etcd` step) and its marker (0600, the etcd user's).
 * @throws HostStateError `restore-etcd-running` | `restore-aside-exists`; KubeceptionError `etcd-restore-failed` (exit 1).
 */
export async function restoreDataDir(ctx: RestoreContext): Promise<StepOutcome> {
  const f = facts(ctx);
  const { config, files, sh } = ctx;
  const dataDir = config.etcd.dataDir.replace(/\/+$/, '');
  const unit = config.distro.units.etcd;
  if (!ctx.dryRun && (await ctx.systemd.activeState(unit)) === 'active')
    throw new HostStateError('restore-etcd-running', { what: unit, why: 'etcd was started again after stop-control-plane: its data dir cannot be replaced under it', fix: `stop whatever starts it, then run the restore again` });
  const at = new Date(f.startedAtMs);
  const changes: string[] = [];
  let aside: string | undefined;
  if (await files.exists(dataDir)) {
    if ((await files.list(dataDir)).length) {
      aside = asideName(dataDir, at);
      if (await files.exists(aside)) throw new HostStateError('restore-aside-exists', { what: aside, why: 'a data dir moved aside by an earlier restore started in the same second is there', fix: 'run the restore again in a second' });
      await sh.exec(['mv', '-T', dataDir, aside]);
      changes.push(`old data dir kept at ${aside}`);
    } else await sh.exec(['rmdir', dataDir]);
  }
  const scratch = join(dirname(dataDir), `.kubeception-restore-${compactTime(at)}`);
  try {
    await files.mkdir(dirname(dataDir), 0o755);
    await sh.exec(['mkdir', '-m', '0700', scratch]);
    const tools = await snapshotTools(sh, 'the restore needs it');
    const member = { name: config.nodeName, peerUrl: etcdPeerUrl(config), clusterToken: restoreClusterToken(at) };
    const r = await sh.exec(restoreArgv(tools, f.db, join(scratch, 'data'), member, f.bump), { env: { ETCDCTL_API: '3' }, allowFail: true, timeoutMs: 600_000 });
    if (r.code !== 0) throw new KubeceptionError('etcd-restore-failed', { what: f.db, why: `${tools.offline.tool} snapshot restore failed: ${lastLine(r.stderr || r.stdout)}`, fix: 'fix the cause, then run the restore again (the old data dir is back in place)' });
    await sh.exec(['mv', '-T', join(scratch, 'data'), dataDir]);
  } catch (err) {
    // Nothing is lost: the old data dir goes back where it was unless something new is there.
    if (aside && !ctx.dryRun && !(await files.exists(dataDir))) await sh.exec(['mv', '-T', aside, dataDir], { allowFail: true });
    throw err;
  } finally {
    await sh.exec(['rm', '-rf', '--one-file-system', scratch], { allowFail: true });
  }
  const marker = JSON.stringify({ etcdCA: await etcdCaHash(ctx), nodeName: config.nodeName, restoredFrom: f.name }, null, 2);
  await files.write(join(dataDir, ETCD_OWNER_MARKER), `${marker}\n`, { mode: 0o600, owner: config.distro.etcdUser });
  f.aside = aside;
  changes.push(`${f.name} restored by ${f.tool} (revision ${f.revision}${f.bump ? ', bumped by 1e9 and marked compacted' : ''}, a new cluster id)`);
  return { changed: true, detail: changes.join('; ') };
}

/**
 * A restore's `self-hosted-control-plane`: the self-hosted objects applied through the active
 * apiserver (the bootstrap one) one component at a time, each roll awaited, as `certs renew` does.
 * The objects exist already (the snapshot's); on a rebuilt host the re-issued certificates change
 * their pod templates, and applied at once those rolls stalled on the bed (the recovery copy then
 * waited for an apiserver roll that did not finish: applyComponentByComponent says why).
 * @throws TimeoutError `rollout-timeout` naming the workload (300 s per component).
 */
export async function applyRestoredControlPlane(ctx: RestoreContext): Promise<StepOutcome> {
  const which = await activeApiserver(ctx);
  const api = await cluster(ctx, which);
  const { changed, rolled } = await applyComponentByComponent(ctx, api, await selfHostedManifests(ctx, api));
  for (const ref of changed) ctx.log.info(`applied ${ref}`);
  return { changed: changed.length > 0, detail: `${changed.length} object(s) changed via the ${which} apiserver${rolled.length ? `; rolled one at a time: ${rolled.join(', ')}` : ''}` };
}

/** `restore-done`: the RTO, from the restore's start to the self-hosted kube-apiserver serving the restored data. */
export async function restoreDone(ctx: RestoreContext): Promise<StepOutcome> {
  const f = facts(ctx);
  f.rtoMs = Date.now() - f.startedAtMs;
  const detail = `RTO ${(f.rtoMs / 1000).toFixed(1)} s: the self-hosted kube-apiserver serves ${f.name} (revision ${f.revision}, ${f.keyCount} keys)${f.aside ? `; old data dir kept at ${f.aside}` : ''}`;
  ctx.log.info(detail);
  return { changed: false, detail };
}
