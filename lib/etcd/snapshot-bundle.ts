/**
 * Snapshot bundles on a control-plane node (layout: ./snapshot-meta.ts): save (etcd db, sealed PKI,
 * test restore, metadata, then one rename), list, delete, verify.
 *
 * Host effects of {@link saveSnapshot}: `etcd.snapshots.dir` (0700) and in it
 * `<name>.part/` (0700) renamed to `<name>/` once every part is written (files 0600); the key file
 * on the first save; older bundles of this node beyond `retention` and stale `.part` directories
 * (over an hour old) removed. {@link verifySnapshot} rewrites only `snapshot.json`, and only on
 * success. A failure leaves no partial bundle.
 */
import { createReadStream, promises as fs } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { HostStateError, InputError, SnapshotError } from '../errors.ts';
import { etcdPki } from './config.ts';
import { saveEtcdSnapshot, snapshotSaveFailed, snapshotStatus, snapshotTools, type SnapshotTools } from './snapshot.ts';
import { openPki, sealPki, snapshotKey } from './snapshot-pki.ts';
import { testRestore } from './snapshot-restore.ts';
import { PART_SUFFIX, PARTS, parseMetadata, parseSnapshotName, snapshotName, toPrune, type PartDigest, type SnapshotMetadata, type VerifyResult } from './snapshot-meta.ts';
import type { HostFiles } from '../host/files.ts';
import type { Shell } from '../host/sh.ts';
import type { ResolvedConfig } from '../types.ts';

/** What the bundle functions use: the config and the host backends (never the dry-run ones). */
export interface SnapshotHost {
  config: ResolvedConfig;
  files: HostFiles;
  sh: Shell;
  signal?: AbortSignal;
}

/** A `.part` directory older than this is a save that was killed: the next save removes it. */
const STALE_PART_MS = 3_600_000;

/** sha256 and size of a file, streamed. */
async function digest(path: string): Promise<PartDigest> {
  const h = createHash('sha256');
  let bytes = 0;
  for await (const chunk of createReadStream(path)) {
    h.update(chunk as Buffer);
    bytes += (chunk as Buffer).length;
  }
  return { sha256: h.digest('hex'), bytes };
}

const tools = (sh: Shell) => snapshotTools(sh, 'etcd snapshots are taken and read with it');

/**
 * Takes a snapshot of the local etcd member into a new bundle, verifies it by a test restore, and
 * prunes this node's older ones beyond `retention`.
 * @returns the metadata written, the bundle's path, the names pruned, and whether the key file was created.
 * @throws HostStateError `not-control-plane` (no etcd healthcheck certificate here), `pki-missing`,
 *   `snapshot-key-file`, `etcdctl-missing` — exit 2 before any write; KubeceptionError
 *   `etcd-snapshot-failed` (exit 1) when etcd does not give a snapshot; SnapshotError when the new
 *   snapshot fails its own test restore.
 */
export async function saveSnapshot(h: SnapshotHost, now = new Date()): Promise<{ meta: SnapshotMetadata; path: string; pruned: string[]; keyCreated: boolean }> {
  const s = h.config.etcd.snapshots;
  const pki = etcdPki(h.config);
  if (!(await h.files.exists(pki.healthcheckCert)))
    throw new HostStateError('not-control-plane', { what: pki.healthcheckCert, why: 'this host has no etcd healthcheck client certificate: it is not a control-plane node with a local etcd member', fix: 'run `kubeception etcd snapshot save` on a control-plane node' });
  const t = await tools(h.sh);
  const name = snapshotName(h.config.nodeName, now);
  const path = join(s.dir, name);
  if (await h.files.exists(path)) throw new InputError('snapshot-exists', { what: path, why: 'a snapshot of this node was taken in the same second', fix: 'wait a second and save again' });
  // Every check that can refuse runs before the first write: the key's file, then the PKI to seal.
  const keyExists = await h.files.exists(s.keyFile);
  if (keyExists) await snapshotKey(h.files, s.keyFile, false);
  await h.files.mkdir(s.dir, 0o700);
  const part = `${path}${PART_SUFFIX}`;
  await h.files.mkdir(part, 0o700);
  try {
    const { key, created } = await snapshotKey(h.files, s.keyFile, true);
    const sealed = await sealPki(h.config, h.files, key, name);
    const db = join(part, PARTS.db);
    await saveEtcdSnapshot(h, t.etcdctl, db).catch((err) => Promise.reject(snapshotSaveFailed(db, err)));
    await h.files.write(join(part, PARTS.pki), sealed.sealed, { mode: 0o600 });
    const status = await snapshotStatus(h.sh, t, db);
    const verify = await testRestore({ sh: h.sh, tools: t, etcd: h.config.distro.binaries.etcd, db, scratchParent: s.dir, signal: h.signal });
    const meta: SnapshotMetadata = {
      apiVersion: 'kubeception.io/v1alpha1', kind: 'EtcdSnapshot', name, nodeName: h.config.nodeName, created: now.toISOString(), kubernetesVersion: h.config.kubernetesVersion,
      parts: { db: await digest(db), pki: { ...(await digest(join(part, PARTS.pki))), files: sealed.files } },
      etcd: { revision: status.revision, hash: status.hash, totalKey: status.totalKey },
      verify,
    };
    await h.files.write(join(part, PARTS.meta), `${JSON.stringify(meta, null, 2)}\n`, { mode: 0o600 });
    await h.sh.exec(['mv', '-T', part, path]);
    return { meta, path, pruned: await prune(h), keyCreated: created };
  } catch (err) {
    await h.files.removeTree(part);
    throw err;
  }
}

