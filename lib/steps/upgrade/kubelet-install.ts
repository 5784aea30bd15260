/**
 * `kubelet-install` of `upgrade node` on a transactional system (openSUSE Kubic / MicroOS:
 * distros/kubic/overrides.ts inserts it after `drain`): the running system's /usr is read-only and
 * changes only by a new snapshot that the next boot applies. So when the kubelet binary is not the
 * cluster's version, `transactional-update --non-interactive pkg install kubernetes<MAJOR.MINOR>-kubelet`
 * makes that snapshot and the node reboots into it; the run stops there (the drained Node stays
 * cordoned), and `kubeception upgrade node` run again after the boot finds the new binary, skips this
 * step and goes on (kubelet-config, kubelet-restart, uncordon).
 *
 * Host effects: the install command; a reboot (`systemctl reboot`, queued: the run ends first).
 * @see https://kubic.opensuse.org/documentation/man-pages/transactional-update.8.html
 */
import { KubeceptionError } from '../../errors.ts';
import { compareVersions, parseVersion } from '../../upgrade/skew.ts';
import type { StepOutcome } from '../../engine/dsl.ts';
import type { UpgradeNodeContext } from '../contexts.ts';

/** The package of the kubelet of `version` (`v1.37.2` → `kubernetes1.37-kubelet`), as openSUSE names it. */
export const kubicKubeletPackage = (version: string) => {
  const v = parseVersion(version);
  return v ? `kubernetes${v.major}.${v.minor}-kubelet` : undefined;
};

/** The command that puts the kubelet of `version` into the next snapshot. */
export const transactionalKubeletInstall = (version: string): string[] => ['transactional-update', '--non-interactive', 'pkg', 'install', kubicKubeletPackage(version) ?? `kubernetes-kubelet`];

/** `skipIf` of kubelet-install: the binary already is the cluster's version (after the reboot, or installed by hand). */
export function kubeletBinaryAtTarget(ctx: UpgradeNodeContext): string | false {
  const p = ctx.state.upgradeNode;
  if (!p) return false;
  const [b, t] = [parseVersion(p.binary), parseVersion(p.target)];
  return b && t && compareVersions(b, t) === 0 ? `the kubelet binary is ${p.target}` : false;
}

/**
 * Installs the cluster's kubelet into a new snapshot and reboots into it.
 * @throws KubeceptionError `kubelet-install` when the install command fails (its last stderr line).
 * @throws KubeceptionError `reboot-required` once the snapshot is made and the reboot queued: the run
 *   stops (exit 1) and continues with `kubeception upgrade node` after the boot.
 */
export async function installKubeletTransactional(ctx: UpgradeNodeContext): Promise<StepOutcome> {
  const p = ctx.state.upgradeNode;
  if (!p) throw new Error('upgrade-node-preflight did not run');
  const argv = transactionalKubeletInstall(p.target);
  const r = await ctx.sh.exec(argv, { allowFail: true, timeoutMs: 1_800_000 });
  if (r.code !== 0)
    throw new KubeceptionError('kubelet-install', { what: argv.join(' '), why: `exit ${r.code}: ${(r.stderr.trim() || r.stdout.trim()).split('\n').pop()?.slice(0, 300)}`, fix: `make the kubelet ${p.target} installable (the package ${argv[argv.length - 1]} in a repository of this node), or install it and reboot by hand, then run \`kubeception upgrade node\` again` });
  if (ctx.dryRun) return { changed: true, detail: `${argv.join(' ')}, then a reboot` };
  await ctx.sh.exec(['systemctl', 'reboot', '--no-block'], { timeoutMs: 30_000 });
  throw new KubeceptionError('reboot-required', {
    what: `node ${ctx.config.nodeName}`,
    why: `the kubelet ${p.target} is in a new snapshot (${argv.join(' ')}), which only a boot applies; the node is rebooting (it stays cordoned)`,
    fix: 'after the boot, run `kubeception upgrade node` again: it finds the new kubelet and goes on from the drain',
  });
}
