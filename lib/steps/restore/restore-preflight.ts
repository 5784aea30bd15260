/**
 * `restore-preflight` of `kubeception etcd restore SNAPSHOT` (tasks/etcd-restore.ts): every check
 * that can refuse the restore, before anything on the host changes — the snapshot as `verify` checks
 * it (metadata, sha256 of each part, the PKI part opened with the key, a test restore), a cluster
 * that still serves (refused without `--force`), more than one etcd member (an HA restore is not
 * this command's), shared keys on the host that differ from the snapshot's, a config whose Kubernetes
 * minor is older than the snapshot's, an unsafe data dir path or an etcd environment file kubeception
 * did not write.
 *
 * Host effects: none but the test restore's (a scratch directory in `etcd.snapshots.dir` and a
 * throw-away etcd on loopback, both gone when it returns); `snapshot.json` is not rewritten. Under
 * `--dry-run` the test restore is left out.
 */
import { join } from 'node:path';
import { HostStateError, InputError } from '../../errors.ts';
import { openSnapshot, testRestoreSnapshot, type OpenedSnapshot } from '../../etcd/snapshot-bundle.ts';
import { snapshotTools } from '../../etcd/snapshot.ts';
import { etcdClientUrls } from '../../etcd/config.ts';
import { probeEtcd } from '../../etcd/health.ts';
import { listMembers } from '../../etcd/members.ts';
import { checkDataDirPath } from '../../etcd/ownership.ts';
import { pkiPlan, servingParts, supportsBumpRevision, versionAgainstSnapshot, type RestoreFacts } from '../../etcd/restore-plan.ts';
import { probeApiserver } from '../../k8s/apiserver.ts';
import { foreignEtcdEnvironment, healthcheckTls } from '../bootstrap/etcd.ts';
import type { RestoreContext } from '../contexts.ts';
import type { StepOutcome } from '../../engine/dsl.ts';

const oneLine = (err: unknown) => ((err as { why?: string }).why ?? (err as Error)?.message ?? String(err)).split('\n')[0]!;

/** Probes the local etcd member and this node's apiserver: undefined for each that serves, else why not. */
async function probes(ctx: RestoreContext): Promise<{ etcd: string | undefined; apiserver: string | undefined }> {
  const url = etcdClientUrls(ctx.config)[0]!;
  const etcd = await healthcheckTls(ctx).then((tls) => probeEtcd(url, tls), (err) => oneLine(err));
  const apiserver = await probeApiserver(ctx, 'final').catch((err) => oneLine(err));
  return { etcd, apiserver };
}

/**
 * Refuses a restore over a serving cluster (without `--force`) and over an etcd of more than one member.
 * @throws HostStateError `cluster-serving` | `etcd-restore-ha` (exit 2).
 */
async function refuseLiveCluster(ctx: RestoreContext, s: OpenedSnapshot): Promise<void> {
  const p = await probes(ctx);
  const serving = servingParts(p);
  if (!serving) {
    ctx.log.info(`nothing serves: etcd ${p.etcd}; kube-apiserver ${p.apiserver}`);
    return;
  }
  if (p.etcd === undefined) {
    const members = await listMembers(etcdClientUrls(ctx.config)[0]!, await healthcheckTls(ctx)).catch(() => []);
    if (members.length > 1)
      throw new HostStateError('etcd-restore-ha', {
        what: `etcd of ${ctx.config.nodeName} (${members.length} members: ${members.map((m) => m.name || m.id).join(', ')})`,
        why: '`kubeception etcd restore` restores one control-plane node; restoring one member of several would split the cluster',
        fix: 'restore on a single control-plane node: remove the other control-plane nodes first (`kubeception reset` on each), then restore here and join them again',
      });
  }
  if (!ctx.options.force)
    throw new HostStateError('cluster-serving', {
      what: `kubeception etcd restore ${s.meta.name}`,
      why: `this cluster serves (${serving}): a restore replaces its data with the snapshot's of ${s.meta.created} (revision ${s.meta.etcd.revision}), and what was written since is no longer served`,
      fix: `if that is what you want, add --force (the current data dir is kept, moved aside); to only check the snapshot: \`kubeception etcd snapshot verify ${s.meta.name}\``,
    });
  ctx.log.warn(`--force: restoring over a cluster that serves (${serving})`);
}

