/**
 * The kubelet: its KubeletConfiguration, a systemd drop-in that runs it with kubeception's files,
 * which apiserver its kubeconfig names (bootstrap or final — the "pivot"), and starting it.
 *
 * Host effects: `<kubeletConfigDir>/config.yaml` (0600, CIS 4.1.9); `<systemdDir>/<kubelet unit>.d/20-kubeception.conf`
 * (0600, CIS 4.1.1) + daemon-reload; the kernel tunables' sysctl.d file (0644) and `sysctl -w` for any
 * that differs (./kernel-tunables.ts); on a control-plane node the kubelet's serving certificate
 * (./kubelet-serving.ts, 0600); the kubelet kubeconfig's `server` rewritten (0600); the kubelet unit
 * enabled and (re)started.
 * @see https://kubernetes.io/docs/reference/config-api/kubelet-config.v1beta1/
 */
import { join } from 'node:path';
import { KUBELET_CONFIG } from '../../constants.ts';
import { HostStateError, KubeceptionError, RolledBackError } from '../../errors.ts';
import { clusterDNSIP } from '../../net/cidr.ts';
import { toYaml } from '../../util/yaml.ts';
import { parseKubeconfig, renderKubeconfig } from '../../k8s/kubeconfig.ts';
import { probeApiserver, type Which } from '../../k8s/apiserver.ts';
import { apiserverUrls, kubeconfigPaths } from '../../k8s/endpoints.ts';
import type { Context } from '../../context.ts';
import type { KubeletState } from '../contexts.ts';
import type { StepOutcome } from '../../engine/dsl.ts';
import type { ResolvedConfig } from '../../types.ts';
import { crashPoint } from '../../engine/crash.ts';
import { httpOk } from '../../net/probe.ts';
import { kubeletCgroupDriver } from '../../host/cgroup-driver.ts';
import { clearPending, isPending, writeThenPending, type PendingAction } from '../../host/pending.ts';
import { ensureKernelTunables } from './kernel-tunables.ts';
import { ensureKubeletServingCert } from './kubelet-serving.ts';

/**
 * The KubeletConfiguration kubeception writes. `kubelet.extraConfig` fields override.
 * @param host.cgroupV1 the host mounts cgroup v1 (or hybrid): sets `failCgroupV1: false`, without
 *   which a kubelet of v1.35 or later refuses to start there (its default turned true in v1.35).
 */
export function kubeletConfiguration(config: ResolvedConfig, host: { cgroupV1?: boolean } = {}): Record<string, unknown> {
  return {
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    cgroupDriver: config.kubelet.cgroupDriver,
    containerRuntimeEndpoint: config.kubelet.criSocket,
    staticPodPath: config.distro.paths.staticPodPath,
    clusterDNS: [clusterDNSIP(config.networking.serviceSubnet)],
    clusterDomain: config.networking.dnsDomain,
    authentication: { anonymous: { enabled: false }, webhook: { enabled: true }, x509: { clientCAFile: join(config.certificatesDir, 'ca.crt') } },
    authorization: { mode: 'Webhook' },
    // CIS defaults (docs/cis.md); each can be turned off in kubelet.extraConfig (docs/configuration.md).
    readOnlyPort: 0,
    rotateCertificates: true,
    serverTLSBootstrap: true,
    protectKernelDefaults: true,
    failSwapOn: false,
    ...(host.cgroupV1 && { failCgroupV1: false }),
    ...config.kubelet.extraConfig,
  };
}

/** Path of kubeception's drop-in for the kubelet unit. */
export const kubeletDropIn = (config: ResolvedConfig) => join(config.distro.paths.systemdDir, `${config.distro.units.kubelet}.d`, '20-kubeception.conf');

/**
 * Path of the kubelet's bootstrap kubeconfig (token auth, for TLS bootstrapping). `run join` no
 * longer writes one (it requests the kubelet's certificate itself, lib/join/kubelet-csr.ts); one an
 * older join left is removed.
 */
export const bootstrapKubeletKubeconfig = (config: ResolvedConfig) => join(config.distro.paths.kubeletConfigDir, 'bootstrap-kubeconfig');

