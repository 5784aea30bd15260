/**
 * `etcdctl snapshot save` of the local member, and reading a snapshot file with etcd's own tools:
 * shared by `kubeception etcd snapshot` (lib/etcd/snapshot-bundle.ts) and `upgrade apply`'s
 * `etcd-snapshot` step. etcd 3.6 moved `snapshot status|restore` from etcdctl to etcdutl (the bed's
 * build ships both; Debian's etcd 3.4 has no etcdutl): {@link snapshotTools} prefers etcdutl.
 * @see https://etcd.io/docs/v3.6/op-guide/recovery/
 */
import { HostStateError, KubeceptionError, SnapshotError } from '../errors.ts';
import { etcdClientUrls, etcdPki } from './config.ts';
import type { Shell } from '../host/sh.ts';
import type { ResolvedConfig } from '../types.ts';

/** The binaries a snapshot needs: etcdctl to save; etcdutl (else etcdctl) to read and restore one. */
export interface SnapshotTools {
  etcdctl: string;
  /** `snapshot status` and `snapshot restore`: etcdutl when installed, else etcdctl (etcd ≤ 3.5). */
  offline: { bin: string; tool: 'etcdutl' | 'etcdctl' };
}

/**
 * Finds the tools on PATH.
 * @param why what needs them, for the error (e.g. "the upgrade takes an etcd snapshot first").
 * @throws HostStateError `etcdctl-missing` (exit 2) when etcdctl is not on PATH.
 */
export async function snapshotTools(sh: Shell, why: string): Promise<SnapshotTools> {
  const [etcdctl, etcdutl] = await Promise.all([sh.which('etcdctl'), sh.which('etcdutl')]);
  if (!etcdctl) throw new HostStateError('etcdctl-missing', { what: 'etcdctl', why: `it is not on PATH; ${why}`, fix: 'install the distro package with etcdctl (Debian: etcd-client)' });
  return { etcdctl, offline: etcdutl ? { bin: etcdutl, tool: 'etcdutl' } : { bin: etcdctl, tool: 'etcdctl' } };
}

/**
 * `etcdctl snapshot save` of the local member (its loopback client URL, with the healthcheck client
 * certificate) into `file`: written as `<file>.part`, made 0600, then renamed, so `file` is either
 * absent or complete. Its directory must exist.
 * Host effects (through `sh`, so recorded under dry-run): `<file>.part`, then `file` (0600).
 * @throws CommandError when etcdctl fails (etcd down, certificate refused); the `.part` is left for
 *   the caller to remove.
 */
export async function saveEtcdSnapshot(ctx: { config: ResolvedConfig; sh: Shell }, etcdctl: string, file: string): Promise<void> {
  const p = etcdPki(ctx.config);
  await ctx.sh.exec([etcdctl, `--endpoints=${etcdClientUrls(ctx.config)[0]}`, `--cacert=${p.ca}`, `--cert=${p.healthcheckCert}`, `--key=${p.healthcheckKey}`, 'snapshot', 'save', `${file}.part`], { env: { ETCDCTL_API: '3' }, timeoutMs: 300_000 });
  await ctx.sh.exec(['chmod', '0600', `${file}.part`]);
  await ctx.sh.exec(['mv', `${file}.part`, file]);
}

/** What `snapshot status -w json` says of a snapshot file. */
export interface SnapshotStatus {
  /** etcd's hash of the key-value store (not a file checksum). */
  hash: number;
  /** The store's revision when the snapshot was taken. */
  revision: number;
  /** Keys in the store, every revision and etcd's own buckets counted (not the live keys). */
  totalKey: number;
  /** Bytes of the bolt database. */
  totalSize: number;
}

/**
 * `etcdutl snapshot status -w json` (or etcdctl's). A read: runs under dry-run too.
 * @throws SnapshotError `snapshot-corrupt` naming `file` when the tool cannot read it.
 */
export async function snapshotStatus(sh: Shell, tools: SnapshotTools, file: string): Promise<SnapshotStatus> {
  const r = await sh.read([tools.offline.bin, 'snapshot', 'status', file, '-w', 'json'], { env: { ETCDCTL_API: '3' }, allowFail: true, timeoutMs: 120_000 });
  const s = r.code === 0 ? parseStatus(r.stdout) : undefined;
  if (!s) throw new SnapshotError('snapshot-corrupt', { what: file, why: `${tools.offline.tool} snapshot status cannot read it: ${lastLine(r.stderr || r.stdout)}`, fix: 'take a new snapshot (`kubeception etcd snapshot save`) and delete this one' });
  return s;
}

/** The JSON of `snapshot status -w json`, or undefined when it is not that. */
export function parseStatus(text: string): SnapshotStatus | undefined {
  try {
    const j = JSON.parse(text) as Record<string, unknown>;
    const n = (k: string) => (typeof j[k] === 'number' && Number.isFinite(j[k]) ? (j[k] as number) : undefined);
    const [hash, revision, totalKey, totalSize] = [n('hash'), n('revision'), n('totalKey'), n('totalSize')];
    return hash === undefined || revision === undefined || totalKey === undefined || totalSize === undefined ? undefined : { hash, revision, totalKey, totalSize };
  } catch {
    return undefined;
  }
}

/** The last non-empty line of a command's output (etcd tools log JSON lines before the error). */
export const lastLine = (text: string) => text.trim().split('\n').filter(Boolean).at(-1)?.slice(0, 300) ?? '(no output)';

/** The error for a save that etcd refused or that did not finish. */
export function snapshotSaveFailed(file: string, err: unknown): KubeceptionError {
  const why = err instanceof KubeceptionError ? err.why : String(err);
  return new KubeceptionError('etcd-snapshot-failed', { what: file, why: `etcdctl snapshot save failed: ${why}`, fix: 'check that the local etcd member is healthy (`systemctl status etcd`) and the healthcheck client certificate is valid (`kubeception certs check-expiration`)', cause: err });
}
