/**
 * Reads what the self-hosted control plane reads from the host (PKI files, the final kubeconfigs of
 * kube-controller-manager and kube-scheduler, the apiserver's hardening files: checked and hashed,
 * never put into an object) and builds
 * the objects to apply, in apply order, with the manifests/ builders.
 */
import { join } from 'node:path';
import { CONTROL_PLANE_LABEL } from '../../constants.ts';
import { HostStateError, KubeceptionError, RolledBackError, TimeoutError } from '../../errors.ts';
import { PKI_FILES, type PkiFile } from '../../../manifests/flags.ts';
import { selfHostedObjects } from '../../../manifests/self-hosted.ts';
import { hardeningFiles } from '../../../manifests/apiserver-hardening.ts';
import { LEGACY_KEY_SECRETS } from '../../../manifests/self-hosted-inputs.ts';
import { kubeconfigPaths } from '../../k8s/endpoints.ts';
import type { Cluster, KubernetesObject } from '../../k8s/client.ts';
import { rollAndWait } from '../../k8s/rollout.ts';
import { extractApplied } from '../../k8s/extract.ts';
import { FIELD_MANAGER } from '../../k8s/field-manager.ts';
import { pollUntil } from '../../util/poll.ts';
import type { Context } from '../../context.ts';
import type { HealthGate } from '../../status/gate.ts';
import type { CheckResult } from '../../status/checks.ts';

async function mustRead(ctx: Pick<Context, 'files'>, path: string): Promise<string> {
  const text = await ctx.files.read(path);
  if (text === undefined) throw new HostStateError('self-hosted-input', { what: path, why: 'the file is missing', fix: 'run the certs, kubeconfig and apiserver-config steps' });
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
  for (const file of PKI_FILES) pki[file] = await mustRead(ctx, join(config.certificatesDir, file));
  const paths = kubeconfigPaths(config);
  const kubeconfigs = { controllerManager: await mustRead(ctx, paths.controllerManager), scheduler: await mustRead(ctx, paths.scheduler) };
  const apiServerFiles: Record<string, string> = {};
  for (const path of hardeningFiles(config)) apiServerFiles[path] = await mustRead(ctx, path);
  return selfHostedObjects(config, { pki, kubeconfigs, apiServerFiles }, { controlPlaneNodes: api ? await controlPlaneNodeCount(api).catch(() => 1) : 1 });
}

/**
 * Deletes the Secrets older kubeception versions kept the control plane's private keys in
 * (`kube-system/kube-apiserver`, `-controller-manager`, `-scheduler`, labelled managed-by kubeception),
 * once the workloads read their node's files instead. A Secret of such a name that kubeception did not
 * make is left alone.
 * @returns the refs deleted.
 */
export async function deleteLegacyKeySecrets(api: Cluster): Promise<string[]> {
  const gone: string[] = [];
  for (const name of LEGACY_KEY_SECRETS) {
    const ref = { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: 'kube-system' } };
    const s = await api.read<KubernetesObject>(ref);
    if (s?.metadata?.labels?.['app.kubernetes.io/managed-by'] === 'kubeception' && (await api.delete(ref))) gone.push(`Secret/kube-system/${name}`);
  }
  return gone;
}

/** The self-hosted components in the order they are rolled, with their workload kinds. */
export const SELF_HOSTED_COMPONENTS = [['DaemonSet', 'kube-apiserver'], ['Deployment', 'kube-controller-manager'], ['Deployment', 'kube-scheduler']] as const;

