/**
 * The steps of `kubeception upgrade apply vX.Y.Z` (tasks/upgrade-apply.ts): the self-hosted control
 * plane is upgraded by Kubernetes itself — its DaemonSet and Deployments get the target images and
 * roll with a surge (the new kube-apiserver binds the port beside the old one), so on a single node
 * a new apiserver serves before the old one stops. kubeadm's `upgrade apply` order: preflight and
 * version-skew policy, a backup, control plane, addons.
 *
 * A *journal* (`/var/lib/kubeception/upgrade/journal.json`) records the upgrade in progress — from,
 * to, the backup directory — so a run killed at any point and run again resumes the same upgrade
 * (the same "from" and backup, no second snapshot) instead of taking the half-upgraded cluster as
 * its starting point. It is marked `done` or `rolled-back` at the end.
 *
 * Host effects: the journal and a backup directory per upgrade under /var/lib/kubeception/upgrade
 * (0700; the etcd snapshot and the objects, Secrets included, 0600; the last
 * {@link KEEP_BACKUPS} kept); the recovery manifest refreshed. Cluster effects: the control-plane
 * workloads, kube-proxy and CoreDNS applied with the target's images.
 * @see kubernetes/cmd/kubeadm/app/cmd/upgrade/apply.go
 */
import { join } from 'node:path';
import { HostStateError, KubeceptionError, PreflightError } from '../../errors.ts';
import { adminTls, cluster } from '../../k8s/apiserver.ts';
import { apiserverUrls } from '../../k8s/endpoints.ts';
import { saveEtcdSnapshot, snapshotTools } from '../../etcd/snapshot.ts';
import { pollUntil } from '../../util/poll.ts';
import { toYaml } from '../../util/yaml.ts';
import { withoutServerFields } from '../../k8s/objects.ts';
import { probeHttps } from '../../net/probe.ts';
import { selfHostedManifests, applyComponentByComponent, SELF_HOSTED_COMPONENTS } from '../self-hosted/self-hosted.ts';
import { clusterVersions, UPGRADE_COMPONENTS } from '../../upgrade/plan.ts';
import { skewChecks } from '../../upgrade/skew.ts';
import type { KubernetesObject, V1Pod } from '../../k8s/client.ts';
import type { Context } from '../../context.ts';
import type { UpgradeApplyContext } from '../contexts.ts';
import type { HostFiles } from '../../host/files.ts';
import type { StepOutcome } from '../../engine/dsl.ts';
import type { UpgradeJournal } from '../../upgrade/journal.ts';

import { JOURNAL, UPGRADE_DIR } from '../../upgrade/journal.ts';

/** Where upgrades keep their journal and backups (lib/upgrade/journal.ts). */
export { JOURNAL, UPGRADE_DIR };
/** Backup directories kept (the oldest beyond this are removed when a new upgrade starts). */
export const KEEP_BACKUPS = 3;

export type { UpgradeJournal } from '../../upgrade/journal.ts';

async function readJournal(ctx: Context): Promise<UpgradeJournal | undefined> {
  const text = await ctx.files.read(JOURNAL);
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as UpgradeJournal;
  } catch {
    throw new HostStateError('upgrade-journal', { what: JOURNAL, why: 'it is not valid JSON (a write was cut off?)', fix: `move it aside (the backups under ${UPGRADE_DIR} stay) and run the upgrade again` });
  }
}

async function writeJournal(ctx: UpgradeApplyContext, j: UpgradeJournal): Promise<void> {
  await ctx.files.write(JOURNAL, `${JSON.stringify(j, null, 2)}\n`, { mode: 0o600, dirMode: 0o700 });
  ctx.state.upgrade = j;
}

const journal = (ctx: UpgradeApplyContext): UpgradeJournal => {
  if (!ctx.state.upgrade) throw new Error('upgrade-preflight did not run');
  return ctx.state.upgrade;
};

