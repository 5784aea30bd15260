/**
 * The bootstrap control plane: its static pods (kube-apiserver, kube-controller-manager, then the
 * scheduler), waiting for the bootstrap apiserver, and which apiserver is active. The hand-off to the
 * self-hosted control plane is lib/steps/self-hosted/control-plane.ts. Every step checks the host
 * first and acts only where it differs.
 *
 * Host effects: static pod manifests written (0644) to the kubelet's `staticPodPath`.
 */
import { join } from 'node:path';
import { toYaml } from '../../util/yaml.ts';
import { probeApiserver, waitApiserver, type Which } from '../../k8s/apiserver.ts';
import { bootstrapStaticPods } from '../../../manifests/static-pods.ts';
import { kubeletRestart, kubeletRestartPending, kubeletTarget } from './kubelet.ts';
import { markPending } from '../../host/pending.ts';
import { apiServerConfigFallback } from './apiserver-config.ts';
import { crashPoint } from '../../engine/crash.ts';
import { imagePullError, staticPodTrouble } from '../../k8s/static-pod-state.ts';
import type { Context } from '../../context.ts';
import type { KubeletState } from '../contexts.ts';
import type { StepOutcome } from '../../engine/dsl.ts';

/** Names of the bootstrap static pod manifests present in `staticPodPath`. */
export async function bootstrapManifestsPresent(ctx: Pick<Context, 'files' | 'config'>): Promise<string[]> {
  return (await ctx.files.list(ctx.config.distro.paths.staticPodPath)).filter((f) => f.startsWith('bootstrap-') && f.endsWith('.yaml'));
}

/** Skip reason shared by the bootstrap-only steps: the final apiserver already serves. */
export async function selfHostedServing(ctx: Context): Promise<string | false> {
  if ((await bootstrapManifestsPresent(ctx)).length > 0) return false;
  return (await probeApiserver(ctx, 'final')) === undefined ? 'the self-hosted kube-apiserver is serving; no bootstrap control plane needed' : false;
}

/**
 * Skip reason for the stability check: nothing is being handed over — no bootstrap control plane,
 * the kubelet already uses the final apiserver, and that apiserver is serving.
 */
export async function nothingToHandOver(ctx: Context<object, KubeletState>): Promise<string | false> {
  if ((await kubeletTarget(ctx)) !== 'final' || (await kubeletRestartPending(ctx))) return false;
  return (await selfHostedServing(ctx)) ? 'no hand-off in this run: the kubelet already uses the serving self-hosted kube-apiserver' : false;
}

/**
 * The apiserver to talk to during this run: the bootstrap one while its manifests exist and it
 * answers, else the final one. Both store in the same etcd, so an object applied through either is
 * the same object; the steps before the stability check use this one (the self-hosted apiserver may
 * still be starting), the steps after it the final one.
 */
export async function activeApiserver(ctx: Pick<Context, 'files' | 'config'>): Promise<Which> {
  return (await bootstrapManifestsPresent(ctx)).length > 0 && (await probeApiserver(ctx, 'bootstrap')) === undefined ? 'bootstrap' : 'final';
}

/**
 * The bootstrap kube-scheduler's manifest, written by `bootstrap-scheduler` once the bootstrap
 * apiserver is ready rather than with the other two: started beside the apiserver, the scheduler
 * lists its informers before the apiserver's RBAC roles exist, is refused, and its informers back
 * off (0.8 s, 1.6 s, 3.2 s, jittered) — it waits for them before it takes its lease, and the
 * self-hosted apiserver's pod waited for the scheduler (seen on the bed: synced 4 s after the
 * apiserver served).
 */
const BOOTSTRAP_SCHEDULER = 'bootstrap-kube-scheduler.yaml';