/**
 * Applies `objects` to a running self-hosted control plane one component at a time, as kubeadm
 * upgrades them: everything shared first, then per component its workload (the digest of its files
 * on the pod template rolls it) and, if that changed, a wait for its roll before the next.
 * Applied at once, a new kube-controller-manager starts while a surge kube-apiserver is still
 * starting; seen on the bed: its DaemonSet controller then missed the surge pod's events until its
 * watch was renewed (≈ 5 min) and the apiserver roll stalled.
 * @param force roll each component even if nothing of it changed (`certs renew`: new files on the host).
 * @param afterFirst called once the first component is applied (a crash point).
 * @param timeoutMs per component rollout (default 300 s).
 * @param waitAll wait for every component's rollout to complete, changed now or not (a resumed upgrade).
 * @param rollBack health-gate each component whose template this call changes: when its new pods
 *   crash-loop or its roll does not complete, apply again what kubeception had applied to it before
 *   (its own fields of the live object, {@link extractApplied}: an operator's edits stay), wait for
 *   that roll, and fail. The surge roll keeps the old pods serving meanwhile.
 * @param gate with `rollBack`, the cluster's health checks too ({@link HealthGate}, lib/status/gate.ts):
 *   read once before the first component that would change (a server-side dry run of its workload
 *   says which), and after each such component's roll until they pass ({@link HealthGate.verify});
 *   a check that passed before and still fails after rolls that component back the same way. A
 *   converged run reads no check (three dry runs).
 * @returns the objects changed (`Kind/namespace/name`) and the workloads rolled.
 * @throws TimeoutError `rollout-timeout` naming the workload, its status and pods (`timeoutMs` per component).
 * @throws RolledBackError `rolled-back` (rollBack; not retried by the step's policy) naming the component, why its new pods failed
 *   (or, with `gate`, the checks that failed after its roll), and that its previous spec serves again; the components after it
 *   are not applied.
 */
export async function applyComponentByComponent(ctx: Context, api: Cluster, objects: KubernetesObject[], opts: { force?: boolean; afterFirst?: () => void; timeoutMs?: number; waitAll?: boolean; rollBack?: boolean; gate?: HealthGate } = {}): Promise<{ changed: string[]; rolled: string[] }> {
  const own = (o: KubernetesObject, c: string) => ['DaemonSet', 'Deployment'].includes(o.kind ?? '') && o.metadata?.name === c;
  const changed = await api.apply(objects.filter((o) => !SELF_HOSTED_COMPONENTS.some(([, c]) => own(o, c))));
  const rolled: string[] = [];
  let baseline: CheckResult[] | undefined;
  for (const [i, [kind, c]] of SELF_HOSTED_COMPONENTS.entries()) {
    const workloadRef = { apiVersion: 'apps/v1', kind, metadata: { name: c, namespace: 'kube-system' } };
    const previous = opts.rollBack && !ctx.dryRun ? await api.read<KubernetesObject>(workloadRef) : undefined;
    const workload = objects.filter((o) => own(o, c));
    if (opts.gate && previous && !baseline && (await Promise.all(workload.map((o) => api.wouldChange(o)))).some(Boolean)) {
      baseline = await opts.gate.baseline();
      ctx.log.info(`health gate: ${baseline.map((r) => `${r.name} ${r.state}`).join(', ')} before the change`);
    }
    const since = Date.now();
    const mine = await api.apply(workload);
    changed.push(...mine);
    if (i === 0) opts.afterFirst?.();
    const ref = `${kind}/kube-system/${c}`;
    const rolling = mine.includes(ref);
    // waitAll: a rollout an earlier, interrupted run started is waited for too (without a restart).
    if (ctx.dryRun || !(rolling || opts.force || opts.waitAll)) continue;
    const before = previous && rolling ? extractApplied(previous, FIELD_MANAGER) : undefined;
    const rollBackTo = async (previousSpec: KubernetesObject, why: string, fix: string): Promise<never> => {
      ctx.log.warn(`${ref}: ${why}; applying its previous spec again`);
      await api.apply([previousSpec]);
      await rollAndWait(ctx, api, [[kind, c]], { rolling: new Set([ref]), timeoutMs: opts.timeoutMs });
      throw new RolledBackError('rolled-back', { what: ref, why: `${why}; its previous spec was applied again and has rolled out: the control plane serves as before this run`, fix });
    };
    try {
      rolled.push(...(await rollAndWait(ctx, api, [[kind, c]], { rolling: new Set(opts.waitAll && !opts.force ? [...mine, ref] : mine), timeoutMs: opts.timeoutMs, failFast: !!before, sinceMs: since })));
    } catch (err) {
      if (!before || ctx.signal.aborted || !(err instanceof KubeceptionError)) throw err;
      await rollBackTo(before, `the change this run made to it did not roll out (${err.why})`,
        `correct the setting the new pods failed on in kubeception.config.ts (the failed container's output: kubectl -n kube-system logs -l component=${c} --previous), then run \`kubeception run bootstrap\` again`);
    }
    if (before && baseline && opts.gate) {
      const regressed = await opts.gate.verify(baseline, ctx.signal);
      if (regressed) await rollBackTo(before, `its new pods rolled out, but health checks that passed before the change failed after it: ${regressed}`,
        `correct the setting in kubeception.config.ts that broke them (\`kubeception status\` names each check; kubectl -n kube-system logs -l component=${c}), then run \`kubeception run bootstrap\` again`);
      else ctx.log.info(`${ref}: health gate passed (${baseline.filter((r) => r.state !== 'fail').map((r) => r.name).join(', ')})`);
    }
  }
  return { changed, rolled };
}