/**
 * The drop-in: the kubelet runs with kubeception's config and kubeconfig, as this node. A joined
 * node (`bootstrap`) also gets `--bootstrap-kubeconfig`, as kubeadm's nodes keep it after the join:
 * unused while the kubeconfig holds a valid certificate (the kubelet reads the bootstrap file only
 * when it does not).
 */
export function renderKubeletDropIn(config: ResolvedConfig, kubeletBin: string, opts: { bootstrap?: boolean } = {}): string {
  const dir = config.distro.paths.kubeletConfigDir;
  const args = [
    `--config=${join(dir, KUBELET_CONFIG)}`,
    // The certificate store kubeception writes (kubelet-client-current.pem, kubelet-server-current.pem); the
    // kubelet's default, /var/lib/kubelet/pki, is another directory when kubeletConfigDir is (kubic).
    `--cert-dir=${join(dir, 'pki')}`,
    ...(opts.bootstrap ? [`--bootstrap-kubeconfig=${bootstrapKubeletKubeconfig(config)}`] : []),
    `--kubeconfig=${kubeconfigPaths(config).kubelet}`,
    `--hostname-override=${config.nodeName}`,
    `--node-ip=${config.localAPIEndpoint.advertiseAddress}`,
  ];
  return ['# Written by kubeception.', '[Service]', 'ExecStart=', `ExecStart=${kubeletBin} ${args.join(' ')} $KUBELET_EXTRA_ARGS`, 'Restart=always', 'RestartSec=2', ''].join('\n');
}

/** Which apiserver the kubelet's kubeconfig names now, or undefined. */
export async function kubeletTarget(ctx: Pick<Context, 'files' | 'config'>): Promise<Which | undefined> {
  const path = kubeconfigPaths(ctx.config).kubelet;
  const text = await ctx.files.read(path);
  const server = text ? parseKubeconfig(text, path).server : undefined;
  const urls = apiserverUrls(ctx.config);
  return server === urls.final ? 'final' : server === urls.bootstrap ? 'bootstrap' : undefined;
}

/** The pending action that applies a kubelet config change: restarting the kubelet unit. */
export const kubeletRestart = (ctx: Pick<Context, 'config'>): PendingAction => `restart:${ctx.config.distro.units.kubelet}`;

/**
 * True if the kubelet must be restarted to use its files: a change recorded by this run, or one a
 * killed earlier run wrote but never applied (the persisted marker, see lib/host/pending.ts).
 */
export async function kubeletRestartPending(ctx: Context<object, KubeletState>): Promise<boolean> {
  return ctx.state.kubeletRestart === true || (await isPending(ctx, kubeletRestart(ctx)));
}

/**
 * The kubelet's plain-HTTP `/healthz`: `healthzBindAddress`:`healthzPort` of its configuration
 * (127.0.0.1:10248 unless `kubelet.extraConfig` moves them; a wildcard address is asked on loopback).
 * @returns undefined if the endpoint is turned off (`healthzPort: 0`).
 */
