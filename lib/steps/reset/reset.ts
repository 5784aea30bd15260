/**
 * The steps of `kubeception reset` (tasks/reset.ts), in kubeadm reset's safe order: the Node leaves
 * the cluster while the API still answers, then nothing may restart pods (watcher, kubelet), then the
 * pods go (through containerd), their mounts, etcd, the files and units kubeception wrote, its
 * network state (chains, links, routes — never a whole table), and last the residue report.
 * Every step is idempotent, so a reset after a failed or killed one finishes the job.
 *
 * Host effects: see each step; only what {@link ../reset/owned.ts} lists as ours is removed.
 * @see kubernetes/cmd/kubeadm/app/cmd/phases/reset/cleanupnode.go
 */
import { join } from 'node:path';
import { KubeceptionError } from '../../errors.ts';
import { RealFiles } from '../../host/files.ts';
import { pollUntil } from '../../util/poll.ts';
import { removalScript } from '../../reset/netfilter.ts';
import { RECOVERY_UNIT, SNAPSHOT_SERVICE, SNAPSHOT_TIMER } from '../../reset/owned.ts';
import { OWNED_MANIFEST, parseOwnedManifest } from '../../host/owned-manifest.ts';
import { NODE_RECORD, removeNodeRecord } from '../../host/node-record.ts';
import { chainOwnership, RESET_FACTS, RESET_JOURNAL, resetFacts } from '../../reset/ownership.ts';
import { files, iptablesDumps, links, mounts, netns, nftTableIsOurs } from '../../reset/cluster-state.ts';
import { CATEGORIES, containers, residueCount, residueReport, routes } from '../../reset/residue.ts';
import type { Context } from '../../context.ts';
import type { ResetContext } from '../contexts.ts';
import type { StepOutcome } from '../../engine/dsl.ts';
import { resetOutcome } from './outcome.ts';
import { removeCriContainers } from './cri-containers.ts';
import { isContainerd } from '../../host/crictl.ts';


