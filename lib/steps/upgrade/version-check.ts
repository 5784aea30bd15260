/**
 * Preflight check `KubernetesVersion` of `run bootstrap` (lib/steps/preflight/preflight.ts): after
 * `upgrade apply`, a config that still names the older version must not roll the control plane back.
 * Reads the live kube-apiserver DaemonSet; no host effects.
 */
import { cluster, probeApiserver } from '../../k8s/apiserver.ts';
import { imageTag } from '../../upgrade/plan.ts';
import { compareVersions, parseVersion } from '../../upgrade/skew.ts';
import type { Cluster, KubernetesObject } from '../../k8s/client.ts';
import type { Context } from '../../context.ts';

/**
 * Preflight check `KubernetesVersion` of `run bootstrap` on a running cluster: the config's
 * kubernetesVersion must not be older than the self-hosted kube-apiserver's (after `upgrade apply`,
 * an unchanged config would roll the control plane back a version). Passes when no final apiserver
 * answers (a fresh host).
 */
export const kubernetesVersionCheck = {
  id: 'KubernetesVersion',
  async run(ctx: Context): Promise<{ message: string; fix: string } | undefined> {
    // Never throws: a missing or unreadable admin.conf is KubeconfigReadable's to report.
    try {
      if ((await probeApiserver(ctx, 'final', 2_000)) !== undefined) return undefined;
      return await downgradeProblem(ctx, await cluster(ctx, 'final'));
    } catch {
      return undefined;
    }
  },
};

/** Why applying `ctx.config` would move the running control plane back a version, or undefined. */
export async function downgradeProblem(ctx: Context, api: Cluster): Promise<{ message: string; fix: string } | undefined> {
  const ds = await api.read<KubernetesObject>({ apiVersion: 'apps/v1', kind: 'DaemonSet', metadata: { name: 'kube-apiserver', namespace: 'kube-system' } }).catch(() => undefined);
  const running = parseVersion(imageTag(ds as Parameters<typeof imageTag>[0]));
  const want = parseVersion(ctx.config.kubernetesVersion);
  if (!running || !want) return undefined;
  if (compareVersions(want, running) >= 0) return undefined;
  const tag = imageTag(ds as Parameters<typeof imageTag>[0]);
  return { message: `the cluster runs kube-apiserver ${tag}, newer than kubernetesVersion ${ctx.config.kubernetesVersion}: this run would move the control plane back`, fix: `set kubernetesVersion: '${tag}' in the config file (upgrades go through \`kubeception upgrade apply\`)` };
}
