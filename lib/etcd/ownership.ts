/**
 * Repairs drift of the etcd data dir's owner and mode (kubespray#980: a root-owned `member/`, a
 * 0755 data dir after a restore or a manual `etcdctl snapshot restore` as root): etcd, running as
 * its own user, then fails with "permission denied". Before etcd starts, every entry under the data
 * dir is given to the etcd user (lchown: symlinks are not followed) and every directory gets mode
 * 0700 (etcd's own `fileutil.PrivateDirMode`). Files keep their mode.
 *
 * Host effects: chown/chmod under `dataDir` only, and only where they differ; none under `--dry-run`.
 * @see https://github.com/kubernetes-sigs/kubespray/issues/980
 */
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { lookupUser } from '../host/files.ts';

/** What {@link repairDataDirOwnership} changed (or would change under dry-run). */
export interface OwnershipRepair {
  /** Paths whose owner was changed. */
  chowned: string[];
  /** Directories whose mode was set to 0700. */
  chmodded: string[];
}

/**
 * Gives `dataDir` and everything below it to `user`, directories mode 0700.
 * A missing `dataDir` repairs nothing. @throws Error if `user` does not exist.
 */
export async function repairDataDirOwnership(dataDir: string, user: string, opts: { dryRun: boolean }): Promise<OwnershipRepair> {
  const { uid, gid } = await lookupUser(user);
  const out: OwnershipRepair = { chowned: [], chmodded: [] };
  const visit = async (path: string): Promise<void> => {
    let st: Awaited<ReturnType<typeof fs.lstat>>;
    try {
      st = await fs.lstat(path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    if (st.uid !== uid || st.gid !== gid) {
      out.chowned.push(path);
      if (!opts.dryRun) await fs.lchown(path, uid, gid);
    }
    if (!st.isDirectory()) return;
    if ((st.mode & 0o777) !== 0o700) {
      out.chmodded.push(path);
      if (!opts.dryRun) await fs.chmod(path, 0o700);
    }
    for (const name of await fs.readdir(path)) await visit(join(path, name));
  };
  await visit(dataDir);
  return out;
}
