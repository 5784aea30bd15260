/**
 * The PKI part of an etcd snapshot and the key that encrypts it. A restore needs, besides etcd's
 * data, the cluster's shared keys — the same files kubeadm hands to a joining control-plane node
 * ({@link SHARED_FILES}: cluster CA, service-account key pair, front-proxy CA, etcd CA); every leaf
 * can be re-issued from them. The encryption config of Secrets ({@link OPTIONAL_SHARED_FILES}: the
 * encryption-at-rest key) is in it too when the node has one: without it, the Secrets in the
 * snapshot's data cannot be read.
 *
 * The part (`pki.enc`) is one AES-256-GCM sealed JSON document `{ files: { "<path under
 * certificatesDir>": "<base64>" } }` (lib/util/seal.ts), its additional data binding the bundle's
 * name, so a `pki.enc` moved to another bundle does not open. The key is 32 random bytes, stored as
 * 64 hex digits in `etcd.snapshots.keyFile` (0600, root's, never inside the snapshot directory),
 * created on the first save; it is never printed.
 */
import { promises as fs } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { HostStateError, SnapshotError } from '../errors.ts';
import { OPTIONAL_SHARED_FILES, SHARED_FILES } from '../join/certificate-key.ts';
import { seal, unseal } from '../util/seal.ts';
import type { HostFiles } from '../host/files.ts';
import type { ResolvedConfig } from '../types.ts';

const aad = (name: string) => Buffer.from(`kubeception-snapshot/v1\0${name}`);
const KEY_RE = /^([0-9a-f]{64})\n?$/;

/**
 * Reads the snapshot key, or creates it when absent and `create` is set.
 * Host effects: with `create` and no key file, `keyFile` (0600, its directory 0700 if created).
 * @returns the 32 key bytes, and whether the file was created now.
 * @throws SnapshotError `snapshot-key-missing` (absent, `create` unset); HostStateError
 *   `snapshot-key-file` (a symlink or not a regular file, readable by group or others, not owned by
 *   this user, or not 64 hex digits) — all exit 2, before anything is written.
 */
export async function snapshotKey(files: HostFiles, keyFile: string, create: boolean): Promise<{ key: Buffer; created: boolean }> {
  const st = await fs.lstat(keyFile).catch((err: NodeJS.ErrnoException) => (err.code === 'ENOENT' ? undefined : Promise.reject(err)));
  if (!st) {
    if (!create) throw new SnapshotError('snapshot-key-missing', { what: keyFile, why: 'the snapshot key (etcd.snapshots.keyFile) is not there: the PKI part of a snapshot cannot be opened without it', fix: `copy the key from where you keep it off the host to ${keyFile} (mode 0600), or set etcd.snapshots.keyFile to its path` });
    const key = randomBytes(32);
    await files.write(keyFile, `${key.toString('hex')}\n`, { mode: 0o600, dirMode: 0o700 });
    return { key, created: true };
  }
  const bad = (why: string, fix: string): never => {
    throw new HostStateError('snapshot-key-file', { what: keyFile, why, fix });
  };
  if (!st.isFile()) bad(`it is ${st.isSymbolicLink() ? 'a symlink' : 'not a regular file'}: kubeception reads the snapshot key only from a plain file`, `replace ${keyFile} with the key file itself (mode 0600)`);
  if ((st.mode & 0o077) !== 0) bad(`its mode is ${(st.mode & 0o777).toString(8).padStart(4, '0')}: other users could read the key that decrypts the snapshots' CA keys`, `chmod 0600 ${keyFile}`);
  if (process.getuid && st.uid !== process.getuid()) bad(`it is owned by uid ${st.uid}, not by this user (uid ${process.getuid()})`, `chown root: ${keyFile} (and run kubeception as root)`);
  const m = KEY_RE.exec(await fs.readFile(keyFile, 'utf8'));
  if (!m) return bad('it does not hold a snapshot key (64 hex digits)', `restore the key file from your copy, or move ${keyFile} aside to have a new key created (earlier snapshots then need the old one)`);
  return { key: Buffer.from(m[1]!, 'hex'), created: false };
}

/**
 * Seals this node's shared PKI files (and its encryption config, if any) for the bundle `name`.
 * @returns the sealed bytes and the file names (relative to certificatesDir) inside.
 * @throws HostStateError `pki-missing` (exit 2) naming the first shared file that is absent.
 */
export async function sealPki(config: ResolvedConfig, files: HostFiles, key: Buffer, name: string): Promise<{ sealed: Buffer; files: string[] }> {
  const out: Record<string, string> = {};
  for (const [rel] of SHARED_FILES) {
    const path = join(config.certificatesDir, rel);
    const text = await files.read(path);
    if (text === undefined) throw new HostStateError('pki-missing', { what: path, why: 'a shared key of the cluster is missing on this node: a snapshot without it cannot restore the cluster', fix: 'take the snapshot on a control-plane node that has the full PKI (run `kubeception run bootstrap` here if it is the first one)' });
    out[rel] = Buffer.from(text).toString('base64');
  }
  for (const [rel] of OPTIONAL_SHARED_FILES) {
    const text = await files.read(join(config.certificatesDir, rel));
    if (text !== undefined) out[rel] = Buffer.from(text).toString('base64');
  }
  return { sealed: seal(key, Buffer.from(JSON.stringify({ files: out })), aad(name)), files: Object.keys(out) };
}

/**
 * Opens a bundle's PKI part.
 * @param file the part's path, named in errors.
 * @returns path under certificatesDir → bytes, every {@link SHARED_FILES} entry present, and each
 *   {@link OPTIONAL_SHARED_FILES} entry the part holds.
 * @throws SnapshotError `snapshot-pki` (exit 2): the key does not open it (another key, or the part was
 *   altered or moved from another bundle), or a shared file is missing inside.
 */
export function openPki(key: Buffer, sealed: Buffer, name: string, file: string, keyFile: string): Record<string, Buffer> {
  const plain = unseal(key, sealed, aad(name));
  if (!plain) throw new SnapshotError('snapshot-pki', { what: file, why: `the snapshot key ${keyFile} does not decrypt it: a different key, or the part was altered or belongs to another snapshot`, fix: `put the key this snapshot was taken with at ${keyFile}, or take a new snapshot and delete this one` });
  let doc: { files?: Record<string, string> };
  try {
    doc = JSON.parse(plain.toString('utf8'));
  } catch {
    doc = {};
  }
  const out: Record<string, Buffer> = {};
  for (const [rel] of SHARED_FILES) {
    const v = doc.files?.[rel];
    if (typeof v !== 'string') throw new SnapshotError('snapshot-pki', { what: file, why: `it decrypts but holds no ${rel}`, fix: 'take a new snapshot and delete this one' });
    out[rel] = Buffer.from(v, 'base64');
  }
  for (const [rel] of OPTIONAL_SHARED_FILES) {
    const v = doc.files?.[rel];
    if (typeof v === 'string') out[rel] = Buffer.from(v, 'base64');
  }
  return out;
}
