/**
 * Repairs drift of the etcd data dir's owner and mode (kubespray#980: a root-owned `member/`, a
 * 0755 data dir after a restore or a manual `etcdctl snapshot restore` as root): etcd, running as
 * its own user, then fails with "permission denied". Before etcd starts, every entry under the data
 * dir is given to the etcd user and every directory gets mode 0700 (etcd's own
 * `fileutil.PrivateDirMode`). Files keep their mode.
 *
 * The etcd user owns what is inside the data dir (and, on Debian, its parent `/var/lib/etcd`), so it
 * can rename and swap entries while this runs as root. Nothing here can be redirected by that: the
 * walk holds each directory open (`O_NOFOLLOW`) and changes it through the descriptor, reaches its
 * entries relative to that descriptor, and `lchown`s the rest (lib/host/nofollow.ts). A symlinked
 * data dir is refused ({@link checkDataDirPath}), as is one whose path the etcd user could redirect
 * above the data dir itself. A non-directory with more than one link that is not already the etcd
 * user's is left alone (a hard link planted to a root file must not give that file away).
 *
 * Host effects: chown/chmod under `dataDir` only, and only where they differ; none under `--dry-run`.
 * @see https://github.com/kubernetes-sigs/kubespray/issues/980
 */
import { promises as fs, type Stats } from 'node:fs';
import { dirname } from 'node:path';
import { HostStateError } from '../errors.ts';
import { lookupUser } from '../host/files.ts';
import { walkNoFollow } from '../host/nofollow.ts';

/** What {@link repairDataDirOwnership} changed (or would change under dry-run). */
export interface OwnershipRepair {
  /** Paths whose owner was changed. */
  chowned: string[];
  /** Directories whose mode was set to 0700. */
  chmodded: string[];
  /** Entries left alone: hard links to files of another owner. */
  skipped: string[];
}

const lstatOrUndefined = (p: string) => fs.lstat(p).catch((err) => ((err as NodeJS.ErrnoException).code === 'ENOENT' ? undefined : Promise.reject(err)));

/** True if user `ids` may create or rename entries in a directory with these stats (owner, group, other bits; ACLs not read). */
export function writableBy(st: Pick<Stats, 'uid' | 'gid' | 'mode'>, ids: { uid: number; gid: number }): boolean {
  return st.uid === ids.uid || (st.gid === ids.gid && (st.mode & 0o020) !== 0) || (st.mode & 0o002) !== 0;
}

/**
 * Refuses a data dir path the etcd user could redirect: `dataDir` itself a symlink or not a
 * directory, or an ancestor above its parent that the etcd user can write to (then it could swap
 * the data dir's parent for a symlink). The parent itself may be the etcd user's (Debian's
 * `/var/lib/etcd` is its home): the data dir is opened `O_NOFOLLOW`, so swapping the data dir is
 * caught. Missing components are fine (created root-owned). Read-only.
 * @returns the error to throw, or undefined.
 */
export async function checkDataDirPath(dataDir: string, user: string): Promise<HostStateError | undefined> {
  const ids = await lookupUser(user);
  const st = await lstatOrUndefined(dataDir);
  if (st?.isSymbolicLink())
    return new HostStateError('etcd-data-dir-symlink', {
      what: `etcd data dir ${dataDir}`,
      why: `it is a symlink (to ${await fs.readlink(dataDir).catch(() => '?')}); kubeception gives the data dir to the ${user} user and never follows a link to do so (whoever planted it would get the link's target)`,
      fix: `set etcd.dataDir to the real directory, or remove the link (rm ${dataDir}) and let kubeception create the directory`,
    });
  if (st && !st.isDirectory())
    return new HostStateError('etcd-data-dir-not-dir', { what: `etcd data dir ${dataDir}`, why: 'it exists and is not a directory', fix: `move ${dataDir} aside, or set etcd.dataDir to a directory` });
  const parent = dirname(dataDir);
  // Each ancestor `a` above the parent, with its child `c` on the way down: the etcd user could swap `c` if it can write `a`
  // (in a sticky directory such as /tmp only when `c` is missing or its own).
  for (let c = parent, a = dirname(parent); c !== a; c = a, a = dirname(a)) {
    const ast = await fs.stat(a).catch(() => undefined);
    if (!ast || !writableBy(ast, ids)) continue;
    const cst = await lstatOrUndefined(c);
    if ((ast.mode & 0o1000) !== 0 && cst && cst.uid !== ids.uid) continue;
    return new HostStateError('etcd-data-dir-parent', {
      what: `etcd data dir ${dataDir}`,
      why: `its ancestor ${a} is writable by the ${user} user (owner ${ast.uid}:${ast.gid}, mode ${(ast.mode & 0o7777).toString(8)}), who could swap ${c} for a symlink and have root give it the link's target`,
      fix: `put the data dir directly below a directory only root can write (e.g. etcd.dataDir: /var/lib/etcd/default), or chown root ${a} and chmod go-w ${a}`,
    });
  }
  return undefined;
}

/**
 * Gives `dataDir` and everything below it to `user`, directories mode 0700.
 * A missing `dataDir` repairs nothing.
 * @throws HostStateError `etcd-data-dir-symlink` if `dataDir` is a symlink; Error if `user` does not exist.
 */
export async function repairDataDirOwnership(dataDir: string, user: string, opts: { dryRun: boolean }): Promise<OwnershipRepair> {
  const { uid, gid } = await lookupUser(user);
  const out: OwnershipRepair = { chowned: [], chmodded: [], skipped: [] };
  const top = await lstatOrUndefined(dataDir);
  if (!top) return out;
  const refused = await checkDataDirPath(dataDir, user);
  if (refused) throw refused;
  await walkNoFollow(dataDir, async ({ path, st, dir, at }) => {
    if (st.uid === uid && st.gid === gid && (!dir || (st.mode & 0o777) === 0o700)) return;
    if (!dir && st.nlink > 1 && !st.isSymbolicLink()) {
      out.skipped.push(path);
      return;
    }
    if (st.uid !== uid || st.gid !== gid) {
      out.chowned.push(path);
      if (!opts.dryRun) await (dir ? dir.chown(uid, gid) : fs.lchown(at, uid, gid));
    }
    if (dir && (st.mode & 0o777) !== 0o700) {
      out.chmodded.push(path);
      if (!opts.dryRun) await dir.chmod(0o700);
    }
  });
  return out;
}
