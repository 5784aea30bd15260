/**
 * The hand-off from the bootstrap control plane to the self-hosted one: applying the self-hosted
 * control plane through the active apiserver, node registration and marking, the stability check of
 * the self-hosted apiserver, the kubelet pivot, and removing the bootstrap static pods. Every step
 * checks the cluster first and acts only where it differs.
 *
 * Host effects: static pod manifests removed from the kubelet's `staticPodPath`; objects applied
 * with server-side apply; the Node labelled and tainted; the kubelet's kubeconfig re-pointed and the
 * kubelet restarted.
 */
import { join } from 'node:path';
import { CONTROL_PLANE_LABEL } from '../../constants.ts';
import { KubeceptionError, TimeoutError } from '../../errors.ts';
import { pollUntil } from '../../util/poll.ts';
import { cluster, waitApiserver } from '../../k8s/apiserver.ts';
import { kubeletRestartPending, kubeletTarget, pointKubelet, restartKubelet } from '../bootstrap/kubelet.ts';
import { crashPoint } from '../../engine/crash.ts';
import { statusGate } from '../../status/gate.ts';
import { applyComponentByComponent, deleteLegacyKeySecrets, selfHostedManifests } from './self-hosted.ts';
import type { Cluster, KubernetesObject, V1Node } from '../../k8s/client.ts';
import type { Context } from '../../context.ts';
import type { KubeletState } from '../contexts.ts';
import type { StepOutcome } from '../../engine/dsl.ts';

import { activeApiserver, bootstrapManifestsPresent, bootstrapSchedulerFallback } from '../bootstrap/control-plane.ts';

/** `self-hosted-control-plane`: applies the self-hosted control plane and kube-proxy. */
export async function applySelfHostedControlPlane(ctx: Context): Promise<StepOutcome> {
  const which = await activeApiserver(ctx);
  const api = await cluster(ctx, which);
  const objects = await selfHostedManifests(ctx, api);
  if (which === 'final') {
    // A running self-hosted control plane (a re-run with renewed certificates or changed flags):
    // one component at a time, each roll awaited, as `certs renew` does; a component whose new
    // pods fail, or whose roll fails a health check that passed before it (lib/status/gate.ts), is
    // given back its previous spec and the run fails (`rolled-back`).
    const { changed, rolled } = await applyComponentByComponent(ctx, api, objects, { afterFirst: () => crashPoint('partly-applied'), rollBack: true, gate: statusGate(ctx) });
    // The workloads have rolled off the Secrets an older kubeception kept the keys in.
    changed.push(...(await deleteLegacyKeySecrets(api)));
    for (const ref of changed) ctx.log.info(`applied ${ref}`);
    return { changed: changed.length > 0, detail: `${changed.length} object(s) changed via the final apiserver${rolled.length ? `; rolled one at a time: ${rolled.join(', ')}` : ''}` };
  }
  await bootstrapSchedulerFallback(ctx);
  const half = Math.ceil(objects.length / 2);
  const changed = await api.apply(objects.slice(0, half));
  crashPoint('partly-applied');
  changed.push(...(await api.apply(objects.slice(half))));
  changed.push(...(await deleteLegacyKeySecrets(api)));
  for (const ref of changed) ctx.log.info(`applied ${ref}`);
  return { changed: changed.length > 0, detail: `${changed.length} object(s) changed via the ${which} apiserver` };
}

async function readNode(ctx: Context): Promise<V1Node | undefined> {
  const api = await cluster(ctx, await activeApiserver(ctx));
  return api.read<V1Node>({ apiVersion: 'v1', kind: 'Node', metadata: { name: ctx.config.nodeName } });
}

/** `wait-node-registered`: the kubelet has registered this node's Node object. */
export async function waitNodeRegistered(ctx: Context): Promise<StepOutcome> {
  if (ctx.dryRun) return { changed: false, detail: `would wait for Node ${ctx.config.nodeName}` };
  let last = 'the Node does not exist yet';
  const node = await pollUntil(async () => {
    try {
      return await readNode(ctx);
    } catch (err) {
      if (err instanceof KubeceptionError && (err.badInput || err.code === 'kubeconfig-invalid')) throw err; // a corrupt admin kubeconfig: no point waiting
      last = (err as Error).message.split('\n')[0] ?? String(err);
      ctx.log.info(`waiting for Node ${ctx.config.nodeName}: ${last}`);
      return undefined;
    }
  }, { timeoutMs: 180_000, intervalMs: 250, signal: ctx.signal });
  if (node) return { changed: false, detail: `Node ${ctx.config.nodeName} registered` };
  throw new TimeoutError('node-not-registered', { what: `Node ${ctx.config.nodeName}`, why: `the kubelet did not register it within 180 s (last: ${last})`, fix: `check \`journalctl -u ${ctx.config.distro.units.kubelet}\`` });
}

/**
 * Labels `node-role.kubernetes.io/control-plane=""` and taints it NoSchedule (kubeadm's) unless both
 * are there; other taints are kept. Shared by bootstrap's and the control-plane join's
 * `mark-control-plane`. @param node the Node as read (undefined: not read, patched anyway).
 */
