/**
 * The `etcd` step: render the distro's etcd environment file, prepare the data dir (init / reuse /
 * refuse foreign), enable and start the unit through systemd, and wait until etcd answers healthy
 * over TLS with the healthcheck client certificate.
 *
 * Host effects: `<dataDir>` created 0700 owned by the distro's etcd user (with the owner marker,
 * 0600; a symlinked data dir, or one below a directory the etcd user may write above its parent, is
 * refused first: HostStateError `etcd-data-dir-symlink` / `etcd-data-dir-parent`, exit 2); the environment file written 0600 (root reads it for the unit; CIS 1.1.7); the etcd unit enabled, started (restarted if its
 * environment changed).
 */
import { join } from 'node:path';
import { ETCD_HEALTH_INTERVAL_MS, ETCD_HEALTH_TIMEOUT_MS, ETCD_OWNER_MARKER } from '../../constants.ts';
import { HostStateError } from '../../errors.ts';
import { spkiSha256 } from '../../pki/x509.ts';
import { withRetry } from '../../util/retry.ts';
import { ETCD_ENV_HEADER, etcdClientUrls, etcdPki, renderEtcdEnvironment, type EtcdMembership } from '../../etcd/config.ts';
import { foreignDataDirError, inspectDataDir, type DataDirState } from '../../etcd/datadir.ts';
import { etcdUnhealthy, probeEtcd } from '../../etcd/health.ts';
import { checkDataDirPath, repairDataDirOwnership } from '../../etcd/ownership.ts';
import type { Context } from '../../context.ts';
import type { EtcdState } from '../contexts.ts';
import type { StepOutcome } from '../../engine/dsl.ts';
import { crashPoint } from '../../engine/crash.ts';
import { clearPending, isPending, writeThenPending } from '../../host/pending.ts';


/** SPKI hash of the etcd CA, or undefined if it does not exist yet. */
export async function etcdCaHash(ctx: Pick<Context, 'files' | 'config'>): Promise<string | undefined> {
  const pem = await ctx.files.read(etcdPki(ctx.config).ca);
  return pem === undefined ? undefined : spkiSha256(pem, etcdPki(ctx.config).ca);
}

/** The data dir's state for this host's etcd CA. */
export async function etcdDataDirState(ctx: Pick<Context, 'files' | 'config'>): Promise<DataDirState> {
  return inspectDataDir(ctx.files, ctx.config.etcd.dataDir, await etcdCaHash(ctx));
}

/**
 * Why the etcd environment file is not ours to rewrite, or undefined. A file with only comments
 * (the distro's default) or one kubeception wrote is ours.
 */
export async function foreignEtcdEnvironment(ctx: Pick<Context, 'files' | 'config'>): Promise<string | undefined> {
  const file = ctx.config.distro.paths.etcdEnvironmentFile;
  const text = await ctx.files.read(file);
  if (text === undefined || text.startsWith(ETCD_ENV_HEADER)) return undefined;
  const active = text.split('\n').filter((l) => l.trim() && !l.trim().startsWith('#'));
  return active.length ? `${file} has settings kubeception did not write (${active[0]!.split('=')[0]}…)` : undefined;
}

/** Reads the healthcheck client's TLS material (never logged). */
export async function healthcheckTls(ctx: Pick<Context, 'files' | 'config'>) {
  const p = etcdPki(ctx.config);
  const [ca, cert, key] = await Promise.all([p.ca, p.healthcheckCert, p.healthcheckKey].map((f) => ctx.files.read(f)));
  if (!ca || !cert || !key)
    throw new HostStateError('etcd-pki-missing', { what: p.healthcheckCert, why: 'the etcd CA or healthcheck client certificate is missing', fix: 'run the certs step first (kubeception run bootstrap)' });
  return { ca, cert, key };
}