/** Writes `pods` into `staticPodPath`; a changed manifest owes the kubelet a restart. @returns the files written. */
async function writeStaticPods(ctx: Context, pods: { file: string; pod: object }[], first?: () => void): Promise<string[]> {
  const written: string[] = [];
  for (const [i, { file, pod }] of pods.entries()) {
    const path = join(ctx.config.distro.paths.staticPodPath, file);
    const text = toYaml(pod);
    const current = await ctx.files.read(path);
    // A running kubelet does not reliably replace a static pod whose manifest changed while the old
    // instance is stuck (seen: an image-pull back-off kept the corrected pod from ever starting);
    // a changed manifest therefore owes the kubelet a restart (kubelet-start or kubelet-pivot does it).
    if (current !== undefined && current !== text) await markPending(ctx, kubeletRestart(ctx));
    if (await ctx.files.write(path, text, { mode: 0o644 })) written.push(file);
    if (i === 0) first?.();
  }
  return written;
}

/** `bootstrap-control-plane`: writes the bootstrap kube-apiserver and kube-controller-manager static pods. */
export async function writeBootstrapControlPlane(ctx: Context): Promise<StepOutcome> {
  await apiServerConfigFallback(ctx, true);
  const pods = bootstrapStaticPods(ctx.config).filter((p) => p.file !== BOOTSTRAP_SCHEDULER);
  const written = await writeStaticPods(ctx, pods, () => crashPoint('first-manifest-written'));
  return { changed: written.length > 0, detail: written.length ? `wrote ${written.join(', ')}` : 'manifests up to date' };
}

/** Writes the bootstrap kube-scheduler's manifest. @returns true if it changed. */
const writeSchedulerManifest = async (ctx: Context) => (await writeStaticPods(ctx, bootstrapStaticPods(ctx.config).filter((p) => p.file === BOOTSTRAP_SCHEDULER))).length > 0;

/** `bootstrap-scheduler`: writes the bootstrap kube-scheduler static pod (after the bootstrap apiserver is ready). */
export async function writeBootstrapScheduler(ctx: Context): Promise<StepOutcome> {
  const written = (await writeSchedulerManifest(ctx)) ? [BOOTSTRAP_SCHEDULER] : [];
  return { changed: written.length > 0, detail: written.length ? `wrote ${written.join(', ')}` : 'manifest up to date' };
}

/**
 * For a site task file copied before `bootstrap-scheduler` existed (it never writes the bootstrap
 * scheduler, and nothing would bind the self-hosted pods): while a bootstrap control plane is
 * present and its scheduler's manifest is not, writes it, with a warning. A no-op otherwise.
 * @returns true if it wrote the manifest.
 */
export async function bootstrapSchedulerFallback(ctx: Context): Promise<boolean> {
  const present = await bootstrapManifestsPresent(ctx);
  if (present.length === 0 || present.includes(BOOTSTRAP_SCHEDULER)) return false;
  ctx.log.warn(`this task file has no bootstrap-scheduler step (a copy from an older kubeception?): writing ${BOOTSTRAP_SCHEDULER} now; copy the package's tasks/bootstrap.ts again to start the scheduler as soon as the bootstrap apiserver is ready`);
  return writeSchedulerManifest(ctx);
}

/** `wait-bootstrap-control-plane`: the bootstrap apiserver answers /readyz. */
export async function waitBootstrapControlPlane(ctx: Context): Promise<StepOutcome> {
  if (ctx.dryRun) return { changed: false, detail: 'would wait for the bootstrap kube-apiserver /readyz' };
  // The pods' real state, from the kubelet: an image that cannot be pulled fails the wait at once;
  // a crash loop is named, with its last log lines, if the wait times out.
  const since = Date.now() - 60_000;
  const trouble = () => staticPodTrouble(ctx, { podPrefix: 'bootstrap-', images: bootstrapStaticPods(ctx.config).map((p) => p.pod.spec!.containers[0]!.image!), sinceMs: since });
  const probes = await waitApiserver(ctx, 'bootstrap', {
    timeoutMs: 300_000,
    intervalMs: 250,
    watch: async () => {
      const t = await trouble();
      if (t?.kind === 'image-pull') throw imagePullError(t, ctx.config);
    },
    explain: async () => (await trouble())?.message,
  });
  return { changed: false, detail: `ready after ${probes} probe(s)` };
}
