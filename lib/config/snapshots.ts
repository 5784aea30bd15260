/**
 * `etcd.snapshots`: where `kubeception etcd snapshot save` writes, how many it keeps, how often the
 * scheduled one runs, and the key file that encrypts each snapshot's PKI part. Pure; called by
 * ./validate.ts. Defaults as k3s's (every 12 h, keep 5).
 * @see https://docs.k3s.io/cli/etcd-snapshot
 */
import { parseDuration } from '../join/token.ts';
import { ConfigError } from '../errors.ts';
import { dedicatedDir, inside } from './limits.ts';
import type { DistroSettings, EtcdSnapshotSettings, KubeceptionConfig } from '../types.ts';

/** Defaults of `etcd.snapshots`. */
export const SNAPSHOT_DEFAULTS = {
  dir: '/var/lib/kubeception/snapshots',
  retention: 5,
  interval: '12h',
  keyFile: '/etc/kubeception/snapshot.key',
} as const;
/** The most snapshots `retention` may keep, and the shortest `interval` (1 minute) and longest (a year). */
export const MAX_RETENTION = 1000;
export const MIN_INTERVAL_MS = 60_000;
export const MAX_INTERVAL_MS = 8760 * 3_600_000;

function bad(field: string, file: string, why: string, fix: string): never {
  throw new ConfigError('config-invalid', { what: `${file}: etcd.snapshots.${field}`, why, fix });
}

/**
 * Resolves `etcd.snapshots`.
 * Rules: `dir` a dedicated directory (./limits.ts), neither inside certificatesDir or etcd.dataDir nor
 * a parent of them; `retention` an integer 1–{@link MAX_RETENTION}; `interval` a duration of 1m to
 * 8760h; `keyFile` an absolute path outside `dir` (a key next to what it encrypts protects nothing),
 * outside etcd.dataDir (the etcd user's) and not a directory name.
 * @param dirs the resolved certificatesDir and etcd.dataDir.
 * @throws ConfigError `config-invalid` naming `etcd.snapshots.<field>`.
 */
export function resolveSnapshots(cfg: KubeceptionConfig, distro: DistroSettings, dirs: { certificatesDir: string; dataDir: string }, file: string): EtcdSnapshotSettings {
  const s = cfg.etcd?.snapshots ?? {};
  const example = SNAPSHOT_DEFAULTS.dir;
  const dir = s.dir === undefined ? SNAPSHOT_DEFAULTS.dir : dedicatedDir('etcd.snapshots.dir', s.dir, distro, file, { writes: 'etcd snapshots', example });
  for (const [name, d] of [['certificatesDir', dirs.certificatesDir], ['etcd.dataDir', dirs.dataDir]] as const)
    if (inside(dir, d) || inside(d, dir)) bad('dir', file, `${dir} ${inside(dir, d) ? 'is inside' : 'holds'} ${name} ${d}: snapshots need a directory of their own`, `use a dedicated directory such as ${example}`);
  const retention = s.retention ?? SNAPSHOT_DEFAULTS.retention;
  if (!Number.isInteger(retention) || retention < 1 || retention > MAX_RETENTION)
    bad('retention', file, `${retention} is not a number of snapshots from 1 to ${MAX_RETENTION}`, `set retention to how many snapshots of this node to keep, e.g. ${SNAPSHOT_DEFAULTS.retention}`);
  const interval = s.interval ?? SNAPSHOT_DEFAULTS.interval;
  const intervalMs = parseDuration(interval);
  if (!intervalMs) bad('interval', file, `"${interval}" is not a positive duration`, 'use hours, minutes and seconds, e.g. 12h, 30m or 1h30m');
  if (intervalMs < MIN_INTERVAL_MS || intervalMs > MAX_INTERVAL_MS) bad('interval', file, `${interval} is outside 1m to 8760h`, `set interval to e.g. ${SNAPSHOT_DEFAULTS.interval} (k3s's default), or set disabled: true for no scheduled snapshots`);
  const keyFile = s.keyFile ?? SNAPSHOT_DEFAULTS.keyFile;
  if (!keyFile.startsWith('/') || keyFile.endsWith('/') || keyFile.split('/').includes('..')) bad('keyFile', file, `"${keyFile}" is not an absolute file path without ".."`, `set keyFile to a file path such as ${SNAPSHOT_DEFAULTS.keyFile}`);
  if (inside(keyFile, dir)) bad('keyFile', file, `${keyFile} is inside the snapshot directory ${dir}: whoever gets the snapshots would get the key that decrypts their PKI`, `keep the key elsewhere, e.g. ${SNAPSHOT_DEFAULTS.keyFile}, and copy it off the host`);
  if (inside(keyFile, dirs.dataDir)) bad('keyFile', file, `${keyFile} is inside etcd.dataDir ${dirs.dataDir}, which is given to the etcd user`, `keep the key elsewhere, e.g. ${SNAPSHOT_DEFAULTS.keyFile}`);
  return { dir, retention, interval, intervalMs, disabled: s.disabled === true, keyFile };
}
