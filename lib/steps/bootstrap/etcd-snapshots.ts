/**
 * `etcd-snapshot-schedule`: scheduled etcd snapshots, on by default on control-plane nodes — the
 * timer and oneshot service of lib/etcd/snapshot-schedule.ts, enabled and started; with
 * `etcd.snapshots.disabled` the timer is stopped and disabled and both files removed. Converges:
 * a re-run with the same config changes nothing; a new interval rewrites the timer and restarts it.
 *
 * Host effects: `<systemdDir>/kubeception-etcd-snapshot.{service,timer}` (0644), a daemon-reload
 * when they change, the timer enabled (timers.target) and started. The snapshots themselves are
 * taken later, by the service (`kubeception etcd snapshot save`).
 */
import { dirname, join } from 'node:path';
import process from 'node:process';
import { KubeceptionError } from '../../errors.ts';
import { SNAPSHOT_SERVICE, SNAPSHOT_TIMER, snapshotUnits } from '../../etcd/snapshot-schedule.ts';
import type { Context } from '../../context.ts';
import type { StepOutcome } from '../../engine/dsl.ts';

export { SNAPSHOT_SERVICE, SNAPSHOT_TIMER } from '../../etcd/snapshot-schedule.ts';

/** Stops and disables the timer, removes both unit files. @returns what changed. */
async function removeSchedule(ctx: Context, paths: string[]): Promise<string[]> {
  const changed: string[] = [];
  if ((await ctx.systemd.activeState(SNAPSHOT_TIMER)) === 'active') {
    await ctx.systemd.stop(SNAPSHOT_TIMER);
    changed.push(`${SNAPSHOT_TIMER} stopped`);
  }
  if ((await ctx.systemd.unitFileState(SNAPSHOT_TIMER).catch(() => 'not-found')) === 'enabled' && (await ctx.systemd.disable?.([SNAPSHOT_TIMER]))) changed.push(`${SNAPSHOT_TIMER} disabled`);
  for (const p of paths) if (await ctx.files.remove(p)) changed.push(`${p} removed`);
  if (changed.some((c) => c.endsWith('removed'))) await ctx.systemd.reload();
  return changed;
}

/**
 * The bootstrap's `etcd-snapshot-schedule` step.
 * @throws KubeceptionError `config-file-unknown` when run without the CLI's config file (a test double).
 */
export async function ensureEtcdSnapshotSchedule(ctx: Context): Promise<StepOutcome> {
  const s = ctx.config.etcd.snapshots;
  const dir = ctx.config.distro.paths.systemdDir;
  const [servicePath, timerPath] = [join(dir, SNAPSHOT_SERVICE), join(dir, SNAPSHOT_TIMER)];
  if (s.disabled) {
    const changed = await removeSchedule(ctx, [timerPath, servicePath]);
    return { changed: changed.length > 0, detail: changed.length ? `etcd.snapshots.disabled: ${changed.join(', ')}` : 'etcd.snapshots.disabled: no scheduled snapshots' };
  }
  const configFile = ctx.options.configFile;
  if (!configFile) throw new KubeceptionError('config-file-unknown', { what: 'etcd-snapshot-schedule', why: 'the step needs the path of the config file the scheduled `etcd snapshot save` is to load', fix: 'run the step through the kubeception CLI (`kubeception run bootstrap`)' });
  const units = snapshotUnits(ctx.config, { node: process.execPath, cli: join(ctx.packageDir, 'bin', 'kubeception.js'), configFile, siteDir: dirname(configFile) });
  const changed: string[] = [];
  if (await ctx.files.write(servicePath, units.service, { mode: 0o644 })) changed.push(servicePath);
  const timerWritten = await ctx.files.write(timerPath, units.timer, { mode: 0o644 });
  if (timerWritten) changed.push(timerPath);
  // Enabling reloads systemd when it adds the link; otherwise a changed file needs its own reload.
  if (await ctx.systemd.enable([SNAPSHOT_TIMER])) changed.push(`${SNAPSHOT_TIMER} enabled`);
  else if (changed.length) await ctx.systemd.reload();
  const active = (await ctx.systemd.activeState(SNAPSHOT_TIMER)) === 'active';
  if (!active || timerWritten) {
    await ctx.systemd.start(SNAPSHOT_TIMER, { restart: active, settleMs: 0 });
    changed.push(`${SNAPSHOT_TIMER} ${active ? 'restarted' : 'started'}`);
  }
  return { changed: changed.length > 0, detail: changed.length ? `every ${s.interval}, keeping ${s.retention} in ${s.dir}: ${changed.join(', ')}` : `every ${s.interval}, keeping ${s.retention} in ${s.dir}: up to date` };
}
