/**
 * Self-recovery of the control plane on this node (bootstrap step `apiserver-recovery`): render the
 * last-known-good kube-apiserver static pod from the live DaemonSet, and install the watcher unit
 * that activates it when this node has no serving apiserver (after a power cut, or a deleted pod)
 * and hands back to the self-hosted pod. Design: `manifests/recovery.ts`, `manifests/recovery-watcher.ts`.
 *
 * Host effects: `<secretsDir>/recovery/` (0700) holding `recovery-kube-apiserver.yaml` (0600), one
 * directory per Secret/ConfigMap volume with its files (0600; stale files removed) and `watch.sh`
 * (0700); `<systemdDir>/kubeception-recovery.service` (0644), daemon-reload, enabled, (re)started.
 * Nothing is written into `staticPodPath` here: only the watcher does that.
 */
import { basename, dirname, join } from 'node:path';
import type { V1ConfigMap, V1DaemonSet, V1Pod, V1Secret } from '@kubernetes/client-node';
import { HostStateError } from '../../errors.ts';
import { url } from '../../net/cidr.ts';
import { toYaml } from '../../util/yaml.ts';
import { pollUntil } from '../../util/poll.ts';
import { cluster, probeApiserver } from '../../k8s/apiserver.ts';
import { rolledOut } from '../../k8s/rollout.ts';
import { NAMESPACE, probeHost } from '../../../manifests/common.ts';
import { projectedVolumes, RECOVERY_POD, recoveryStaticPod, type ProjectedVolume } from '../../../manifests/recovery.ts';
import { recoveryWatcherScript, recoveryWatcherUnit } from '../../../manifests/recovery-watcher.ts';
import type { Cluster } from '../../k8s/client.ts';
import type { Context } from '../../context.ts';
import type { StepOutcome } from '../../engine/dsl.ts';
import type { ResolvedConfig } from '../../types.ts';

/** Flag of the watcher's once-per-boot cleanup (in /run, so a boot clears it). */
export const RECOVERY_BOOT_FLAG = '/run/kubeception/recovery-boot-cleanup';

/** The systemd unit of the watcher. */
export const RECOVERY_UNIT = 'kubeception-recovery.service';

/** Where the recovery files live. */
export function recoveryPaths(config: ResolvedConfig) {
  const dir = join(config.distro.paths.secretsDir, 'recovery');
  return {
    dir,
    manifest: join(dir, `${RECOVERY_POD}.yaml`),
    volumesDir: join(dir, 'volumes'),
    script: join(dir, 'watch.sh'),
    unit: join(config.distro.paths.systemdDir, RECOVERY_UNIT),
    active: join(config.distro.paths.staticPodPath, `${RECOVERY_POD}.yaml`),
  };
}

const KEY = /^[-._a-zA-Z0-9]+$/;

/** A volume's files: Secret `data`, ConfigMap `data` + `binaryData`. @throws HostStateError if missing or a key is unsafe. */
async function volumeFiles(api: Cluster, v: ProjectedVolume): Promise<Map<string, Uint8Array>> {
  const obj = await api.read<V1Secret & V1ConfigMap>({ apiVersion: 'v1', kind: v.kind, metadata: { name: v.name, namespace: NAMESPACE } });
  if (!obj) throw new HostStateError('recovery-volume-missing', { what: `${v.kind} ${NAMESPACE}/${v.name}`, why: 'the kube-apiserver DaemonSet mounts it but it does not exist', fix: 'run `kubeception run bootstrap` to re-apply the self-hosted control plane' });
  const files = new Map<string, Uint8Array>();
  const b64 = { ...(v.kind === 'Secret' ? obj.data : obj.binaryData) };
  const text = v.kind === 'ConfigMap' ? { ...obj.data } : {};
  for (const [k, val] of Object.entries(b64)) files.set(k, Buffer.from(val, 'base64'));
  for (const [k, val] of Object.entries(text)) files.set(k, Buffer.from(val, 'utf8'));
  for (const k of files.keys())
    if (!KEY.test(k) || k.startsWith('..')) throw new HostStateError('recovery-volume-key', { what: `${v.kind} ${NAMESPACE}/${v.name} key "${k}"`, why: 'not a safe file name', fix: 'rename the key' });
  return files;
}