/** Removes this node's bundles beyond `retention` (oldest first) and stale `.part` directories. @returns the names removed. */
async function prune(h: SnapshotHost): Promise<string[]> {
  const { dir, retention } = h.config.etcd.snapshots;
  const names = await h.files.list(dir);
  const old = toPrune(names, h.config.nodeName, retention);
  for (const n of names.filter((n) => n.endsWith(PART_SUFFIX) && parseSnapshotName(n.slice(0, -PART_SUFFIX.length)))) {
    const st = await fs.stat(join(dir, n)).catch(() => undefined);
    if (st && Date.now() - st.mtimeMs > STALE_PART_MS) old.push(n);
  }
  for (const n of old) await h.files.removeTree(join(dir, n));
  return old;
}

/** One bundle in {@link listSnapshots}: its metadata, or why it cannot be read. */
export type ListedSnapshot = { name: string; path: string; meta: SnapshotMetadata } | { name: string; path: string; error: string };

/** The bundles in the snapshot directory (every node's), oldest first; `.part` directories and other entries left out. */
export async function listSnapshots(h: Pick<SnapshotHost, 'config' | 'files'>): Promise<ListedSnapshot[]> {
  const { dir } = h.config.etcd.snapshots;
  const names = (await h.files.list(dir)).filter((n) => parseSnapshotName(n)).sort((a, b) => parseSnapshotName(a)!.at.getTime() - parseSnapshotName(b)!.at.getTime() || a.localeCompare(b));
  return Promise.all(names.map(async (name) => {
    const path = join(dir, name);
    try {
      return { name, path, meta: parseMetadata(await h.files.read(join(path, PARTS.meta)), join(path, PARTS.meta), name) };
    } catch (err) {
      return { name, path, error: (err as SnapshotError).why ?? String(err) };
    }
  }));
}

/**
 * The bundle directory `name` names, which must exist.
 * @throws InputError `snapshot-unknown` (exit 2) for a name that is not a snapshot's, or one not in the directory.
 */
export async function snapshotPath(h: Pick<SnapshotHost, 'config' | 'files'>, name: string | undefined): Promise<string> {
  const { dir } = h.config.etcd.snapshots;
  const have = (await h.files.list(dir)).filter((n) => parseSnapshotName(n));
  const fix = have.length ? `use one of: ${have.slice(-5).join(', ')} (\`kubeception etcd snapshot list\`)` : 'take one first: `kubeception etcd snapshot save`';
  if (!name || !parseSnapshotName(name)) throw new InputError('snapshot-unknown', { what: name ? `snapshot ${JSON.stringify(name.slice(0, 100))}` : 'command line', why: name ? 'it is not a snapshot name (etcd-snapshot-<node>-<YYYYMMDDTHHMMSSZ>)' : 'a snapshot name is needed', fix });
  if (!have.includes(name)) throw new InputError('snapshot-unknown', { what: join(dir, name), why: 'there is no such snapshot', fix });
  return join(dir, name);
}

/** Removes bundle `name`. @returns its path. @throws InputError `snapshot-unknown` (nothing removed). */
export async function deleteSnapshot(h: Pick<SnapshotHost, 'config' | 'files'>, name: string | undefined): Promise<string> {
  const path = await snapshotPath(h, name);
  await h.files.removeTree(path);
  return path;
}

