/**
 * The ownership manifest: every path kubeception creates or rewrites on a host, recorded *before* the
 * write (so a run killed between the two leaves a recorded path, never an unrecorded file of ours).
 * `kubeception reset` removes only what this manifest names (plus what the cluster's components
 * created, by rules tied to this cluster: lib/reset/owned.ts); anything else is foreign and kept.
 * kubeadm has no such record and removes by path; a path kubeadm (or an operator) wrote at the same
 * place is therefore never taken for ours.
 *
 * Format (`/var/lib/kubeception/owned.json`, 0600 in a 0700 directory, written atomically: temp file,
 * fsync, rename): `{ apiVersion, kind: 'OwnedPaths', paths: { "<absolute path>": "file" | "dir" } }`.
 * Paths under kubeception's own state directory (`/var/lib/kubeception`) are not recorded: that
 * directory is kubeception's by definition.
 *
 * Host effects: the manifest file, rewritten when a path not yet recorded is added or one is dropped.
 */
import { constants as C, promises as fs } from 'node:fs';
import { dirname, join, basename } from 'node:path';
import { randomBytes } from 'node:crypto';

/** Where the manifest lives. */
export const OWNED_MANIFEST = '/var/lib/kubeception/owned.json';
/** kubeception's state directory: never recorded (it is all kubeception's). */
export const STATE_DIR = '/var/lib/kubeception';

/** What a recorded path is: a file kubeception wrote, or a directory it created. */
export type OwnedKind = 'file' | 'dir';

/** The manifest document. */
export interface OwnedManifest {
  apiVersion: 'kubeception.io/v1alpha1';
  kind: 'OwnedPaths';
  paths: Record<string, OwnedKind>;
}

/** Parses a manifest's text; undefined for no text. @throws Error naming `file` for text that is not a manifest. */
export function parseOwnedManifest(text: string | undefined, file = OWNED_MANIFEST): Map<string, OwnedKind> | undefined {
  if (text === undefined) return undefined;
  let doc: Partial<OwnedManifest>;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new Error(`${file} is not valid JSON`);
  }
  if (doc.kind !== 'OwnedPaths' || typeof doc.paths !== 'object' || doc.paths === null) throw new Error(`${file} is not an OwnedPaths manifest`);
  return new Map(Object.entries(doc.paths).filter(([p, k]) => p.startsWith('/') && (k === 'file' || k === 'dir')));
}

/** Renders the manifest (paths sorted, so equal sets give equal bytes). */
export function renderOwnedManifest(paths: ReadonlyMap<string, OwnedKind>): string {
  const sorted = Object.fromEntries([...paths].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  return `${JSON.stringify({ apiVersion: 'kubeception.io/v1alpha1', kind: 'OwnedPaths', paths: sorted } satisfies OwnedManifest, null, 1)}\n`;
}

/** Records paths into the manifest at `file`; calls are serialized within the process. */
export class OwnedRecorder {
  private paths?: Map<string, OwnedKind>;
  private chain: Promise<unknown> = Promise.resolve();

  constructor(readonly file: string = OWNED_MANIFEST, readonly stateDir: string = STATE_DIR) {}

  /** Adds `entries` (written to disk before this resolves) unless all are recorded already. */
  add(entries: [string, OwnedKind][]): Promise<void> {
    const wanted = entries.filter(([p]) => p !== this.stateDir && !p.startsWith(`${this.stateDir}/`));
    if (!wanted.length) return Promise.resolve();
    return this.serial(async (paths) => {
      const fresh = wanted.filter(([p, k]) => paths.get(p) !== k);
      for (const [p, k] of fresh) paths.set(p, k);
      return fresh.length > 0;
    });
  }

  /** Drops `path` and everything recorded below it (kubeception removed them itself). */
  drop(path: string): Promise<void> {
    return this.serial(async (paths) => {
      let changed = false;
      for (const p of [...paths.keys()]) if (p === path || p.startsWith(`${path}/`)) changed = paths.delete(p) || changed;
      return changed;
    });
  }

  /** The recorded paths (read from disk on first use). */
  async list(): Promise<Map<string, OwnedKind>> {
    await this.serial(async () => false);
    return new Map(this.paths);
  }

  private serial(change: (paths: Map<string, OwnedKind>) => Promise<boolean>): Promise<void> {
    const next = this.chain.then(async () => {
      this.paths ??= parseOwnedManifest(await fs.readFile(this.file, 'utf8').catch((e) => (e.code === 'ENOENT' ? undefined : Promise.reject(e))), this.file) ?? new Map();
      if (await change(this.paths)) await writeAtomic(this.file, renderOwnedManifest(this.paths));
    });
    this.chain = next.catch(() => undefined);
    return next;
  }
}

/** Temp file (O_EXCL, 0600) in the same directory (created 0700), fsync, rename. */
async function writeAtomic(file: string, text: string): Promise<void> {
  await fs.mkdir(dirname(file), { recursive: true, mode: 0o700 });
  const tmp = join(dirname(file), `.${basename(file)}.${randomBytes(4).toString('hex')}.tmp`);
  const fh = await fs.open(tmp, C.O_WRONLY | C.O_CREAT | C.O_EXCL | C.O_NOFOLLOW, 0o600);
  try {
    await fh.writeFile(text);
    await fh.chmod(0o600);
    await fh.sync();
  } finally {
    await fh.close();
  }
  await fs.rename(tmp, file).catch(async (err) => {
    await fs.rm(tmp, { force: true });
    throw err;
  });
}