export function kubeletHealthzUrl(config: ResolvedConfig): string | undefined {
  const extra = config.kubelet.extraConfig ?? {};
  const port = Number(extra.healthzPort ?? 10248);
  if (!port) return undefined;
  const bind = String(extra.healthzBindAddress ?? '127.0.0.1');
  const host = bind === '0.0.0.0' || bind === '' ? '127.0.0.1' : bind === '::' ? '::1' : bind;
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}/healthz`;
}

/**
 * Restarts (or starts) the kubelet and clears the pending restart. The start counts once the new
 * kubelet's `/healthz` answers (it serves only after its configuration, the container runtime and
 * its certificates were accepted), at the latest after systemd's 1.5 s crash-loop watch — a
 * kubelet still waiting for its TLS-bootstrap certificate answers later than that.
 */
export async function restartKubelet(ctx: Context<object, KubeletState>, opts: { restart: boolean }): Promise<void> {
  const healthz = kubeletHealthzUrl(ctx.config);
  await ctx.systemd.start(ctx.config.distro.units.kubelet, { ...opts, ...(healthz && { ready: () => httpOk(healthz) }) });
  ctx.state.kubeletRestart = false;
  await clearPending(ctx, kubeletRestart(ctx));
}

/**
 * Points the kubelet's kubeconfig at `which` apiserver; a change records a pending kubelet restart
 * first. @returns true if the file changed.
 */
export async function pointKubelet(ctx: Context, which: Which): Promise<boolean> {
  const path = kubeconfigPaths(ctx.config).kubelet;
  const text = await ctx.files.read(path);
  const k = text ? parseKubeconfig(text, path) : {};
  if (!k.caPem || !k.user || (!k.certFile && (!k.certPem || !k.keyPem)))
    throw new HostStateError('kubeconfig-invalid', { what: path, why: 'the kubelet kubeconfig lacks credentials', fix: 'run the kubeconfig step' });
  const server = apiserverUrls(ctx.config)[which];
  const next = k.certFile ? renderKubeconfig({ server, caPem: k.caPem, user: k.user, certFile: k.certFile }) : renderKubeconfig({ server, caPem: k.caPem, user: k.user, certPem: k.certPem!, keyPem: k.keyPem! });
  return writeThenPending(ctx, path, next, { mode: 0o600 }, [kubeletRestart(ctx)]);
}

/** Writes config.yaml and the unit drop-in (daemon-reload if it changed). @returns what changed. */
export async function writeKubeletFiles(ctx: Context<object, KubeletState>, opts: { bootstrap?: boolean } = {}): Promise<string[]> {
  const { config, files } = ctx;
  const bin = await ctx.sh.which(config.distro.binaries.kubelet);
  if (!bin) throw new HostStateError('kubelet-missing', { what: config.distro.binaries.kubelet, why: 'the kubelet binary is not on PATH', fix: 'install the kubelet' });
  const changed: string[] = [];
  const restart = kubeletRestart(ctx);
  const cgroupDriver = await kubeletCgroupDriver(ctx);
  // cgroup v2 has cgroup.controllers at its root; a v1 (or hybrid) /sys/fs/cgroup does not.
  const cgroupV1 = !(await files.exists('/sys/fs/cgroup/cgroup.controllers'));
  if (cgroupV1 && config.kubelet.extraConfig?.failCgroupV1 === undefined)
    ctx.log.warn('this host uses cgroup v1, which Kubernetes deprecated: the kubelet config sets failCgroupV1: false (a v1.35+ kubelet refuses cgroup v1 otherwise); plan a move to cgroup v2');
  changed.push(...(await ensureKernelTunables(ctx)));
  // Before the kubelet (re)starts: with serverTLSBootstrap it serves only with a certificate of its store.
  changed.push(...(await ensureKubeletServingCert(ctx)));
  const kc = kubeletConfiguration({ ...config, kubelet: { ...config.kubelet, cgroupDriver } }, { cgroupV1 });
  // What a running kubelet runs with now, kept for kubelet-start to write back if it does not run with the new files.
  const running = !ctx.dryRun && (await ctx.systemd.activeState(config.distro.units.kubelet)) === 'active';
  const rewrite = async (path: string, text: string, then: PendingAction[]) => {
    const before = running ? await files.read(path) : undefined;
    const wrote = await writeThenPending(ctx, path, text, { mode: 0o600 }, then);
    if (wrote && before !== undefined) ctx.state.kubeletPrevious = { ...ctx.state.kubeletPrevious, [path]: before };
    return wrote;
  };
  if (await rewrite(join(config.distro.paths.kubeletConfigDir, KUBELET_CONFIG), toYaml(kc), [restart])) changed.push('config.yaml');
  crashPoint('config-written');
  if (await rewrite(kubeletDropIn(config), renderKubeletDropIn(config, bin, opts), ['daemon-reload', restart])) changed.push('unit drop-in');
  crashPoint('drop-in-written');
  if (await isPending(ctx, 'daemon-reload')) {
    await ctx.systemd.reload();
    await clearPending(ctx, 'daemon-reload');
  }
  if (changed.length) ctx.state.kubeletRestart = true;
  return changed;
}

/** The `kubelet-config` step: config, drop-in, and the kubeconfig pointed at a serving apiserver. */
export async function ensureKubeletConfig(ctx: Context<object, KubeletState>): Promise<StepOutcome> {
  const changed = await writeKubeletFiles(ctx);
  // Point the kubelet at the bootstrap apiserver unless the final one already serves (a converged re-run).
  const finalReady = (await probeApiserver(ctx, 'final')) === undefined;
  if (await pointKubelet(ctx, finalReady ? 'final' : 'bootstrap')) changed.push(`kubeconfig → ${finalReady ? 'final' : 'bootstrap'} apiserver`);
  crashPoint('kubeconfig-written');
  if (changed.length) ctx.state.kubeletRestart = true;
  return { changed: changed.length > 0, detail: changed.join(', ') || 'up to date' };
}

/**
 * The `kubelet-start` step: enable; start, or restart if its files changed since it started (in
 * this run or in a killed earlier one). The daemon-reload that makes systemd see a new enablement
 * comes after the start (the start does not need it; it cost ≈ 0.1 s before the kubelet's start on
 * the join's path to Node Ready).
 */
export async function startKubelet(ctx: Context<object, KubeletState>): Promise<StepOutcome> {
  const unit = ctx.config.distro.units.kubelet;
  const enabled = await ctx.systemd.enable([unit], { reload: false });
  const active = (await ctx.systemd.activeState(unit)) === 'active';
  const start = !active || (await kubeletRestartPending(ctx));
  try {
    if (start) await restartKubelet(ctx, { restart: active }).catch((err: unknown) => rollBackKubelet(ctx, err));
  } finally {
    // Part of the enable (a plan lists the enable alone, as for `systemctl enable`).
    if (enabled && !ctx.dryRun) await ctx.systemd.reload();
  }
  if (!start) return { changed: enabled, detail: `${unit} active` };
  return { changed: true, detail: `${unit} ${active ? 'restarted' : 'started'}` };
}

/**
 * Writes back the kubelet files this run rewrote while the kubelet ran ({@link KubeletState.kubeletPrevious},
 * 0600) and reloads systemd if the unit drop-in was among them; forgets them. Does not restart the kubelet.
 * @returns the paths written back (none: nothing was rewritten).
 */
export async function writeBackKubeletFiles(ctx: Context<object, KubeletState>): Promise<string[]> {
  const previous = ctx.state.kubeletPrevious ?? {};
  for (const [path, text] of Object.entries(previous)) await ctx.files.write(path, text, { mode: 0o600 });
  if (kubeletDropIn(ctx.config) in previous) await ctx.systemd.reload();
  ctx.state.kubeletPrevious = undefined;
  return Object.keys(previous);
}

/**
 * A kubelet that did not run with the files this run rewrote while it ran (it exits on a setting it
 * refuses, e.g. a bad `kubelet.extraConfig` value): the previous files are written back, systemd
 * reloaded if the drop-in was among them, and the kubelet restarted with them (its `/healthz`
 * awaited as for any start); the pending restart is cleared. Rethrows `err` when there is nothing to
 * write back (a first start, or the failure came before any file changed) or the run is interrupted.
 * Host effects: `config.yaml` and/or the unit drop-in (0600) as they were; the kubelet restarted.
 * @throws RolledBackError `rolled-back` (exit 1) naming the unit, the files and why the new ones failed.
 */
async function rollBackKubelet(ctx: Context<object, KubeletState>, err: unknown): Promise<never> {
  const previous = ctx.state.kubeletPrevious;
  if (!previous || !Object.keys(previous).length || ctx.signal.aborted || !(err instanceof KubeceptionError)) throw err;
  const unit = ctx.config.distro.units.kubelet;
  ctx.log.warn(`${unit}: ${err.why}; writing back its previous ${Object.keys(previous).join(', ')}`);
  await writeBackKubeletFiles(ctx);
  await restartKubelet(ctx, { restart: true });
  throw new RolledBackError('rolled-back', {
    what: unit,
    why: `the kubelet did not run with the files this run wrote (${err.why}); ${Object.keys(previous).join(' and ')} were written back as they were and it runs with them again`,
    fix: `correct the kubelet setting in kubeception.config.ts (kubelet.extraConfig; why it exited: \`journalctl -u ${unit}\`), then run again`,
  });
}
