/**
 * Reads what the self-hosted control plane needs from the host (PKI files, the final kubeconfigs of
 * kube-controller-manager and kube-scheduler) and builds the objects to apply, in apply order,
 * with the manifests/ builders.
 */
import { join } from 'node:path';
import { CONTROL_PLANE_LABEL } from '../constants.ts';
import { HostStateError } from '../errors.ts';
import { PKI_FILES, type PkiFile } from '../../manifests/flags.ts';
import { selfHostedObjects } from '../../manifests/self-hosted.ts';
import { kubeconfigPaths } from '../k8s/endpoints.ts';
import type { Cluster, KubernetesObject } from '../k8s/client.ts';
import { rollAndWait } from '../k8s/rollout.ts';
import type { Context } from '../context.ts';

async function mustRead(ctx: Pick<Context, 'files'>, path: string): Promise<string> {
  const text = await ctx.files.read(path);
  if (text === undefined) throw new HostStateError('self-hosted-input', { what: path, why: 'the file is missing', fix: 'run the certs and kubeconfig steps' });
  return text;
}

/** Nodes labelled `node-role.kubernetes.io/control-plane` (at least 1: a bootstrap labels its node after the first apply). */
export async function controlPlaneNodeCount(api: Cluster): Promise<number> {
  return Math.max(1, (await api.list('v1', 'Node', undefined, `${CONTROL_PLANE_LABEL}`)).length);
}

/**
 * Every object of the self-hosted control plane, in apply order (kube-proxy is the `addon/kube-proxy` step's).
 * @param api when given, the controllers get one replica per control-plane node ({@link controlPlaneNodeCount}).
 */
export async function selfHostedManifests(ctx: Context, api?: Cluster): Promise<KubernetesObject[]> {
  const { config } = ctx;
  const pki = {} as Record<PkiFile, string>;
  for (const file of Object.keys(PKI_FILES) as PkiFile[]) pki[file] = await mustRead(ctx, join(config.certificatesDir, file));
  const paths = kubeconfigPaths(config);
  const kubeconfigs = { controllerManager: await mustRead(ctx, paths.controllerManager), scheduler: await mustRead(ctx, paths.scheduler) };
  return selfHostedObjects(config, { pki, kubeconfigs }, { controlPlaneNodes: api ? await controlPlaneNodeCount(api).catch(() => 1) : 1 });
}

/** The self-hosted components in the order they are rolled, with their workload kinds. */
export const SELF_HOSTED_COMPONENTS = [['DaemonSet', 'kube-apiserver'], ['Deployment', 'kube-controller-manager'], ['Deployment', 'kube-scheduler']] as const;

/**
 * Applies `objects` to a running self-hosted control plane one component at a time, as kubeadm
 * upgrades them: everything shared first, then per component its Secret and workload (the Secret's
 * digest on the pod template rolls it) and, if that changed, a wait for its roll before the next.
 * Applied at once, a new kube-controller-manager starts while a surge kube-apiserver is still
 * starting; seen on the bed: its DaemonSet controller then missed the surge pod's events until its
 * watch was renewed (≈ 5 min) and the apiserver roll stalled.
 * @param force roll each component even if nothing of it changed (`certs renew`: new files on the host).
 * @param afterFirst called once the first component is applied (a crash point).
 * @param timeoutMs per component rollout (default 300 s).
 * @param waitAll wait for every component's rollout to complete, changed now or not (a resumed upgrade).
 * @returns the objects changed (`Kind/namespace/name`) and the workloads rolled.
 * @throws TimeoutError `rollout-timeout` naming the workload, its status and pods (`timeoutMs` per component).
 */
export async function applyComponentByComponent(ctx: Context, api: Cluster, objects: KubernetesObject[], opts: { force?: boolean; afterFirst?: () => void; timeoutMs?: number; waitAll?: boolean } = {}): Promise<{ changed: string[]; rolled: string[] }> {
  const own = (o: KubernetesObject, c: string) => ['Secret', 'DaemonSet', 'Deployment'].includes(o.kind ?? '') && o.metadata?.name === c;
  const changed = await api.apply(objects.filter((o) => !SELF_HOSTED_COMPONENTS.some(([, c]) => own(o, c))));
  const rolled: string[] = [];
  for (const [i, [kind, c]] of SELF_HOSTED_COMPONENTS.entries()) {
    const mine = await api.apply(objects.filter((o) => own(o, c)));
    changed.push(...mine);
    if (i === 0) opts.afterFirst?.();
    const ref = `${kind}/kube-system/${c}`;
    const rolling = mine.includes(ref);
    // waitAll: a rollout an earlier, interrupted run started is waited for too (without a restart).
    if (!ctx.dryRun && (rolling || opts.force || opts.waitAll))
      rolled.push(...(await rollAndWait(ctx, api, [[kind, c]], { rolling: new Set(opts.waitAll && !opts.force ? [...mine, ref] : mine), timeoutMs: opts.timeoutMs })));
  }
  return { changed, rolled };
}