/** Waits until etcd answers healthy on its loopback client URL. @throws KubeceptionError `etcd-unhealthy`. */
export async function waitEtcdHealthy(ctx: Context): Promise<void> {
  const tls = await healthcheckTls(ctx);
  const target = etcdClientUrls(ctx.config)[0]!;
  const tries = Math.ceil(ETCD_HEALTH_TIMEOUT_MS / ETCD_HEALTH_INTERVAL_MS);
  await withRetry(async () => {
    const why = await probeEtcd(target, tls);
    if (why) throw etcdUnhealthy(target, why, ctx.config.distro.units.etcd);
  }, { tries, delayMs: ETCD_HEALTH_INTERVAL_MS }, { signal: ctx.signal });
}

/**
 * The `etcd` step body.
 * @param membership how the member joins (a control-plane join: the existing cluster); default a new one-member cluster.
 */
export async function ensureEtcd(ctx: Context<object, EtcdState>, membership?: EtcdMembership): Promise<StepOutcome> {
  const { config, files, systemd } = ctx;
  const unit = config.distro.units.etcd;
  const dataDir = config.etcd.dataDir;
  const foreignEnv = await foreignEtcdEnvironment(ctx);
  if (foreignEnv)
    throw new HostStateError('etcd-config-foreign', { what: config.distro.paths.etcdEnvironmentFile, why: foreignEnv, fix: 'move the file aside (kubeception then writes its own), or configure etcd.extraArgs instead' });
  // Before any write: a symlinked data dir, or one whose path the etcd user could redirect, is refused.
  const unsafe = await checkDataDirPath(dataDir, config.distro.etcdUser);
  if (unsafe) throw unsafe;
  const state = await etcdDataDirState(ctx);
  if (state.kind === 'foreign') throw foreignDataDirError(dataDir, state.why);
  const changes: string[] = [];
  const existed = await files.exists(dataDir);
  if (await files.mkdir(dataDir, 0o700, config.distro.etcdUser)) changes.push(existed ? `data dir given to ${config.distro.etcdUser}` : 'data dir created');
  const repaired = await repairDataDirOwnership(dataDir, config.distro.etcdUser, { dryRun: ctx.dryRun });
  if (repaired.chowned.length || repaired.chmodded.length) {
    ctx.log.warn(`etcd data dir drifted: gave ${repaired.chowned.length} path(s) back to ${config.distro.etcdUser}, set ${repaired.chmodded.length} dir(s) to 0700 (e.g. ${[...repaired.chowned, ...repaired.chmodded][0]})`);
    changes.push('data dir owner/mode repaired');
  }
  if (state.kind === 'init') {
    const marker = JSON.stringify({ etcdCA: await etcdCaHash(ctx), nodeName: config.nodeName }, null, 2);
    if (await files.write(join(dataDir, ETCD_OWNER_MARKER), `${marker}\n`, { mode: 0o600, owner: config.distro.etcdUser })) changes.push('owner marker written');
  }
  ctx.state.etcdDataDir = state.kind;
  crashPoint('data-dir-ready');
  // A changed environment owes etcd a restart; the marker keeps that debt across a killed run.
  const restart = `restart:${unit}` as const;
  const envChanged = await writeThenPending(ctx, config.distro.paths.etcdEnvironmentFile, renderEtcdEnvironment(config, membership), { mode: 0o600 }, [restart]);
  if (envChanged) changes.push('environment written');
  crashPoint('environment-written');
  if (await systemd.enable([unit])) changes.push(`${unit} enabled`);
  const active = await systemd.activeState(unit);
  if (active !== 'active' || envChanged || (await isPending(ctx, restart))) {
    ctx.log.info(`${active === 'active' ? 'restarting' : 'starting'} ${unit}`);
    await systemd.start(unit, { restart: active === 'active' });
    await clearPending(ctx, restart);
    changes.push(`${unit} ${active === 'active' ? 'restarted' : 'started'}`);
  }
  crashPoint('unit-started');
  ctx.state.etcdClientUrls = etcdClientUrls(config);
  if (!ctx.dryRun) await waitEtcdHealthy(ctx);
  return { changed: changes.length > 0, detail: changes.length ? `${changes.join(', ')}; ${state.kind}` : `healthy (${state.kind})` };
}