/** The DaemonSet's template generation (the apiserver's `deprecated.daemonset.template.generation`), which its pods carry as `pod-template-generation`. */
const TEMPLATE_GENERATION = 'deprecated.daemonset.template.generation';

/**
 * The DaemonSet once a copy of its current template has served on this node, else undefined after
 * `timeoutMs`. Either the DaemonSet's status says its rollout is complete (every scheduled pod
 * updated and available: `minReadySeconds` after Ready, as counted by the controller-manager), or —
 * without waiting for that count, or for a new controller-manager to take its lease after the
 * pivot — this node holds exactly one of its pods, of the current template, started, no recovery pod
 * is active, and this node's apiserver answers `/readyz` now: then nothing else on this node can
 * have answered for it (the bootstrap apiserver has its own port; a surge pair is two pods).
 */
export async function rolledOutDaemonSet(ctx: Context, api: Cluster, timeoutMs: number): Promise<V1DaemonSet | undefined> {
  const look = async () => {
    // A rollout of the apiserver itself may refuse a request for a moment: retry until the deadline.
    const ds = await api.read<V1DaemonSet>({ apiVersion: 'apps/v1', kind: 'DaemonSet', metadata: { name: 'kube-apiserver', namespace: NAMESPACE } }).catch(() => undefined);
    if (!ds) return undefined;
    if ((ds.status?.desiredNumberScheduled ?? 0) > 0 && rolledOut('DaemonSet', ds as Parameters<typeof rolledOut>[1])) return ds;
    return (await servedHere(ctx, api, ds)) ? ds : undefined;
  };
  // plan/--dry-run: one look, no wait (offline, the read finds nothing).
  return ctx.dryRun ? look() : pollUntil(look, { timeoutMs, intervalMs: 250, signal: ctx.signal });
}

/**
 * See {@link rolledOutDaemonSet}: this node's one pod of the current template has started (its
 * startup probe passed) and this node's apiserver answers. Started, not Ready: with no second pod
 * and no recovery pod on the port, what answers is this pod's instance, and its Ready condition
 * takes `APISERVER_READY_IN_A_ROW` probes more (manifests/self-hosted.ts), after every kubelet restart too.
 */