/** A bundle whose metadata, part digests and PKI part check out ({@link openSnapshot}). */
export interface OpenedSnapshot {
  path: string;
  meta: SnapshotMetadata;
  /** Path of its `etcd.db`. */
  db: string;
  /** The shared PKI files inside `pki.enc`: path under certificatesDir → bytes (keys: never log them). */
  pki: Record<string, Buffer>;
}

/**
 * The read-only half of a verify: the bundle's metadata, each part's sha256 and size, and the PKI
 * part opened with the key. Writes nothing.
 * @throws InputError `snapshot-unknown`; SnapshotError `snapshot-metadata` | `snapshot-corrupt` |
 *   `snapshot-pki` | `snapshot-key-missing`; HostStateError `snapshot-key-file` (all exit 2).
 */
export async function openSnapshot(h: Pick<SnapshotHost, 'config' | 'files'>, name: string | undefined): Promise<OpenedSnapshot> {
  const path = await snapshotPath(h, name);
  const metaFile = join(path, PARTS.meta);
  const meta = parseMetadata(await h.files.read(metaFile), metaFile, name!);
  for (const [part, want] of [[PARTS.db, meta.parts.db], [PARTS.pki, meta.parts.pki]] as const) {
    const file = join(path, part);
    const got = await digest(file).catch(() => undefined);
    if (!got) throw corrupt(name!, file, 'the file is missing');
    if (got.bytes !== want.bytes) throw corrupt(name!, file, `it has ${got.bytes} bytes, ${want.bytes} were recorded: it is truncated or was altered`);
    if (got.sha256 !== want.sha256) throw corrupt(name!, file, `its sha256 ${got.sha256.slice(0, 16)}… differs from the recorded ${want.sha256.slice(0, 16)}…: it was altered`);
  }
  const { key } = await snapshotKey(h.files, h.config.etcd.snapshots.keyFile, false);
  const pki = openPki(key, await fs.readFile(join(path, PARTS.pki)), name!, join(path, PARTS.pki), h.config.etcd.snapshots.keyFile);
  return { path, meta, db: join(path, PARTS.db), pki };
}

const corrupt = (name: string, file: string, why: string) => new SnapshotError('snapshot-corrupt', { what: file, why, fix: `take a new snapshot (\`kubeception etcd snapshot save\`) and delete this one (\`kubeception etcd snapshot delete ${name}\`)` });

/**
 * The test restore of an opened bundle; its revision and live key count must be the recorded ones.
 * Host effects: only the test restore's (lib/etcd/snapshot-restore.ts: a scratch directory and a
 * child etcd, both gone when it returns).
 * @throws SnapshotError `snapshot-corrupt` (exit 2); KubeceptionError `snapshot-test-restore` (exit 1).
 */
export async function testRestoreSnapshot(h: SnapshotHost, s: OpenedSnapshot): Promise<VerifyResult> {
  const t: SnapshotTools = await tools(h.sh);
  const verify = await testRestore({ sh: h.sh, tools: t, etcd: h.config.distro.binaries.etcd, db: s.db, scratchParent: h.config.etcd.snapshots.dir, signal: h.signal });
  if (verify.revision !== s.meta.etcd.revision || verify.keyCount !== s.meta.verify.keyCount)
    throw corrupt(s.meta.name, s.db, `the test restore serves revision ${verify.revision} with ${verify.keyCount} keys; revision ${s.meta.etcd.revision} with ${s.meta.verify.keyCount} keys were recorded`);
  return verify;
}

/**
 * Verifies bundle `name`: {@link openSnapshot}, then {@link testRestoreSnapshot}. Only then is the
 * result recorded in `snapshot.json`.
 * @throws InputError `snapshot-unknown`; SnapshotError `snapshot-metadata` | `snapshot-corrupt` |
 *   `snapshot-pki` | `snapshot-key-missing` (exit 2, naming the file, why and the fix; nothing changed).
 */
export async function verifySnapshot(h: SnapshotHost, name: string | undefined): Promise<SnapshotMetadata> {
  const s = await openSnapshot(h, name);
  const verify = await testRestoreSnapshot(h, s);
  const updated = { ...s.meta, verify };
  await h.files.write(join(s.path, PARTS.meta), `${JSON.stringify(updated, null, 2)}\n`, { mode: 0o600 });
  return updated;
}
