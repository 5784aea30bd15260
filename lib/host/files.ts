/**
 * Host file access. Every file kubeception writes goes through a {@link HostFiles}, so `--dry-run`
 * and `plan` can swap in DryRunFiles (lib/host/files-dry-run.ts), which reads the real host but records writes instead of
 * performing them.
 *
 * Host effects of {@link RealFiles}: files written atomically (temp file in the same directory,
 * fsync, rename), with the given mode; parent directories created with mode 0755 (0700 for
 * directories that hold keys, via `dirMode`).
 */
import { constants as fsConstants, promises as fs } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { dirname, join, basename } from 'node:path';
import { randomBytes } from 'node:crypto';
import process from 'node:process';
import { HostStateError } from '../errors.ts';
import type { OwnedRecorder } from './owned-manifest.ts';
import { at, openDirNoFollow, removeTreeNoFollow, type RemoveTreeOptions, type RemoveTreeResult } from './nofollow.ts';

/** Options for {@link HostFiles.write}. */
export interface WriteOptions {
  /** File mode, e.g. 0o600 for keys and kubeconfigs, 0o644 for certificates and manifests. */
  mode: number;
  /** Mode for parent directories that must be created. Default 0o755. */
  dirMode?: number;
  /** User name that must own the file (its primary group too), e.g. `etcd` for its ownership marker. Default: this process's user and group (root): a file another user came to own is given back. */
  owner?: string;
}

/** A record of one write that a {@link DryRunFiles} did not perform. */
export interface PlannedWrite {
  op: 'write' | 'remove' | 'mkdir';
  path: string;
  /** For `remove`: a whole directory tree ({@link HostFiles.removeTree}). */
  tree?: boolean;
  mode?: number;
  bytes?: number;
  /** For `write`: `create` (no file yet), `update` (content differs), `mode` (only the mode differs) or `owner` (only the owner: it goes back to root). */
  change?: 'create' | 'update' | 'mode' | 'owner';
  /** For `write`: lines of the new content, and for `update` the lines added and removed (counts only). */
  lines?: number;
  added?: number;
  removed?: number;
}

/** File operations on the host. Paths are absolute. */
export interface HostFiles {
  /** File content as UTF-8, or `undefined` if the file does not exist. */
  read(path: string): Promise<string | undefined>;
  /** True if a file or directory exists at `path`. */
  exists(path: string): Promise<boolean>;
  /** Entries of a directory (names), or `[]` if it does not exist. */
  list(path: string): Promise<string[]>;
  /**
   * Atomically writes `data` with `opts.mode`; returns false (and writes nothing) if the content and
   * mode already match. Symlinks among the parent directories are followed (an operator's layout),
   * except for a file given to another user (`opts.owner`): then the parent is opened `O_NOFOLLOW`
   * and the temp file, its chown and the rename all go through that descriptor, so a parent swapped
   * for a symlink (by the owner-to-be, who may own the parent) cannot send the file elsewhere.
   * A symlink at `path` itself is replaced by the file, never written through.
   * @throws HostStateError `path-symlink` when `opts.owner` is given and the parent is a symlink.
   */
  write(path: string, data: string | Uint8Array, opts: WriteOptions): Promise<boolean>;
  /**
   * Creates a directory (and parents) with `mode`, owned by `owner` if given. Returns false if it
   * existed with that owner. With `owner`, `path` must not be a symlink: it is opened `O_NOFOLLOW`
   * and changed through the descriptor, so a symlink swapped in cannot redirect the chown. Without
   * `owner`, a symlink to a directory counts as the directory (an operator's layout, e.g. a
   * /var/lib/kubelet on another disk). The mode of an existing directory is left as it is.
   * @throws HostStateError `path-symlink` when `owner` is given and `path` is a symlink (nothing changed).
   */
  mkdir(path: string, mode?: number, owner?: string): Promise<boolean>;
  /** Removes a file (a symlink as the link); returns false if it was absent. Never removes directories. */
  remove(path: string): Promise<boolean>;
  /**
   * Removes a file or a whole directory tree, never following a symlink (see lib/host/nofollow.ts)
   * and never entering a mount point of `opts.mountPoints` or another device (those stay, listed in
   * `kept`). `removed` is false if `path` was absent.
   */
  removeTree(path: string, opts?: RemoveTreeOptions): Promise<RemoveTreeResult>;
  /** True for {@link DryRunFiles}. */
  readonly dryRun: boolean;
}