/** The shared PKI files the host lacks. @throws HostStateError `restore-pki-differs` (exit 2) when one differs from the snapshot's. */
async function pkiToRestore(ctx: RestoreContext, s: OpenedSnapshot): Promise<string[]> {
  const host: Record<string, Uint8Array | undefined> = {};
  for (const rel of Object.keys(s.pki)) {
    const text = await ctx.files.read(join(ctx.config.certificatesDir, rel));
    host[rel] = text === undefined ? undefined : Buffer.from(text);
  }
  const plan = pkiPlan(host, s.pki);
  if (plan.differ.length)
    throw new HostStateError('restore-pki-differs', {
      what: plan.differ.map((rel) => join(ctx.config.certificatesDir, rel)).join(', '),
      why: `this host has other keys than snapshot ${s.meta.name} (of ${s.meta.nodeName}): the snapshot is of another cluster, or this cluster's CA or service-account key was replaced after it was taken; the restored objects (service-account tokens, certificates) would not match the keys, and kubeception never overwrites a key`,
      fix: `restore a snapshot of this cluster (\`kubeception etcd snapshot list\`); or, if this host's keys are the wrong ones, move ${ctx.config.certificatesDir} and the kubeconfigs in ${ctx.config.distro.paths.secretsDir} aside (they are kept) and restore again: the snapshot's keys are written and every certificate and kubeconfig issued from them`,
    });
  return plan.missing;
}

/**
 * The `restore-preflight` step.
 * @throws InputError `usage` (no snapshot named), `snapshot-unknown`; SnapshotError `snapshot-*`;
 *   HostStateError `restore-version-skew`, `cluster-serving`, `etcd-restore-ha`, `restore-pki-differs`, `etcd-data-dir-*`,
 *   `etcd-config-foreign`, `etcdctl-missing` — all exit 2 with nothing changed.
 */
export async function restorePreflight(ctx: RestoreContext): Promise<StepOutcome> {
  const startedAtMs = Date.now();
  const name = ctx.options.restoreSnapshot;
  if (!name) throw new InputError('usage', { what: 'etcd-restore', why: 'no snapshot was named', fix: 'run `kubeception etcd restore NAME` (`kubeception etcd snapshot list` shows the names)' });
  const h = { config: ctx.config, files: ctx.files, sh: ctx.sh, signal: ctx.signal };
  const s = await openSnapshot(h, name);
  const skew = versionAgainstSnapshot(s.meta.kubernetesVersion, ctx.config.kubernetesVersion);
  if (skew === 'older')
    throw new HostStateError('restore-version-skew', {
      what: `kubernetesVersion ${ctx.config.kubernetesVersion}`,
      why: `snapshot ${name} was taken at ${s.meta.kubernetesVersion}: an older kube-apiserver would serve objects a newer one stored (a downgrade, which Kubernetes does not support)`,
      fix: `set kubernetesVersion: '${s.meta.kubernetesVersion}' in the config for the restore (upgrade later with \`kubeception upgrade apply\`)`,
    });
  if (skew === 'differs') ctx.log.warn(`the snapshot was taken at ${s.meta.kubernetesVersion}; the control plane comes back at ${ctx.config.kubernetesVersion}`);
  await refuseLiveCluster(ctx, s);
  const pkiMissing = await pkiToRestore(ctx, s);
  const unsafe = await checkDataDirPath(ctx.config.etcd.dataDir, ctx.config.distro.etcdUser);
  if (unsafe) throw unsafe;
  const foreignEnv = await foreignEtcdEnvironment(ctx);
  if (foreignEnv) throw new HostStateError('etcd-config-foreign', { what: ctx.config.distro.paths.etcdEnvironmentFile, why: foreignEnv, fix: 'move the file aside (kubeception then writes its own), or configure etcd.extraArgs instead' });
  const tools = await snapshotTools(ctx.sh, 'a restore needs etcdutl (or etcdctl on etcd 3.4)');
  const help = await ctx.sh.read([tools.offline.bin, 'snapshot', 'restore', '--help'], { env: { ETCDCTL_API: '3' }, allowFail: true, timeoutMs: 30_000 });
  const bump = supportsBumpRevision(`${help.stdout}\n${help.stderr}`);
  if (!bump) ctx.log.warn(`${tools.offline.tool} has no --bump-revision (etcd before 3.6): the restored revision is the snapshot's, so clients that watched after it may need a restart to see the restored objects`);
  if (s.meta.nodeName !== ctx.config.nodeName) ctx.log.warn(`the snapshot was taken on ${s.meta.nodeName}, this node is ${ctx.config.nodeName}: its Node object and pods are restored as they were`);
  let tested = 'test restore left out (--dry-run)';
  if (!ctx.dryRun) {
    const v = await testRestoreSnapshot(h, s);
    tested = `test restore by ${v.tool} serves revision ${v.revision} with ${v.keyCount} keys (${v.durationMs} ms)`;
  }
  const facts: RestoreFacts = {
    name, path: s.path, db: s.db, nodeName: s.meta.nodeName, created: s.meta.created, revision: s.meta.etcd.revision, keyCount: s.meta.verify.keyCount,
    startedAtMs, pkiMissing, bump, tool: tools.offline.tool,
  };
  ctx.state.restore = facts;
  const pki = pkiMissing.length ? `${pkiMissing.length} shared PKI file(s) missing here, restored from the snapshot (${pkiMissing.join(', ')})` : 'this host has the snapshot\'s PKI';
  return { changed: false, detail: `${name}: sha256 as recorded, PKI opens, ${tested}; ${pki}` };
}
