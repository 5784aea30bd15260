/**
 * File operations that a local user cannot redirect with a symlink, neither before nor during a walk.
 * Node has no `openat`/`fchownat`/`unlinkat`, so a directory is held open (`O_DIRECTORY|O_NOFOLLOW`)
 * and its entries are reached as `/proc/self/fd/<fd>/<name>`: the kernel resolves that prefix to the
 * directory the descriptor holds, whatever was renamed or swapped at its old path since it was opened.
 * The last component is never followed (`lstat`, `lchown`, `unlink`, `rmdir`; directories are opened
 * with `O_NOFOLLOW` again, so a directory swapped for a symlink between the `lstat` and the `open`
 * fails with `ELOOP` and is treated as the link it now is). Linux with `/proc` mounted.
 *
 * Host effects: those of the function called (chown/chmod of a tree, removal of a tree).
 */
import { constants as C, promises as fs, type Stats } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { join } from 'node:path';

const DIR_FLAGS = C.O_RDONLY | C.O_DIRECTORY | C.O_NOFOLLOW;

/** `path` of an entry `name` inside the directory held by `dir` (see the module doc). */
export const at = (dir: FileHandle, name: string) => `/proc/self/fd/${dir.fd}/${name}`;

/** An `errno`-coded error. */
const code = (err: unknown) => (err as NodeJS.ErrnoException).code;

/**
 * Opens the directory at `path` without following a symlink at its last component.
 * @throws Error with code `ELOOP` (a symlink), `ENOTDIR` (not a directory) or `ENOENT`.
 */
export function openDirNoFollow(path: string): Promise<FileHandle> {
  return fs.open(path, DIR_FLAGS);
}

/** `lstat` of `name` in `dir`, or undefined if it vanished. */
async function lstatAt(dir: FileHandle, name: string): Promise<Stats | undefined> {
  return fs.lstat(at(dir, name)).catch((err) => {
    if (code(err) === 'ENOENT') return undefined;
    throw err;
  });
}

/** Opens the subdirectory `name` of `dir`; undefined if it is (now) a symlink, not a directory, or gone. */
async function openSubdir(dir: FileHandle, name: string): Promise<FileHandle | undefined> {
  return fs.open(at(dir, name), DIR_FLAGS).catch((err) => {
    if (['ELOOP', 'ENOTDIR', 'ENOENT'].includes(code(err) ?? '')) return undefined;
    throw err;
  });
}

/** One entry of {@link walkNoFollow}. */
export interface WalkEntry {
  /** Logical path (root + names), for reports only: never act on it. */
  path: string;
  /** `lstat` of the entry (for a directory: `fstat` of the open descriptor). */
  st: Stats;
  /** A directory's open handle: change it through this (`chown`, `chmod`). */
  dir?: FileHandle;
  /** A non-directory's path relative to its parent's descriptor: act on it with no-follow calls only (`lchown`, `unlink`). */
  at: string;
}

/** What {@link walkNoFollow} calls for each entry. */
export type Visitor = (entry: WalkEntry) => Promise<void>;

/**
 * Visits `root` (opened no-follow: a symlinked root throws `ELOOP`) and every entry below it,
 * parents before children. A directory swapped for a symlink mid-walk is visited as a symlink
 * (never descended). `path` is the logical path (root + names), for reports only.
 */
export async function walkNoFollow(root: string, visit: Visitor): Promise<void> {
  const fh = await openDirNoFollow(root);
  try {
    await walkDir(fh, root, visit);
  } finally {
    await fh.close();
  }
}

async function walkDir(dir: FileHandle, path: string, visit: Visitor): Promise<void> {
  await visit({ path, st: await dir.stat(), dir, at: at(dir, '') });
  for (const name of (await fs.readdir(at(dir, ''))).sort()) {
    const st = await lstatAt(dir, name);
    if (!st) continue;
    if (!st.isDirectory()) {
      await visit({ path: join(path, name), st, at: at(dir, name) });
      continue;
    }
    const sub = await openSubdir(dir, name);
    if (!sub) {
      const now = await lstatAt(dir, name);
      if (now) await visit({ path: join(path, name), st: now, at: at(dir, name) });
      continue;
    }
    try {
      await walkDir(sub, join(path, name), visit);
    } finally {
      await sub.close();
    }
  }
}