interface NodePod extends KubernetesObject {
  spec?: { nodeName?: string };
  status?: { conditions?: { type?: string; status?: string }[] };
}

/**
 * Restarts the self-hosted pods on this node, one component at a time, so they load renewed files of
 * this node (`certs renew` on a control-plane node that joined: the cluster's objects, rendered on the
 * bootstrap node, stay as they are). Each pod here is deleted and its replacement — the DaemonSet's on
 * this node; the Deployment's wherever it is scheduled — waited for until Ready. The other
 * control-plane nodes serve meanwhile (a joined node means there are at least two).
 * @param api a client that does not go through this node's apiserver (the controlPlaneEndpoint).
 * @returns the pods restarted (`Pod/kube-system/<name>`).
 * @throws TimeoutError `restart-timeout` naming the component (`timeoutMs` each, default 300 s).
 */
export async function restartLocalControlPlane(ctx: Context, api: Cluster, timeoutMs = 300_000): Promise<string[]> {
  const restarted: string[] = [];
  const here = async (c: string) => (await api.list<NodePod>('v1', 'Pod', 'kube-system', `component=${c},tier=control-plane`)).filter((p) => p.spec?.nodeName === ctx.config.nodeName);
  for (const [, c] of SELF_HOSTED_COMPONENTS) {
    const before = await here(c);
    if (ctx.dryRun) {
      restarted.push(...before.map((p) => `Pod/kube-system/${p.metadata?.name}`));
      continue;
    }
    for (const p of before) {
      await api.delete({ apiVersion: 'v1', kind: 'Pod', metadata: { name: p.metadata!.name!, namespace: 'kube-system' } });
      restarted.push(`Pod/kube-system/${p.metadata?.name}`);
    }
    const old = new Set(before.map((p) => p.metadata?.uid));
    const ready = (p: NodePod) => !old.has(p.metadata?.uid) && p.status?.conditions?.some((x) => x.type === 'Ready' && x.status === 'True');
    const wanted = c === 'kube-apiserver' ? async () => (await here(c)).some(ready) || undefined : async () => (await api.list<NodePod>('v1', 'Pod', 'kube-system', `component=${c},tier=control-plane`)).filter(ready).length >= before.length || undefined;
    if (before.length && !(await pollUntil(wanted, { timeoutMs, intervalMs: 1_000, signal: ctx.signal })))
      throw new TimeoutError('restart-timeout', { what: `${c} on ${ctx.config.nodeName}`, why: `no replacement pod was Ready within ${timeoutMs / 1000} s`, fix: `check \`kubectl -n kube-system get pods -l component=${c} -o wide\` and the kubelet's journal on this node` });
  }
  return restarted;
}