/** `fs.stat` of `path` (following links), or undefined if nothing is there. @throws any other stat error. */
export async function statOrUndefined(path: string) {
  try {
    return await fs.stat(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

async function lstatOrUndefined(path: string) {
  try {
    return await fs.lstat(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** The error for a path that must not be a symlink (ELOOP/ENOTDIR from an O_NOFOLLOW open); other errors pass through. */
function symlinkRefusal(path: string, err: unknown, why: string): unknown {
  const code = (err as NodeJS.ErrnoException).code;
  if (code !== 'ELOOP' && code !== 'ENOTDIR') return err;
  return new HostStateError('path-symlink', {
    what: path,
    why: `it is ${code === 'ELOOP' ? 'a symlink' : 'not a directory'}, and ${why}: kubeception never follows a link to change an owner (whoever planted it would get the link's target)`,
    fix: `replace ${path} with a real directory (or remove it and let kubeception create it)`,
  });
}

/** Owned by this process's user and group: what a write without `owner` leaves (a no-op only then). */
export const ownedByUs = (st: { uid: number; gid: number }) => !process.getuid || (st.uid === process.getuid() && st.gid === process.getgid!());

/** Content, mode (umask must not loosen or tighten it) and owner on the open temp file, fsync, then rename over `path`. */
async function fillAndRename(fh: FileHandle, tmp: string, path: string, data: string | Uint8Array, mode: number, ids?: { uid: number; gid: number }) {
  try {
    await Promise.all([fh.writeFile(data), fh.chmod(mode), ...(ids ? [fh.chown(ids.uid, ids.gid)] : [])]);
    await fh.sync();
  } finally {
    await fh.close();
  }
  try {
    await fs.rename(tmp, path);
  } catch (err) {
    await fs.rm(tmp, { force: true });
    throw err;
  }
}

/** uid and gid of a user from /etc/passwd. @throws Error naming the user if it does not exist. */
export async function lookupUser(name: string): Promise<{ uid: number; gid: number }> {
  const passwd = await fs.readFile('/etc/passwd', 'utf8');
  const line = passwd.split('\n').find((l) => l.split(':')[0] === name);
  if (!line) throw new Error(`user "${name}" does not exist in /etc/passwd`);
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

function sameBytes(a: Uint8Array, b: string | Uint8Array): boolean {
  const bb = typeof b === 'string' ? Buffer.from(b) : b;
  return Buffer.compare(Buffer.from(a), Buffer.from(bb)) === 0;
}

/** The real host file system. */
export class RealFiles implements HostFiles {
  readonly dryRun: boolean = false;

  /**
   * @param recorder when given (the CLI's real backends), every path this backend creates or
   *   rewrites is recorded in the ownership manifest before the write, and dropped when removed
   *   (lib/host/owned-manifest.ts); `kubeception reset` removes only recorded paths.
   */
  constructor(private readonly recorder?: OwnedRecorder) {}

  /** Records the directories `path` and its missing parents would add (before they are created). */
  private async recordMissingDirs(path: string): Promise<void> {
    if (!this.recorder) return;
    const missing: [string, 'dir'][] = [];
    for (let d = path; d !== dirname(d) && !(await lstatOrUndefined(d)); d = dirname(d)) missing.push([d, 'dir']);
    await this.recorder.add(missing);
  }

  async read(path: string): Promise<string | undefined> {
    try {
      return await fs.readFile(path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  }

  async exists(path: string): Promise<boolean> {
    return (await statOrUndefined(path)) !== undefined;
  }

  async list(path: string): Promise<string[]> {
    try {
      return (await fs.readdir(path)).sort();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
  }

  async write(path: string, data: string | Uint8Array, opts: WriteOptions): Promise<boolean> {
    if (opts.owner) return this.writeOwned(path, data, opts, await lookupUser(opts.owner));
    const st = await statOrUndefined(path);
    if (st?.isFile() && (st.mode & 0o7777) === opts.mode && ownedByUs(st) && sameBytes(await fs.readFile(path), data)) return false;
    await this.recordMissingDirs(dirname(path));
    await this.recorder?.add([[path, 'file']]);
    const tmp = join(dirname(path), `.${basename(path)}.${randomBytes(4).toString('hex')}.tmp`);
    const openTmp = () => fs.open(tmp, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL, opts.mode);
    // The parent directory is created only when the open says it is missing (one round trip less per file).
    const fh = await openTmp().catch(async (err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
      await this.mkdir(dirname(path), opts.dirMode ?? 0o755);
      return openTmp();
    });
    await fillAndRename(fh, tmp, path, data, opts.mode);
    return true;
  }

  /** {@link write} of a file given to `ids`, through the parent's no-follow descriptor. */
  private async writeOwned(path: string, data: string | Uint8Array, opts: WriteOptions, ids: { uid: number; gid: number }): Promise<boolean> {
    const parent = dirname(path);
    const name = basename(path);
    if (!(await lstatOrUndefined(parent))) await this.mkdir(parent, opts.dirMode ?? 0o755);
    const dir = await openDirNoFollow(parent).catch((err) => Promise.reject(symlinkRefusal(parent, err, `a file for ${opts.owner} is written into it`)));
    try {
      const st = await lstatOrUndefined(at(dir, name));
      if (st?.isFile() && st.uid === ids.uid && st.gid === ids.gid && (st.mode & 0o7777) === opts.mode && sameBytes(await fs.readFile(at(dir, name)), data)) return false;
      await this.recorder?.add([[path, 'file']]);
      const tmp = `.${name}.${randomBytes(4).toString('hex')}.tmp`;
      const fh = await fs.open(at(dir, tmp), fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW, opts.mode);
      await fillAndRename(fh, at(dir, tmp), at(dir, name), data, opts.mode, ids);
      return true;
    } finally {
      await dir.close();
    }
  }

  async mkdir(path: string, mode = 0o755, owner?: string): Promise<boolean> {
    const ids = owner ? await lookupUser(owner) : undefined;
    const lst = await lstatOrUndefined(path);
    if (!ids) {
      if (lst && (!lst.isSymbolicLink() || (await statOrUndefined(path))?.isDirectory())) return false;
    } else if (lst?.isSymbolicLink()) throw symlinkRefusal(path, Object.assign(new Error('symlink'), { code: 'ELOOP' }), `it would be given to ${owner}`);
    if (!lst) {
      await this.recordMissingDirs(path);
      await fs.mkdir(path, { recursive: true, mode });
      const fh = await openDirNoFollow(path).catch((err) => Promise.reject(symlinkRefusal(path, err, 'it was just created')));
      try {
        await fh.chmod(mode);
        if (ids) await fh.chown(ids.uid, ids.gid);
      } finally {
        await fh.close();
      }
      return true;
    }
    if (!ids) return false;
    const fh = await openDirNoFollow(path).catch((err) => Promise.reject(symlinkRefusal(path, err, `it would be given to ${owner}`)));
    try {
      const st = await fh.stat();
      if (st.uid === ids.uid && st.gid === ids.gid) return false;
      await fh.chown(ids.uid, ids.gid);
      return true;
    } finally {
      await fh.close();
    }
  }

  async remove(path: string): Promise<boolean> {
    try {
      await fs.unlink(path);
      await this.recorder?.drop(path);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw err;
    }
  }

  async removeTree(path: string, opts?: RemoveTreeOptions): Promise<RemoveTreeResult> {
    const r = await removeTreeNoFollow(path, opts);
    if (r.removed && !r.kept.length) await this.recorder?.drop(path);
    return r;
  }
}
