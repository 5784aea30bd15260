/**
 * `remove-containers` for a runtime reached through the CRI with crictl (CRI-O on Kubic:
 * distros/kubic/overrides.ts puts it in place of the containerd step {@link removeContainers}): every
 * pod sandbox and container the kubelet's runtime holds is stopped and removed, which makes the
 * runtime release their network namespaces, mounts and CNI attachments itself.
 *
 * Host effects: `crictl rmp --force --all` (repeated while a sandbox the stopped kubelet had in flight
 * appears); the runtime unit is not restarted (CRI-O keeps no record of a removed pod).
 * @see kubernetes/cmd/kubeadm/app/cmd/phases/reset/cleanupnode.go (RemoveContainers through the CRI)
 */
import { criContainers, criPods, criRemoveAllPods } from '../../host/crictl.ts';
import { KubeceptionError } from '../../errors.ts';
import { pollUntil } from '../../util/poll.ts';
import type { StepOutcome } from '../../engine/dsl.ts';
import type { ResetContext } from '../contexts.ts';
import { resetOutcome } from './outcome.ts';

/**
 * Removes every pod and container of the CRI runtime at `kubelet.criSocket`.
 * @throws KubeceptionError `reset-containers` when some remain after 60 s (the runtime names them).
 */
export async function removeCriContainers(ctx: ResetContext): Promise<StepOutcome> {
  let pods = 0;
  for (let pass = 0; pass < 3; pass++) {
    const n = await criRemoveAllPods(ctx);
    if (!n) break;
    pods += n;
    if (ctx.dryRun) break;
  }
  if (!ctx.dryRun && pods) {
    const gone = await pollUntil(async () => ((await criPods(ctx)).length + (await criContainers(ctx)).length === 0 ? true : undefined), { timeoutMs: 60_000, intervalMs: 500, signal: ctx.signal });
    if (!gone) {
      const left = [...(await criPods(ctx)).map((p) => `pod ${p.slice(0, 13)}`), ...(await criContainers(ctx)).map((c) => `container ${c.slice(0, 13)}`)];
      throw new KubeceptionError('reset-containers', { what: `the container runtime at ${ctx.config.kubelet.criSocket}`, why: `${left.join(', ')} remain after crictl rmp --force --all`, fix: `check ${ctx.config.distro.units.containerRuntime} (journalctl -u ${ctx.config.distro.units.containerRuntime}), remove them with crictl rmp -f / crictl rm -f, then run reset again` });
    }
  }
  return resetOutcome(pods ? [`${pods} pod(s) removed through the CRI`] : [], 'no containers');
}
