/**
 * The pure parts of `kubeception etcd restore` (lib/steps/restore/): the `snapshot restore` command
 * line, the name the old data dir is moved aside to, and which shared PKI files a restore writes.
 * @see https://etcd.io/docs/v3.6/op-guide/recovery/#restoring-a-cluster
 * @see https://kubernetes.io/docs/tasks/administer-cluster/configure-upgrade-etcd/#restoring-an-etcd-cluster
 */
import { compactTime } from './snapshot-meta.ts';
import type { SnapshotTools } from './snapshot.ts';

/**
 * How far a restore on etcd 3.6 moves the revision past the snapshot's (Kubernetes' guidance: "a
 * large number, e.g. 1,000,000,000"): every resourceVersion the apiserver hands out after the
 * restore is newer than any a watcher or informer saw before it, so none of them reads the restored
 * data as older than its cache.
 */
export const BUMP_REVISION = 1_000_000_000;

/** True if `snapshot restore --help` of this tool offers `--bump-revision` and `--mark-compacted` (etcdutl of etcd 3.6). */
export function supportsBumpRevision(helpText: string): boolean {
  return /--bump-revision\b/.test(helpText) && /--mark-compacted\b/.test(helpText);
}

/** The member a restore creates: this node alone, as bootstrap's etcd environment names it (lib/etcd/config.ts). */
export interface RestoreMember {
  /** etcd's `--name`: the node name. */
  name: string;
  /** `https://<advertiseAddress>:2380`. */
  peerUrl: string;
  /** A token of this restore, so the restored cluster gets a new cluster id and no member of the old one can join it. */
  clusterToken: string;
}

/** The cluster token of a restore at `at`: `kubeception-restore-<UTC time>`. */
export const restoreClusterToken = (at: Date) => `kubeception-restore-${compactTime(at)}`;

/**
 * argv of `etcdutl snapshot restore` (etcdctl's on etcd ≤ 3.5) of `db` into `dataDir` (which must not
 * exist) as the one member `m`; with `bump` the revision is moved {@link BUMP_REVISION} ahead and
 * every earlier revision marked compacted (watchers must re-list instead of resuming).
 */
export function restoreArgv(tools: SnapshotTools, db: string, dataDir: string, m: RestoreMember, bump: boolean): string[] {
  return [
    tools.offline.bin, 'snapshot', 'restore', db,
    '--data-dir', dataDir,
    '--name', m.name,
    '--initial-cluster', `${m.name}=${m.peerUrl}`,
    '--initial-advertise-peer-urls', m.peerUrl,
    '--initial-cluster-token', m.clusterToken,
    ...(bump ? ['--bump-revision', String(BUMP_REVISION), '--mark-compacted'] : []),
  ];
}

/** Where the old data dir is kept: `<dataDir>.before-restore-<UTC time>` (beside it, never deleted). */
export const asideName = (dataDir: string, at: Date) => `${dataDir.replace(/\/+$/, '')}.before-restore-${compactTime(at)}`;

/** What a restore does with each shared PKI file ({@link pkiPlan}). */
export interface PkiPlan {
  /** Absent on the host: written from the snapshot. */
  missing: string[];
  /** The same bytes on the host and in the snapshot: kept. */
  same: string[];
  /** Different bytes: the restore is refused (this host keeps its keys). */
  differ: string[];
}

/**
 * Compares this host's shared PKI files with the snapshot's.
 * @param host path under certificatesDir → the file's bytes, or undefined when absent.
 * @param snapshot path under certificatesDir → the bytes in the snapshot's `pki.enc`.
 */
export function pkiPlan(host: Readonly<Record<string, Uint8Array | undefined>>, snapshot: Readonly<Record<string, Uint8Array>>): PkiPlan {
  const plan: PkiPlan = { missing: [], same: [], differ: [] };
  for (const [rel, want] of Object.entries(snapshot)) {
    const have = host[rel];
    if (have === undefined) plan.missing.push(rel);
    else if (Buffer.from(have).equals(Buffer.from(want))) plan.same.push(rel);
    else plan.differ.push(rel);
  }
  return plan;
}

/**
 * Whether the cluster on this host is healthy enough that a restore would throw away live data: the
 * local etcd member answers healthy, or this node's apiserver answers `/readyz`. Pure over the two
 * probe results (undefined: healthy; a string: why not).
 * @returns undefined when neither serves (a restore may go ahead), else what serves.
 */
export function servingParts(probes: { etcd: string | undefined; apiserver: string | undefined }): string | undefined {
  const serving = [probes.etcd === undefined && 'the local etcd member answers healthy', probes.apiserver === undefined && 'the kube-apiserver answers /readyz'].filter(Boolean);
  return serving.length ? serving.join(' and ') : undefined;
}

/** What `restore-preflight` found and later restore steps add (the task's state; no key bytes). */
export interface RestoreFacts {
  /** The snapshot's name, its bundle directory and its `etcd.db`. */
  name: string;
  path: string;
  db: string;
  /** From its metadata: the node it was taken on, when, its revision and live key count. */
  nodeName: string;
  created: string;
  revision: number;
  keyCount: number;
  /** When the restore began (epoch ms): the start of the RTO. */
  startedAtMs: number;
  /** Shared PKI files (under certificatesDir) the host lacks, written from the snapshot by `restore-pki`. */
  pkiMissing: string[];
  /** `--bump-revision`/`--mark-compacted` are used (etcdutl of etcd 3.6). */
  bump: boolean;
  tool: 'etcdutl' | 'etcdctl';
  /** Set by `restore-data-dir`: where the old data dir was moved, if there was one with data. */
  aside?: string;
  /** Set by `restore-done`: start → the self-hosted kube-apiserver serving the restored data, in ms. */
  rtoMs?: number;
}

/**
 * How the config's Kubernetes version relates to the one a snapshot was taken at (`vX.Y.Z`): a
 * restore applies the self-hosted control plane at the config's version to the snapshot's objects, so
 * an older minor would read objects a newer apiserver stored (a downgrade, which Kubernetes does not
 * support). @returns `same`, `differs` (a newer minor, or another patch), `older`, or
 * `unknown` when either is not a version.
 */
export function versionAgainstSnapshot(snapshotVersion: string, configVersion: string): 'same' | 'differs' | 'older' | 'unknown' {
  const parse = (v: string) => /^v(\d+)\.(\d+)\.(\d+)$/.exec(v)?.slice(1).map(Number);
  const [s, c] = [parse(snapshotVersion), parse(configVersion)];
  if (!s || !c) return 'unknown';
  if (snapshotVersion === configVersion) return 'same';
  return c[0]! < s[0]! || (c[0] === s[0] && c[1]! < s[1]!) ? 'older' : 'differs';
}