async function servedHere(ctx: Context, api: Cluster, ds: V1DaemonSet): Promise<boolean> {
  const generation = ds.metadata?.annotations?.[TEMPLATE_GENERATION];
  if (!generation || (await ctx.files.exists(recoveryPaths(ctx.config).active))) return false;
  const selector = Object.entries(ds.spec?.selector?.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`).join(',');
  const pods = (await api.list<V1Pod>('v1', 'Pod', NAMESPACE, selector).catch(() => [])).filter(
    (p) => p.spec?.nodeName === ctx.config.nodeName && !p.metadata?.deletionTimestamp && p.metadata?.ownerReferences?.some((o) => o.kind === 'DaemonSet' && o.uid === ds.metadata?.uid),
  );
  const [pod] = pods;
  if (pods.length !== 1 || pod!.metadata?.labels?.['pod-template-generation'] !== generation) return false;
  if (pod!.status?.containerStatuses?.[0]?.started !== true) return false;
  return (await probeApiserver(ctx, 'final')) === undefined;
}

/**
 * Renders the last-known-good recovery manifest and its volume files from the live DaemonSet (once
 * its rollout is complete, so the copy is one that served). Call it after any change of the
 * self-hosted control plane. Never touches `staticPodPath`.
 * @returns the paths written or removed; empty if all were up to date. `undefined` if the rollout
 *   did not complete within `timeoutMs` (the previous copy is kept).
 * @throws HostStateError `recovery-*` for a DaemonSet the recovery pod cannot stand in for.
 */
export async function renderRecoveryManifest(ctx: Context, timeoutMs = 120_000): Promise<string[] | undefined> {
  const p = recoveryPaths(ctx.config);
  const api = await cluster(ctx, 'final');
  // Cheap check first: when the current DaemonSet renders exactly the content on disk, that copy
  // was written once its rollout had served, and writing it again needs no new proof (a converged
  // re-run does not wait for the pod's Ready condition, which a kubelet restart resets for seconds);
  // the writes below then only repair modes.
  const current = await api.read<V1DaemonSet>({ apiVersion: 'apps/v1', kind: 'DaemonSet', metadata: { name: 'kube-apiserver', namespace: NAMESPACE } }).catch(() => undefined);
  // Any error here (an apiserver rolling, a Secret not yet readable) only sends it the long way.
  let copy = current && (await renderedCopy(ctx, api, current).catch(() => undefined));
  if (!copy?.onDisk) {
    const ds = await rolledOutDaemonSet(ctx, api, timeoutMs);
    if (!ds) return undefined;
    copy = await renderedCopy(ctx, api, ds);
  }
  const changed: string[] = [];
  await ctx.files.mkdir(p.dir, 0o700);
  for (const [path, data] of copy.files) if (await ctx.files.write(path, data, { mode: 0o600, dirMode: 0o700 })) changed.push(path);
  for (const path of copy.stale) if (await ctx.files.remove(path)) changed.push(path);
  return changed;
}

/**
 * The last-known-good copy `ds` renders: each volume file and the manifest (`files`), the volume
 * files on disk it no longer has (`stale`), and whether the disk already holds exactly that content
 * (`onDisk`; modes not compared). Reads the volumes' Secrets and ConfigMaps; writes nothing.
 */
async function renderedCopy(ctx: Context, api: Cluster, ds: V1DaemonSet): Promise<{ files: [string, string | Uint8Array][]; stale: string[]; onDisk: boolean }> {
  const p = recoveryPaths(ctx.config);
  const volumes = projectedVolumes(ds, p.volumesDir);
  const files: [string, string | Uint8Array][] = [];
  const stale: string[] = [];
  for (const v of volumes) {
    const data = await volumeFiles(api, v);
    for (const [name, bytes] of data) files.push([join(v.hostDir, name), bytes]);
    for (const name of await ctx.files.list(v.hostDir)) if (!data.has(name)) stale.push(join(v.hostDir, name));
  }
  files.push([p.manifest, toYaml(recoveryStaticPod(ds, volumes, ctx.config.localAPIEndpoint.advertiseAddress))]);
  // Byte-exact for UTF-8 content (certificates, keys, kubeconfigs); anything else reads as different.
  const same = async ([path, data]: [string, string | Uint8Array]) => {
    const text = await ctx.files.read(path);
    return text !== undefined && Buffer.from(text, 'utf8').equals(Buffer.from(data));
  };
  const onDisk = stale.length === 0 && (await Promise.all(files.map(same))).every(Boolean);
  return { files, stale, onDisk };
}

/**
 * The watcher's script and unit text for `config` (pure): the script's settings, and the unit
 * sandboxed so the script may write only `staticPodPath` and `/run/kubeception` (its boot flag).
 */
export function recoveryWatcherFiles(config: ResolvedConfig): { script: string; unit: string } {
  const p = recoveryPaths(config);
  // Loopback: the shared serving certificate names 127.0.0.1 on every control-plane node.
  const host = probeHost(config.apiServer.extraArgs, '127.0.0.1');
  const script = recoveryWatcherScript({
    lkgManifest: p.manifest,
    staticPodPath: config.distro.paths.staticPodPath,
    activeFile: `${RECOVERY_POD}.yaml`,
    readyzUrl: `${url('https', host, config.localAPIEndpoint.bindPort)}/readyz`,
    caFile: join(config.certificatesDir, 'ca.crt'),
    port: config.localAPIEndpoint.bindPort,
    containerdSocket: config.kubelet.criSocket.replace(/^unix:\/\//, ''),
    runtime: config.kubelet.criSocket.includes('containerd') ? 'containerd' : 'cri',
    bootFlag: RECOVERY_BOOT_FLAG,
  });
  const unit = recoveryWatcherUnit({
    script: p.script, after: [config.distro.units.containerRuntime], before: [config.distro.units.kubelet],
    readWritePaths: [config.distro.paths.staticPodPath], runtimeDirectory: basename(dirname(RECOVERY_BOOT_FLAG)),
  });
  return { script, unit };
}

/** Writes the watcher script and unit; enables it; (re)starts it if either changed or it is not active. @returns what changed. */
export async function installRecoveryWatcher(ctx: Context): Promise<string[]> {
  const { config } = ctx;
  const p = recoveryPaths(config);
  const { script, unit } = recoveryWatcherFiles(config);
  const changed: string[] = [];
  if (await ctx.files.write(p.script, script, { mode: 0o700, dirMode: 0o700 })) changed.push(p.script);
  // The boot cleanup is for the next boot only: this one's containers are the live cluster's.
  await ctx.files.write(RECOVERY_BOOT_FLAG, '', { mode: 0o644 });
  const unitWritten = await ctx.files.write(p.unit, unit, { mode: 0o644 });
  if (unitWritten) changed.push(p.unit);
  // Enabling reads the unit file from disk and reloads systemd when it changes a link: one reload
  // covers both on a first run.
  const enabled = await ctx.systemd.enable([RECOVERY_UNIT]);
  if (enabled) changed.push(`${RECOVERY_UNIT} enabled`);
  else if (unitWritten) await ctx.systemd.reload();
  const active = (await ctx.systemd.activeState(RECOVERY_UNIT)) === 'active';
  if (!active || changed.length) {
    // Its own short script: a broken one exits within milliseconds of starting, so 300 ms of
    // crash-loop watch (instead of 1.5 s) is enough to see it.
    await ctx.systemd.start(RECOVERY_UNIT, { restart: active, settleMs: 300 });
    changed.push(`${RECOVERY_UNIT} ${active ? 'restarted' : 'started'}`);
  }
  return changed;
}

/**
 * The bootstrap's `recovery-watcher` step: installs the watcher unit ahead of `apiserver-recovery`,
 * while the self-hosted apiserver starts. It idles until the last-known-good copy exists and while
 * bootstrap manifests exist, so it is safe before the copy; enabling it (a daemon-reload) and its
 * 300 ms start watch then no longer follow the stability check.
 */
export async function ensureRecoveryWatcher(ctx: Context): Promise<StepOutcome> {
  const changed = await installRecoveryWatcher(ctx);
  return { changed: changed.length > 0, detail: changed.join(', ') || 'watcher up to date' };
}

/** The `apiserver-recovery` step: refresh the last-known-good manifest, install the watcher. */
export async function ensureRecovery(ctx: Context): Promise<StepOutcome> {
  // The watcher is installed while the copy waits for the pod's Ready condition: it acts only once
  // the copy exists (its loop skips while the last-known-good manifest is absent). Both finish
  // before an error of either is reported.
  const [r, i] = await Promise.allSettled([renderRecoveryManifest(ctx), installRecoveryWatcher(ctx)]);
  if (r.status === 'rejected') throw r.reason;
  if (i.status === 'rejected') throw i.reason;
  const rendered = r.value;
  const installed = i.value;
  if (rendered === undefined) ctx.log.warn('the kube-apiserver DaemonSet rollout is not complete: kept the previous recovery manifest');
  const changed = [...(rendered ?? []), ...installed];
  return { changed: changed.length > 0, detail: changed.length ? `${changed.length} change(s): ${installed.join(', ') || 'recovery manifest refreshed'}` : 'recovery manifest and watcher up to date' };
}
