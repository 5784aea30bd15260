/**
 * The container runtime (containerd, CRI-O) the kubelet talks to: a preflight check that its unit
 * exists, and a step body that enables and starts it through systemd.
 */
import type { Context } from '../../context.ts';
import type { StepOutcome } from '../../engine/dsl.ts';
import type { Check } from '../preflight/preflight-check.ts';

/** Preflight check `Service-container-runtime`: the distro's runtime unit is installed. */
export const containerRuntimeCheck: Check = {
  id: 'Service-container-runtime',
  async run(ctx) {
    const unit = ctx.config.distro.units.containerRuntime;
    if ((await ctx.systemd.unitFileState(unit)) !== 'not-found') return undefined;
    return { message: `systemd has no unit ${unit} (the container runtime for ${ctx.config.kubelet.criSocket})`, fix: `install the runtime that ships ${unit}, or set units.containerRuntime in the distro settings` };
  },
};

/** Enables and starts the runtime unit. Host effects: unit enabled and started. */
export async function ensureContainerRuntime(ctx: Context): Promise<StepOutcome> {
  const unit = ctx.config.distro.units.containerRuntime;
  const enabled = await ctx.systemd.enable([unit]);
  const active = (await ctx.systemd.activeState(unit)) === 'active';
  if (!active) await ctx.systemd.start(unit);
  return { changed: enabled || !active, detail: active ? `${unit} active` : `${unit} started` };
}
