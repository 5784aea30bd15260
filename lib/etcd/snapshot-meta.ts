/**
 * The pure parts of a snapshot bundle (lib/etcd/snapshot-bundle.ts): its name, which ones a save
 * prunes, and its metadata file.
 *
 * A bundle is a directory `<snapshots dir>/etcd-snapshot-<nodeName>-<YYYYMMDDTHHMMSSZ>` (UTC, k3s's
 * `etcd-snapshot-<node>-<time>` naming) holding:
 * - `etcd.db` — `etcdctl snapshot save` of the local member (0600);
 * - `pki.enc` — the PKI a restore needs besides etcd, AES-256-GCM under the snapshot key (0600);
 * - `snapshot.json` — {@link SnapshotMetadata} (0600).
 * A directory being written is named `<name>.part` and renamed when complete.
 */
import { SnapshotError } from '../errors.ts';

/** File names inside a bundle. */
export const PARTS = { db: 'etcd.db', pki: 'pki.enc', meta: 'snapshot.json' } as const;
/** Suffix of a bundle being written. */
export const PART_SUFFIX = '.part';

const NAME_RE = /^etcd-snapshot-([a-z0-9]([-a-z0-9.]*[a-z0-9])?)-(\d{8}T\d{6}Z)$/;

/** `20261203T141502Z` for an instant (UTC, seconds). */
export const compactTime = (d: Date) => d.toISOString().replace(/\.\d{3}Z$/, 'Z').replace(/[-:]/g, '');

/** A bundle's name: `etcd-snapshot-<nodeName>-<UTC time>`, e.g. `etcd-snapshot-node-a-20261203T141502Z`. */
export const snapshotName = (nodeName: string, at: Date) => `etcd-snapshot-${nodeName}-${compactTime(at)}`;

/** The node and instant of a bundle's name, or undefined when `name` is not one (`.part`, other files). */
export function parseSnapshotName(name: string): { nodeName: string; at: Date } | undefined {
  const m = NAME_RE.exec(name);
  if (!m) return undefined;
  const t = m[3]!;
  const at = new Date(`${t.slice(0, 4)}-${t.slice(4, 6)}-${t.slice(6, 8)}T${t.slice(9, 11)}:${t.slice(11, 13)}:${t.slice(13, 15)}Z`);
  return Number.isNaN(at.getTime()) || compactTime(at) !== t ? undefined : { nodeName: m[1]!, at };
}

/**
 * The bundles a save removes: of `nodeName`'s bundles among `names` (other nodes' and other entries
 * are never pruned), all but the newest `retention`.
 * @returns names, oldest first.
 */
export function toPrune(names: readonly string[], nodeName: string, retention: number): string[] {
  const mine = names.map((n) => ({ n, p: parseSnapshotName(n) })).filter((x) => x.p?.nodeName === nodeName).sort((a, b) => a.p!.at.getTime() - b.p!.at.getTime() || a.n.localeCompare(b.n));
  return mine.slice(0, Math.max(0, mine.length - retention)).map((x) => x.n);
}

/** sha256 (hex) and size in bytes of one part. */
export interface PartDigest {
  sha256: string;
  bytes: number;
}

/** What a test restore read from a throw-away etcd (lib/etcd/snapshot-restore.ts). */
export interface VerifyResult {
  /** RFC 3339 instant of the check. */
  at: string;
  /** The tool that restored the data dir. */
  tool: 'etcdutl' | 'etcdctl';
  /** Live keys the restored etcd serves, and its revision. */
  keyCount: number;
  revision: number;
  /** Restore, start, read and stop, in milliseconds. */
  durationMs: number;
}

/** `snapshot.json`. */
export interface SnapshotMetadata {
  apiVersion: 'kubeception.io/v1alpha1';
  kind: 'EtcdSnapshot';
  name: string;
  nodeName: string;
  /** RFC 3339 instant the save began. */
  created: string;
  kubernetesVersion: string;
  parts: { db: PartDigest; pki: PartDigest & { files: string[] } };
  /** From `snapshot status`: the store's revision and etcd's hash, and keys over every revision. */
  etcd: { revision: number; hash: number; totalKey: number };
  /** The last successful test restore (at save, then by each `verify`). */
  verify: VerifyResult;
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isNum = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v >= 0;
const isDigest = (v: unknown): v is PartDigest => isObj(v) && typeof v.sha256 === 'string' && /^[0-9a-f]{64}$/.test(v.sha256) && isNum(v.bytes);

/**
 * Parses a bundle's `snapshot.json`.
 * @param file named in errors. @param name the bundle's directory name, which the metadata must carry.
 * @throws SnapshotError `snapshot-metadata` naming `file` and the first field that is missing or wrong.
 */
export function parseMetadata(text: string | undefined, file: string, name: string): SnapshotMetadata {
  const fail = (why: string): never => {
    throw new SnapshotError('snapshot-metadata', { what: file, why, fix: 'the bundle is incomplete or was altered: take a new snapshot (`kubeception etcd snapshot save`) and delete this one (`kubeception etcd snapshot delete NAME`)' });
  };
  if (text === undefined) return fail('it is missing');
  let j: unknown;
  try {
    j = JSON.parse(text);
  } catch {
    return fail('it is not valid JSON (a write cut off?)');
  }
  if (!isObj(j) || j.kind !== 'EtcdSnapshot' || j.apiVersion !== 'kubeception.io/v1alpha1') return fail('it is not an EtcdSnapshot (kind/apiVersion)');
  if (j.name !== name) return fail(`it names ${JSON.stringify(j.name)}, not its directory ${name}`);
  for (const k of ['nodeName', 'created', 'kubernetesVersion'] as const) if (typeof j[k] !== 'string') fail(`${k} is missing`);
  const parts = j.parts;
  if (!isObj(parts) || !isDigest(parts.db)) return fail('parts.db (sha256, bytes) is missing or malformed');
  if (!isDigest(parts.pki) || !Array.isArray((parts.pki as { files?: unknown }).files)) return fail('parts.pki (sha256, bytes, files) is missing or malformed');
  const e = j.etcd;
  if (!isObj(e) || !isNum(e.revision) || !isNum(e.hash) || !isNum(e.totalKey)) return fail('etcd (revision, hash, totalKey) is missing or malformed');
  const v = j.verify;
  if (!isObj(v) || typeof v.at !== 'string' || !isNum(v.keyCount) || !isNum(v.revision) || !isNum(v.durationMs) || (v.tool !== 'etcdutl' && v.tool !== 'etcdctl')) return fail('verify (at, tool, keyCount, revision, durationMs) is missing or malformed');
  return j as unknown as SnapshotMetadata;
}