const sock = (ctx: Context) => ctx.config.kubelet.criSocket.replace(/^unix:\/\//, '');
const ctr = (ctx: Context, ...args: string[]) => ctx.sh.exec(['ctr', '--address', sock(ctx), '-n', 'k8s.io', ...args], { allowFail: true, timeoutMs: 20_000 });
/** IDs of RUNNING tasks in `k8s.io` (a read: also under dry-run). */
async function runningTasks(ctx: Context): Promise<string[]> {
  const r = await ctx.sh.read(['ctr', '--address', sock(ctx), '-n', 'k8s.io', 'tasks', 'ls'], { allowFail: true, timeoutMs: 20_000 });
  return r.stdout.split('\n').filter((l) => / RUNNING\s*$/.test(l)).map((l) => l.split(/\s+/)[0]!);
}

/** Stops and disables units (absent units are skipped). */
async function stopUnits(ctx: Context, units: string[]): Promise<StepOutcome> {
  const changed: string[] = [];
  for (const u of units) {
    if ((await ctx.systemd.unitFileState(u).catch(() => 'not-found')) === 'not-found') continue;
    if (['active', 'activating', 'reloading'].includes(await ctx.systemd.activeState(u))) {
      await ctx.systemd.stop(u);
      changed.push(`${u} stopped`);
    }
    if (await ctx.systemd.disable?.([u])) changed.push(`${u} disabled`);
  }
  return resetOutcome(changed, 'already stopped and disabled');
}

/** `stop-kubelet`: the recovery watcher first (it would bring a static pod back), then the kubelet. */
export const stopKubelet = (ctx: Context) => stopUnits(ctx, [RECOVERY_UNIT, ctx.config.distro.units.kubelet]);

/** `stop-etcd`: stops and disables the snapshot timer (and a snapshot running), then the etcd unit. */
export const stopEtcd = (ctx: Context) => stopUnits(ctx, [SNAPSHOT_TIMER, SNAPSHOT_SERVICE, ctx.config.distro.units.etcd]);

/**
 * `remove-containers`: every task and container in containerd's `k8s.io` namespace (the kubelet's),
 * the pods' network namespaces; then restarts containerd so its CRI plugin forgets the sandboxes.
 * For another runtime (`kubelet.criSocket` not containerd's): {@link removeCriContainers}.
 */
export async function removeContainers(ctx: ResetContext): Promise<StepOutcome> {
  if (!isContainerd(ctx)) return removeCriContainers(ctx);
  const facts = await resetFacts(ctx);
  // Which netns are our pods' is known only while the pods run: record them first, for a reset killed after this.
  const pods = (await netns(ctx, facts)).ours;
  if (pods.length && !ctx.dryRun) await ctx.files.write(RESET_JOURNAL, `${JSON.stringify(pods)}\n`, { mode: 0o600, dirMode: 0o700 });
  const removed = new Set<string>();
  // Passes: a sandbox the stopped kubelet had in flight can appear after the first listing.
  for (let pass = 0; pass < 3; pass++) {
    const ids = await containers(ctx);
    if (!ids.length) break;
    // SIGKILL, wait for the tasks to stop, then delete them (`tasks delete --force` can hang on a pause task).
    for (const id of ids) await ctr(ctx, 'tasks', 'kill', '--signal', 'SIGKILL', id);
    if (!ctx.dryRun) await pollUntil(async () => ((await runningTasks(ctx)).some((t) => ids.includes(t)) ? undefined : true), { timeoutMs: 20_000, intervalMs: 500, signal: ctx.signal });
    for (const id of ids) await ctr(ctx, 'tasks', 'delete', id);
    for (const id of ids) if ((await ctr(ctx, 'containers', 'delete', id)).code === 0) removed.add(id);
    if (ctx.dryRun) break;
  }
  const spaces = (await netns(ctx, facts)).ours;
  for (const ns of spaces) await ctx.sh.exec(['ip', 'netns', 'delete', ns], { allowFail: true });
  if (removed.size) await ctx.systemd.start(ctx.config.distro.units.containerRuntime, { restart: true });
  const changed = [...(removed.size ? [`${removed.size} container(s) removed, ${ctx.config.distro.units.containerRuntime} restarted`] : []), ...(spaces.length ? [`${spaces.length} pod netns removed`] : [])];
  return resetOutcome(changed, 'no containers');
}

/** `unmount`: the cluster's mounts (pod volumes, pod netns, containerd's k8s.io state), deepest first; foreign mounts stay. */
export async function unmount(ctx: ResetContext): Promise<StepOutcome> {
  const facts = await resetFacts(ctx);
  const list = (await mounts(ctx, facts, (await netns(ctx, facts)).ours)).ours.sort((a, b) => b.length - a.length);
  for (const m of list) {
    const r = await ctx.sh.exec(['umount', m], { allowFail: true });
    if (r.code !== 0) await ctx.sh.exec(['umount', '-l', m], { allowFail: true });
  }
  return resetOutcome(list.length ? [`${list.length} mount(s)`] : [], 'nothing mounted');
}

/**
 * `remove-files`: the files and trees proven this cluster's (lib/reset/ownership.ts), its etcd
 * environment file, the etcd data (unless kept), the node record (lib/host/node-record.ts; kept, with a
 * warning, when this reset ran with another distro than it names); recorded directories once empty; then the ownership
 * manifest and the reset journal once nothing they name is left. Trees are removed without
 * following symlinks and without entering any mount point (HostFiles.removeTree).
 */
export async function removeFiles(ctx: ResetContext): Promise<StepOutcome> {
  const facts = await resetFacts(ctx);
  const m = await mounts(ctx, facts, []);
  const f = await files(ctx, facts, m.foreign);
  const mountPoints = new Set(m.all);
  const changed: string[] = [];
  const kept: string[] = [];
  for (const path of f.ours) {
    if (mountPoints.has(path)) {
      kept.push(path);
      continue;
    }
    const r = await ctx.files.removeTree(path, { mountPoints });
    if (r.removed) changed.push(path);
    kept.push(...r.kept);
  }
  if (kept.length) ctx.log.warn(`kept mount point(s) inside paths of ours: ${kept.join(', ')}`);
  if (changed.some((p) => p.endsWith('.service') || p.endsWith('.conf'))) await ctx.systemd.reload();
  // Directories kubeception created, deepest first, once empty; the PKI directories as before.
  const dirs = [...new Set([...f.dirs, join(ctx.config.certificatesDir, 'etcd'), ctx.config.certificatesDir])].sort((a, b) => b.length - a.length);
  for (const dir of dirs)
    if ((await ctx.files.exists(dir)) && (await ctx.files.list(dir)).length === 0 && !mountPoints.has(dir)) await ctx.sh.exec(['rmdir', dir], { allowFail: true });
  // The node record (its distro) goes with the etcd environment: a reset node may be set up with another
  // distro. Kept when this reset ran with another distro than the node's: it looked at the wrong paths.
  const record = await removeNodeRecord(ctx.files, ctx.config);
  if (typeof record === 'string') ctx.log.warn(record);
  else if (record) changed.push(NODE_RECORD);
  const left = [...(parseOwnedManifest(await ctx.files.read(OWNED_MANIFEST)) ?? new Map()).keys()];
  const still = await Promise.all(left.map((p) => ctx.files.exists(p)));
  if (!still.some(Boolean) && (await ctx.files.remove(OWNED_MANIFEST))) changed.push(OWNED_MANIFEST);
  return resetOutcome(changed.length ? [`${changed.length} path(s) removed`] : [], 'no files of ours');
}

/** `remove-network`: the cluster's iptables chains (every backend), nftables tables, links and routes to the cluster's ranges. */
export async function removeNetwork(ctx: ResetContext): Promise<StepOutcome> {
  const facts = await resetFacts(ctx);
  const changed: string[] = [];
  for (const [cmd, save] of await iptablesDumps(ctx)) {
    const script = removalScript(save, chainOwnership(facts));
    if (!script) continue;
    const r = await ctx.sh.exec([`${cmd}-restore`, '--noflush'], { input: script, allowFail: true });
    if (r.code !== 0) throw new KubeceptionError('reset-netfilter', { what: `${cmd}-restore --noflush`, why: r.stderr.trim().split('\n').slice(-2).join(' | '), fix: `inspect \`${cmd}-save\` and remove this cluster's KUBE-*/CNI-*/FLANNEL* chains by hand` });
    changed.push(`${cmd} chains`);
  }
  for (const line of (await ctx.sh.read(['nft', 'list', 'tables'], { allowFail: true }).catch(() => ({ stdout: '' }))).stdout.split('\n')) {
    const [, family, name] = line.trim().split(/\s+/);
    if (family && name && nftTableIsOurs(facts, name) && (await ctx.sh.exec(['nft', 'delete', 'table', family, name], { allowFail: true })).code === 0) changed.push(`nft ${family} ${name}`);
  }
  for (const l of (await links(ctx, facts)).ours) if ((await ctx.sh.exec(['ip', 'link', 'delete', l], { allowFail: true })).code === 0) changed.push(`link ${l}`);
  for (const r of await routes(ctx)) if ((await ctx.sh.exec(['ip', 'route', 'delete', r.split(' ')[0]!], { allowFail: true })).code === 0) changed.push(`route ${r}`);
  return resetOutcome(changed, 'no chains, links or routes of ours');
}

/**
 * `residue-report`: gathers what remains into `state.resetReport`.
 * @throws KubeceptionError `reset-residue` naming each category that is not empty.
 */
export async function reportResidue(ctx: ResetContext): Promise<StepOutcome> {
  // Under --dry-run the report is what a reset would remove: the host as it is, not the recording
  // backend's view after the planned removals (which would list no file at all).
  const report = await residueReport(ctx.dryRun ? { ...ctx, files: new RealFiles() } : ctx);
  ctx.state.resetReport = report;
  if (ctx.dryRun || residueCount(report) === 0) {
    if (!ctx.dryRun) for (const f of [RESET_JOURNAL, RESET_FACTS]) await ctx.files.remove(f);
    const foreign = report.foreign.length + Object.values(report.foreignState).flat().length;
    return { changed: false, detail: `clean${foreign ? `; ${foreign} foreign item(s) kept` : ''}` };
  }
  const left = CATEGORIES.filter((c) => report.residue[c].length).map((c) => `${c}: ${report.residue[c].slice(0, 3).join(', ')}${report.residue[c].length > 3 ? ', …' : ''}`);
  throw new KubeceptionError('reset-residue', { what: 'this host after reset', why: `kubeception's state remains — ${left.join('; ')}`, fix: 'run `kubeception reset` again; if it stays, remove these by hand (the report lists them all)' });
}