/**
 * `upgrade-preflight`: the version-skew policy (errors refuse with their check ids, exit 2; nothing
 * changed), then the journal: an unfinished upgrade to the same target is resumed; one to another
 * target is refused.
 * @throws PreflightError naming the failed policy checks; HostStateError `upgrade-in-progress` | `upgrade-journal`.
 */
export async function upgradePreflight(ctx: UpgradeApplyContext): Promise<StepOutcome> {
  const target = ctx.config.kubernetesVersion;
  const { joinedControlPlane, joinedControlPlaneError } = await import('../join/joined-control-plane.ts');
  if (await joinedControlPlane(ctx)) throw joinedControlPlaneError(`upgrade apply ${target}`);
  const api = await cluster(ctx, 'final');
  const versions = await clusterVersions(ctx, api);
  const previous = await readJournal(ctx);
  const resuming = previous && (previous.phase === 'started' || previous.phase === 'control-plane');
  if (resuming && previous.to !== target)
    throw new HostStateError('upgrade-in-progress', { what: JOURNAL, why: `an upgrade ${previous.from} → ${previous.to} was started on ${previous.started} and did not finish`, fix: `finish it first: kubeception upgrade apply ${previous.to}` });
  // Resuming: the policy is judged from where the upgrade started, not from the half-upgraded state.
  const from = resuming ? previous.from : versions.cluster;
  const checks = skewChecks({ ...versions, cluster: from }, target);
  for (const c of checks.filter((c) => c.severity === 'warning')) ctx.log.warn(`${c.id}: ${c.why}; ${c.fix}`);
  const errors = checks.filter((c) => c.severity === 'error');
  // The policy is not skippable: a cluster outside it is one Kubernetes does not support.
  if (errors.length) throw new PreflightError(errors.map((c) => ({ id: c.id, message: c.why, fix: c.fix, ignorable: false })));
  if (resuming) {
    ctx.state.upgrade = previous;
    return { changed: false, detail: `resuming the upgrade ${previous.from} → ${target} started ${previous.started} (backup ${previous.backupDir})` };
  }
  // Already there (a re-run after a finished upgrade): converge without a new snapshot, keeping the backups.
  if (previous?.phase === 'done' && previous.to === target && versions.cluster === target) {
    ctx.state.upgrade = previous;
    return { changed: false, detail: `the cluster is at ${target} (upgraded from ${previous.from}); converging` };
  }
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  await writeJournal(ctx, { from, to: target, started: new Date().toISOString(), backupDir: join(UPGRADE_DIR, `${stamp}-${from}-to-${target}`), phase: 'started' });
  return { changed: true, detail: `upgrade ${from} → ${target}; journal ${JOURNAL}` };
}

/** A backup directory's name: `<ISO time with - for : and .>-<from>-to-<to>` (see {@link upgradePreflight}). */
const BACKUP_NAME = /^\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z-v[^/]+-to-v[^/]+$/;

/**
 * Removes the backup directories of `dir` beyond the newest `keepCount` (by name: the names start
 * with their ISO time), never `keep` (this upgrade's). Only entries named like a backup are
 * considered (the journal, temp files and anything else stay). Each goes with
 * {@link HostFiles.removeTree} (no symlink followed; under dry-run recorded, not done).
 * @returns the names removed, oldest first.
 */
export async function pruneBackups(files: HostFiles, dir: string, keep: string, keepCount = KEEP_BACKUPS): Promise<string[]> {
  const dirs = (await files.list(dir)).filter((d) => BACKUP_NAME.test(d)).sort();
  const old = dirs.filter((d) => join(dir, d) !== keep).slice(0, Math.max(0, dirs.length - keepCount));
  for (const d of old) await files.removeTree(join(dir, d));
  return old;
}

/**
 * `etcd-snapshot`: `etcdctl snapshot save` of the local member into the backup directory (0600),
 * with the healthcheck client certificate (lib/etcd/snapshot.ts, shared with `kubeception etcd
 * snapshot save`). Skipped when this upgrade's journal already has one.
 */
