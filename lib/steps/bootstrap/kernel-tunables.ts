/**
 * The kernel tunables the kubelet wants, for `protectKernelDefaults: true` (kubeception's default,
 * the CIS Kubernetes Benchmark's 4.2.6 of older versions): with it the kubelet no longer sets them
 * itself but refuses to start when one differs ("invalid kernel flag …"). kubeception therefore
 * writes them to a sysctl.d file (applied by systemd-sysctl at each boot, before the kubelet) and
 * sets any that differs now, before the kubelet starts; the `KernelTunables` preflight check says
 * which value cannot be set (a read-only `/proc/sys`, as in a container), before any host write —
 * with the option off too, since the kubelet then fails to set it itself.
 *
 * The values are the ones the kubelet itself would write without the option, so a node's kernel
 * ends up as it would today: `kernel.panic=10` (reboot 10 s after a panic), `kernel.panic_on_oops=1`,
 * `vm.overcommit_memory=1`, `vm.panic_on_oom=0`, and the root key quotas.
 *
 * Host effects: `/etc/sysctl.d/90-kubeception-kubelet.conf` (0644); `sysctl -w` for each value that
 * differs. Nothing when `kubelet.extraConfig.protectKernelDefaults` is false.
 * @see kubernetes/pkg/kubelet/cm/container_manager_linux.go (setupKernelTunables)
 * @see kubernetes/pkg/util/sysctl (the constants)
 */
import { access, constants } from 'node:fs/promises';
import type { Context } from '../../context.ts';
import { protectKernelDefaults } from '../../config/kubelet-defaults.ts';
import { KUBELET_SYSCTL_FILE, KUBELET_SYSCTLS } from '../../constants.ts';
import type { Check } from '../preflight/preflight-check.ts';

export { KUBELET_SYSCTL_FILE, KUBELET_SYSCTLS };

const procPath = (key: string) => `/proc/sys/${key.replace(/\./g, '/')}`;

/** A tunable whose current value is not the kubelet's. `writable`: its /proc/sys file can be written (access W_OK). */
export interface TunableDiff {
  key: string;
  have: string;
  want: string;
  writable: boolean;
}

/** The tunables that differ now (read from /proc/sys; a key the kernel lacks is skipped, as the kubelet does). */
export async function kernelTunableDiffs(ctx: Pick<Context, 'files'>): Promise<TunableDiff[]> {
  const out: TunableDiff[] = [];
  for (const [key, want] of Object.entries(KUBELET_SYSCTLS)) {
    const have = (await ctx.files.read(procPath(key)))?.trim();
    if (have === undefined || have === want) continue;
    const writable = await access(procPath(key), constants.W_OK).then(() => true, () => false);
    out.push({ key, have, want, writable });
  }
  return out;
}

/** The sysctl.d file's text. */
export function renderKubeletSysctls(): string {
  return ['# Written by kubeception: the kernel tunables the kubelet checks with protectKernelDefaults: true.', ...Object.entries(KUBELET_SYSCTLS).map(([k, v]) => `${k} = ${v}`), ''].join('\n');
}

/**
 * `KernelTunables`: every tunable that differs must be settable here. Checked whatever
 * `protectKernelDefaults` says: without it the kubelet sets them itself, and fails to start just the
 * same when it cannot (its container manager returns the sysctl error). Fails naming each value that
 * cannot be set, and how to fix it.
 */
export const kernelTunablesCheck: Check = {
  id: 'KernelTunables',
  async run(ctx) {
    return tunablesFailure(await kernelTunableDiffs(ctx));
  },
};

/** The `KernelTunables` failure for `diffs` (those not writable), or undefined if every one can be set. */
export function tunablesFailure(diffs: readonly TunableDiff[]): { message: string; fix: string } | undefined {
  const stuck = diffs.filter((d) => !d.writable);
  if (!stuck.length) return undefined;
  return {
    message: `the kubelet does not start while ${stuck.map((d) => `${d.key} is ${d.have} (it needs ${d.want})`).join(', ')}, and /proc/sys is read-only here (a container?): neither kubeception nor the kubelet can set ${stuck.length > 1 ? 'them' : 'it'}`,
    fix: `set ${stuck.map((d) => `${d.key}=${d.want}`).join(' ')} where the kernel is owned (the machine or VM: a file in /etc/sysctl.d), then run this again`,
  };
}

/**
 * Writes {@link KUBELET_SYSCTL_FILE} and sets each tunable that differs (`sysctl -q -w`).
 * @returns what changed, for the step's detail.
 * @throws CommandError when `sysctl -w` fails (the preflight check found it writable).
 */
export async function ensureKernelTunables(ctx: Context): Promise<string[]> {
  if (!protectKernelDefaults(ctx.config)) return [];
  const changed: string[] = [];
  if (await ctx.files.write(KUBELET_SYSCTL_FILE, renderKubeletSysctls(), { mode: 0o644 })) changed.push(KUBELET_SYSCTL_FILE);
  for (const d of await kernelTunableDiffs(ctx)) {
    await ctx.sh.exec(['sysctl', '-q', '-w', `${d.key}=${d.want}`]);
    changed.push(`${d.key} ${d.have} → ${d.want}`);
  }
  return changed;
}