export async function labelAndTaintControlPlane(api: Cluster, nodeName: string, node: V1Node | undefined): Promise<StepOutcome> {
  const hasLabel = node?.metadata?.labels?.[CONTROL_PLANE_LABEL] === '';
  const hasTaint = (node?.spec?.taints ?? []).some((t) => t.key === CONTROL_PLANE_LABEL && t.effect === 'NoSchedule');
  if (hasLabel && hasTaint) return { changed: false, detail: 'already labelled and tainted' };
  await api.patch({ apiVersion: 'v1', kind: 'Node', metadata: { name: nodeName } }, {
    metadata: { labels: { [CONTROL_PLANE_LABEL]: '' } },
    spec: { taints: [...(node?.spec?.taints ?? []).filter((t) => t.key !== CONTROL_PLANE_LABEL), { key: CONTROL_PLANE_LABEL, effect: 'NoSchedule' }] },
  });
  return { changed: true, detail: `labelled and tainted ${CONTROL_PLANE_LABEL}` };
}

/** `mark-control-plane`: label `node-role.kubernetes.io/control-plane=""` and taint it NoSchedule (kubeadm's). */
export async function markControlPlane(ctx: Context): Promise<StepOutcome> {
  return labelAndTaintControlPlane(await cluster(ctx, await activeApiserver(ctx)), ctx.config.nodeName, await readNode(ctx));
}

/**
 * `wait-self-hosted-control-plane`: the final apiserver answers /readyz 10 times in a row (the seed's
 * stability check), 100 ms apart: an apiserver that stops serving breaks the streak. Before the
 * pivot, `apiserver-recovery` also waits for the pod's Ready condition, the kubelet's own probes.
 */
export async function waitSelfHostedControlPlane(ctx: Context): Promise<StepOutcome> {
  if (ctx.dryRun) return { changed: false, detail: 'would wait for the self-hosted kube-apiserver /readyz, 10 in a row' };
  const probes = await waitApiserver(ctx, 'final', { timeoutMs: 300_000, intervalMs: 100, inARow: 10 });
  return { changed: false, detail: `stable after ${probes} probe(s)` };
}

/**
 * `kubelet-pivot`: points the kubelet at the final apiserver and restarts it if that changed — in
 * this run or in a killed earlier one (the pending restart is persisted before the kubeconfig write,
 * so "the file already names the final apiserver" never hides a kubelet still on the bootstrap one).
 *
 * The bootstrap static pod manifests are removed between the kubeconfig write and the restart: the
 * restarted kubelet then never starts syncing the bootstrap pods, and stops their containers as
 * orphans. Removed right after a restart instead, while the new kubelet's workers for those pods
 * still wait to mount their volumes, the kubelet kept the bootstrap control plane running for about
 * two minutes (seen on the bed: the workers' 2-minute volume wait had to time out first). A power
 * cut after the removal boots a kubelet that already names the final apiserver.
 */
export async function pivotKubelet(ctx: Context<object, KubeletState>): Promise<StepOutcome> {
  const onFinal = (await kubeletTarget(ctx)) === 'final';
  if (onFinal && !(await kubeletRestartPending(ctx))) {
    crashPoint('kubeconfig-written');
    crashPoint('manifest-removed');
    crashPoint('kubelet-restarted');
    return { changed: false, detail: 'kubelet already on the final apiserver' };
  }
  await pointKubelet(ctx, 'final');
  crashPoint('kubeconfig-written');
  const removed = await removeBootstrapManifests(ctx);
  await restartKubelet(ctx, { restart: true });
  crashPoint('kubelet-restarted');
  return { changed: true, detail: `kubelet now uses the final apiserver${removed.length ? `; removed ${removed.join(', ')}` : ''}` };
}

/** Deletes the bootstrap static pod manifests. @returns the file names removed. */
async function removeBootstrapManifests(ctx: Context): Promise<string[]> {
  const files = await bootstrapManifestsPresent(ctx);
  for (const f of files) {
    await ctx.files.remove(join(ctx.config.distro.paths.staticPodPath, f));
    crashPoint('manifest-removed');
  }
  return files;
}

/**
 * The `kubernetes` Service in `default` was created by the bootstrap apiserver with its port as
 * targetPort, and apiservers never correct it; point it at the final apiserver's port.
 * @returns true if it was patched.
 */
async function fixKubernetesService(ctx: Context): Promise<boolean> {
  const api = await cluster(ctx, 'final');
  const ref = { apiVersion: 'v1', kind: 'Service', metadata: { name: 'kubernetes', namespace: 'default' } };
  const svc = await api.read<{ spec?: { ports?: { name?: string; port: number; targetPort?: number | string; protocol?: string }[] } } & KubernetesObject>(ref);
  const want = ctx.config.localAPIEndpoint.bindPort;
  const ports = svc?.spec?.ports ?? [];
  if (!svc || ports.every((p) => p.targetPort === want)) return false;
  await api.patch(ref, { spec: { ports: ports.map((p) => ({ ...p, targetPort: want })) } });
  return true;
}

/**
 * `remove-bootstrap-control-plane`: deletes any bootstrap static pod manifest still there (a first
 * run's `kubelet-pivot` removed them; this finds those of a killed or older run); fixes the
 * `kubernetes` Service's targetPort.
 */
export async function removeBootstrapControlPlane(ctx: Context): Promise<StepOutcome> {
  const files = await removeBootstrapManifests(ctx);
  if (!files.length) crashPoint('manifest-removed');
  const fixed = await fixKubernetesService(ctx);
  const detail = [files.length ? `removed ${files.join(', ')}` : 'no bootstrap manifests', ...(fixed ? [`Service kubernetes targetPort → ${ctx.config.localAPIEndpoint.bindPort}`] : [])];
  return { changed: files.length > 0 || fixed, detail: detail.join('; ') };
}