export async function etcdSnapshot(ctx: UpgradeApplyContext): Promise<StepOutcome> {
  const j = journal(ctx);
  if (j.snapshot && (await ctx.files.exists(j.snapshot))) return { changed: false, detail: `snapshot taken earlier: ${j.snapshot}` };
  const { etcdctl } = await snapshotTools(ctx.sh, 'the upgrade takes an etcd snapshot first');
  const file = join(j.backupDir, 'etcd-snapshot.db');
  await ctx.files.mkdir(j.backupDir, 0o700);
  await saveEtcdSnapshot(ctx, etcdctl, file);
  await writeJournal(ctx, { ...j, snapshot: file });
  const pruned = await pruneBackups(ctx.files, UPGRADE_DIR, j.backupDir);
  return { changed: true, detail: `etcd snapshot ${file}${pruned.length ? `; removed older backups ${pruned.join(', ')}` : ''}` };
}


/**
 * `backup-objects`: the live workloads the upgrade changes and the ConfigMaps of the control plane
 * (and, on a cluster an older kubeception made, the Secrets that held its keys), as one YAML stream
 * `objects.yaml` (0600).
 */
export async function backupObjects(ctx: UpgradeApplyContext): Promise<StepOutcome> {
  const j = journal(ctx);
  if (j.objects && (await ctx.files.exists(j.objects))) return { changed: false, detail: `objects saved earlier: ${j.objects}` };
  const api = await cluster(ctx, 'final');
  const refs = [
    ...UPGRADE_COMPONENTS.map((c) => ({ apiVersion: 'apps/v1', kind: c.kind, metadata: { name: c.name, namespace: 'kube-system' } })),
    ...SELF_HOSTED_COMPONENTS.map(([, c]) => ({ apiVersion: 'v1', kind: 'Secret', metadata: { name: c, namespace: 'kube-system' } })),
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'kube-proxy', namespace: 'kube-system' } },
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'coredns', namespace: 'kube-system' } },
  ];
  const live = (await Promise.all(refs.map((r) => api.read(r)))).filter((o): o is KubernetesObject => !!o).map((o) => ({ ...withoutServerFields(o), apiVersion: o.apiVersion ?? '', kind: o.kind ?? '' }));
  const file = join(j.backupDir, 'objects.yaml');
  await ctx.files.write(file, live.map((o) => toYaml(o)).join('---\n'), { mode: 0o600, dirMode: 0o700 });
  await writeJournal(ctx, { ...j, objects: file });
  return { changed: true, detail: `${live.length} objects saved to ${file}` };
}

/**
 * `control-plane`: kube-apiserver, kube-controller-manager, kube-scheduler with the target images,
 * one component at a time, each rollout waited for (`timeoutMs` each). If one does not complete,
 * the control plane is rolled back to the journal's "from" version and the step fails saying so.
 * @throws KubeceptionError `upgrade-rolled-back` (exit 1) naming the component and why.
 */
export async function upgradeControlPlane(ctx: UpgradeApplyContext): Promise<StepOutcome> {
  const j = journal(ctx);
  const api = await cluster(ctx, 'final');
  await writeJournal(ctx, { ...j, phase: 'control-plane' });
  const timeoutMs = ctx.options.upgradeTimeoutMs ?? 300_000;
  try {
    const { changed, rolled } = await applyComponentByComponent(ctx, api, await selfHostedManifests(ctx, api), { timeoutMs, waitAll: true });
    for (const c of changed) ctx.log.info(`applied ${c}`);
    return { changed: changed.length > 0, detail: rolled.length ? `rolled ${rolled.join(', ')} to ${j.to}` : `already at ${j.to}` };
  } catch (err) {
    if (ctx.signal.aborted) throw err;
    ctx.log.warn(`the upgrade to ${j.to} did not complete (${(err as Error).message}); rolling the control plane back to ${j.from}`);
    const back = { ...ctx, config: { ...ctx.config, kubernetesVersion: j.from } };
    await applyComponentByComponent(back, api, await selfHostedManifests(back, api), { timeoutMs: 300_000, waitAll: true });
    await writeJournal(ctx, { ...journal(ctx), phase: 'rolled-back' });
    const why = err instanceof KubeceptionError ? `${err.what}: ${err.why}` : String(err);
    throw new KubeceptionError('upgrade-rolled-back', {
      what: `upgrade ${j.from} → ${j.to}`,
      why: `${why}; the control plane was rolled back to ${j.from} and serves`,
      fix: `check that every control-plane node has the ${j.to} images (ctr -n k8s.io images ls | grep ${j.to}) or can pull them, then run \`kubeception upgrade apply ${j.to}\` again; the backup is in ${j.backupDir}`,
    });
  }
}

