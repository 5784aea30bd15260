/**
 * The scheduled etcd snapshot as systemd units (pure): a oneshot service that runs
 * `kubeception etcd snapshot save` with the site's config, and a timer that starts it every
 * `etcd.snapshots.interval` (first one interval after the timer starts, then one interval after each
 * run ends: a slow snapshot never overlaps the next). k3s's default schedule is every 12 h.
 * Both files start with kubeception's header, so `reset` proves them its own.
 * @see https://www.freedesktop.org/software/systemd/man/latest/systemd.timer.html
 */
import { ETCD_ENV_HEADER } from './config.ts';
import type { ResolvedConfig } from '../types.ts';

export const SNAPSHOT_SERVICE = 'kubeception-etcd-snapshot.service';
export const SNAPSHOT_TIMER = 'kubeception-etcd-snapshot.timer';

/** One argument quoted for a unit's `ExecStart=` (double quotes; `\`, `"` escaped; `%` and `$` doubled). */
export function execArg(arg: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (/[\u0000-\u001f\u007f]/.test(arg)) throw new Error(`a unit argument cannot hold a control character: ${JSON.stringify(arg)}`);
  return /^[A-Za-z0-9_@+=:,./-]+$/.test(arg) ? arg : `"${arg.replace(/[\\"]/g, '\\$&').replace(/%/g, '%%').replace(/\$/g, '$$$$')}"`;
}

/** How the service runs kubeception: the node binary, the CLI script, and the site's config file (all absolute). */
export interface SnapshotCommand {
  node: string;
  cli: string;
  configFile: string;
  /** The site directory (the config file's): the service's working directory. */
  siteDir: string;
}

/** The service's and the timer's text. Deterministic: the same inputs render the same bytes, so a re-run writes nothing. */
export function snapshotUnits(config: ResolvedConfig, cmd: SnapshotCommand): { service: string; timer: string } {
  const s = config.etcd.snapshots;
  const every = `${Math.round(s.intervalMs / 1000)}s`;
  const header = `${ETCD_ENV_HEADER}; re-running bootstrap rewrites this file.`;
  const exec = [cmd.node, cmd.cli, 'etcd', 'snapshot', 'save', '--config', cmd.configFile].map(execArg).join(' ');
  const service = `${header}
[Unit]
Description=kubeception: etcd snapshot of this control-plane node into ${s.dir}
After=${config.distro.units.etcd}
ConditionPathExists=${config.certificatesDir}/etcd/healthcheck-client.crt

[Service]
Type=oneshot
WorkingDirectory=${cmd.siteDir.replace(/%/g, '%%')}
ExecStart=${exec}
Nice=10
IOSchedulingClass=best-effort
IOSchedulingPriority=7
TimeoutStartSec=30min
`;
  const timer = `${header}
[Unit]
Description=kubeception: etcd snapshot every ${s.interval} (etcd.snapshots.interval), keeping ${s.retention}

[Timer]
OnActiveSec=${every}
OnUnitActiveSec=${every}
AccuracySec=1min
Unit=${SNAPSHOT_SERVICE}

[Install]
WantedBy=timers.target
`;
  return { service, timer };
}