/** Options of {@link removeTreeNoFollow}. */
export interface RemoveTreeOptions {
  /**
   * Absolute paths of mount points: a directory at one of them (and a directory on another device
   * than the root's) is not entered and not removed; it is reported in `kept`.
   */
  mountPoints?: ReadonlySet<string>;
}

/** What {@link removeTreeNoFollow} did. */
export interface RemoveTreeResult {
  /** True if anything was removed. */
  removed: boolean;
  /** Mount points (or other devices) found inside the tree and left alone, with their parents. */
  kept: string[];
}

/**
 * `rm -rf` of `path` that never follows a symlink (a symlink at `path` is removed as a link) and
 * stops at mount boundaries: mount points listed in `opts.mountPoints` and directories of another
 * device are left in place, with their parents. A missing `path` removes nothing.
 * @throws Error (errno) if `path` is itself a mount point, or a removal fails for another reason than ENOENT.
 */
export async function removeTreeNoFollow(path: string, opts: RemoveTreeOptions = {}): Promise<RemoveTreeResult> {
  const mounts = opts.mountPoints ?? new Set<string>();
  const st = await fs.lstat(path).catch((err) => (code(err) === 'ENOENT' ? undefined : Promise.reject(err)));
  if (!st) return { removed: false, kept: [] };
  if (!st.isDirectory()) {
    await fs.unlink(path).catch((err) => (code(err) === 'ENOENT' ? undefined : Promise.reject(err)));
    return { removed: true, kept: [] };
  }
  if (mounts.has(path)) throw Object.assign(new Error(`${path} is a mount point: not removed`), { code: 'EBUSY' });
  const kept: string[] = [];
  let fh: FileHandle;
  try {
    fh = await openDirNoFollow(path);
  } catch (err) {
    if (code(err) !== 'ELOOP' && code(err) !== 'ENOTDIR') throw err;
    await fs.unlink(path); // swapped for a symlink or a file since the lstat: remove that instead
    return { removed: true, kept };
  }
  try {
    if (await emptyDir(fh, path, st.dev, mounts, kept)) await fs.rmdir(path).catch((err) => (code(err) === 'ENOENT' ? undefined : Promise.reject(err)));
  } finally {
    await fh.close();
  }
  return { removed: true, kept };
}

/** Removes everything in `dir` but mount points; true if it is empty afterwards. */
async function emptyDir(dir: FileHandle, path: string, dev: number, mounts: ReadonlySet<string>, kept: string[]): Promise<boolean> {
  let empty = true;
  for (const name of await fs.readdir(at(dir, ''))) {
    const child = join(path, name);
    const st = await lstatAt(dir, name);
    if (!st) continue;
    if (!st.isDirectory()) {
      await fs.unlink(at(dir, name)).catch((err) => (code(err) === 'ENOENT' ? undefined : Promise.reject(err)));
      continue;
    }
    if (mounts.has(child) || st.dev !== dev) {
      kept.push(child);
      empty = false;
      continue;
    }
    const sub = await openSubdir(dir, name);
    if (!sub) {
      await fs.unlink(at(dir, name)).catch((err) => (code(err) === 'ENOENT' ? undefined : Promise.reject(err)));
      continue;
    }
    let subEmpty: boolean;
    try {
      subEmpty = await emptyDir(sub, child, dev, mounts, kept);
    } finally {
      await sub.close();
    }
    if (subEmpty) await fs.rmdir(at(dir, name)).catch((err) => (code(err) === 'ENOENT' ? undefined : Promise.reject(err)));
    else empty = false;
  }
  return empty;
}