/**
 * `verify`: every kube-apiserver pod (one per control-plane node) answers `/version` with the
 * target and `/readyz` 200 ten times in a row (200 ms apart).
 * @throws TimeoutError-like KubeceptionError `upgrade-verify` naming the apiserver and its last answer.
 */
export async function verifyUpgrade(ctx: Context): Promise<StepOutcome> {
  const target = ctx.config.kubernetesVersion;
  const api = await cluster(ctx, 'final');
  // Each node's apiserver by its IP, checked against the name `kubernetes`: the shared serving
  // certificate names every control-plane node's apiserver that way, not by each node's IP.
  const tls = { ...(await adminTls(ctx, 'final')), servername: 'kubernetes' };
  const port = ctx.config.localAPIEndpoint.bindPort;
  const pods = await api.list<V1Pod>('v1', 'Pod', 'kube-system', 'component=kube-apiserver');
  const hosts = [...new Set(pods.map((p) => p.status?.hostIP).filter((h): h is string => !!h))];
  if (!hosts.length) hosts.push(new URL(apiserverUrls(ctx.config).final).hostname);
  for (const host of hosts) {
    const base = `https://${host.includes(':') ? `[${host}]` : host}:${port}`;
    let streak = 0;
    let last = 'not probed';
    const ok = await pollUntil(async () => {
      const [v, r] = await Promise.all([probeHttps(`${base}/version`, tls), probeHttps(`${base}/readyz`, tls)]);
      const version = 'status' in v && v.status === 200 ? (JSON.parse(v.body) as { gitVersion?: string }).gitVersion : undefined;
      const ready = 'status' in r && r.status === 200;
      if (version === target && ready) return ++streak >= 10 ? true : undefined;
      last = `version ${version ?? '?'}, readyz ${'status' in r ? r.status : r.error}`;
      streak = 0;
      return undefined;
    }, { timeoutMs: 120_000, intervalMs: 200, signal: ctx.signal });
    if (!ok) throw new KubeceptionError('upgrade-verify', { what: `kube-apiserver at ${base}`, why: `not serving ${target} and ready 10 times in a row within 120 s (last: ${last})`, fix: 'check its pod: kubectl -n kube-system get pods -l component=kube-apiserver -o wide' });
  }
  return { changed: false, detail: `${hosts.length} kube-apiserver(s) serve ${target}, ready 10 times in a row` };
}

/** `upgrade-done`: the journal marked done; says what to change in the site's config. */
export async function finishUpgrade(ctx: UpgradeApplyContext): Promise<StepOutcome> {
  const j = journal(ctx);
  if (j.phase !== 'done') await writeJournal(ctx, { ...j, phase: 'done' });
  ctx.log.info(`backup of the ${j.from} cluster: ${j.backupDir}`);
  if (ctx.options.configKubernetesVersion && ctx.options.configKubernetesVersion !== j.to)
    ctx.log.warn(`set kubernetesVersion: '${j.to}' in the config file (it says ${ctx.options.configKubernetesVersion}): \`run bootstrap\` refuses to move the cluster back to an older version`);
  return { changed: j.phase !== 'done', detail: `cluster at ${j.to} (from ${j.from}); next: \`kubeception upgrade node\` on each node once its kubelet ${j.to} is installed` };
}
