/**
 * Files kubeception runs code from — a site's `kubeception.config.ts` and `tasks/<task>.ts` — must be
 * as safe as kubeception itself: it imports them, usually as root. As git refuses a repository owned
 * by someone else (`safe.directory`) and OpenSSH a key file in a directory others can write
 * (`StrictModes`), the file and every directory on its path — the path as given and, after symlinks,
 * the real one — must be owned by root or by the user running kubeception (under sudo, also the user
 * who invoked sudo: `SUDO_UID`) and not be writable by group or others. A world-writable directory
 * with the sticky bit that root owns (`/tmp`) is accepted: there only an entry's owner may rename or
 * replace it, and its entries are checked in turn.
 *
 * Reads only (lstat, stat, realpath, /etc/passwd for user names in messages).
 * @see https://git-scm.com/docs/git-config#Documentation/git-config.txt-safedirectory
 */
import { promises as fs, readFileSync, type Stats } from 'node:fs';
import { dirname, resolve } from 'node:path';
import process from 'node:process';
import { HostStateError } from './errors.ts';

/** uids whose files kubeception may run: root, the effective user, and under sudo (as root) the user who called it. */
export function trustedOwners(env: Record<string, string | undefined> = process.env): number[] {
  const euid = process.geteuid?.() ?? 0;
  const sudo = euid === 0 && /^\d+$/.test(env.SUDO_UID ?? '') ? [Number(env.SUDO_UID)] : [];
  return [...new Set([0, euid, ...sudo])];
}

/** `/`, `/a`, `/a/b`, … `path` (absolute, normalised). */
function chain(path: string): string[] {
  const out: string[] = [];
  for (let p = path; ; p = dirname(p)) {
    out.unshift(p);
    if (dirname(p) === p) return out;
  }
}

let users: Map<number, string> | undefined;
/** `uid 1000 (alice)`, from /etc/passwd when it names the uid. */
function userName(uid: number): string {
  users ??= new Map(
    (() => {
      try {
        return readFileSync('/etc/passwd', 'utf8').split('\n').map((l) => l.split(':')).filter((f) => f.length > 2 && /^\d+$/.test(f[2]!)).map((f) => [Number(f[2]), f[0]!] as [number, string]);
      } catch {
        return [];
      }
    })(),
  );
  const name = users.get(uid);
  return name ? `uid ${uid} (${name})` : `uid ${uid}`;
}

/** Why `st` (at `path`) is not safe, with the fix; undefined if it is. */
function unsafe(path: string, st: Stats, owners: readonly number[]): { why: string; fix: string } | undefined {
  if (!owners.includes(st.uid))
    return {
      why: `${path} is owned by ${userName(st.uid)}, not by root${owners.length > 1 ? ` or ${owners.filter((u) => u !== 0).map(userName).join(' or ')}` : ''}: that user could change the code kubeception would run`,
      fix: `chown root ${path} (or use a ${st.isDirectory() ? 'directory' : 'file'} only root can write)`,
    };
  if (st.isSymbolicLink() || !(st.mode & 0o022)) return undefined;
  if (st.isDirectory() && st.mode & 0o1000 && st.uid === 0) return undefined;
  const who = st.mode & 0o020 && st.mode & 0o002 ? 'group and others' : st.mode & 0o020 ? 'its group' : 'others';
  return {
    why: `${path} is writable by ${who} (mode ${(st.mode & 0o7777).toString(8).padStart(4, '0')}): any such user could change the code kubeception would run`,
    fix: `chmod go-w ${path} (or use a ${st.isDirectory() ? 'directory' : 'file'} only root can write)`,
  };
}

/**
 * Refuses to run code from `file` unless it and every directory on its path are safe (see the module).
 * @param role what the file is, for the message: `config file`, `task file`.
 * @param otherwise the way around it, for the fix (e.g. `pass --config FILE in a directory only root can write`).
 * @throws HostStateError `untrusted-file` (exit 2) naming the file, the unsafe path, why, and the fix.
 */
export async function assertTrustedFile(file: string, role: string, otherwise: string, owners: readonly number[] = trustedOwners()): Promise<void> {
  const given = resolve(file);
  const real = await fs.realpath(given).catch(() => given);
  const checks: [string, () => Promise<Stats>][] = [
    ...chain(given).map((p) => [p, () => fs.lstat(p)] as [string, () => Promise<Stats>]),
    ...(real === given ? [] : chain(real).map((p) => [p, () => fs.stat(p)] as [string, () => Promise<Stats>])),
  ];
  for (const [path, stat] of checks) {
    const st = await stat().catch(() => undefined);
    if (!st) continue; // gone or unreadable: the import that follows reports it
    const bad = unsafe(path, st, owners);
    if (bad)
      throw new HostStateError('untrusted-file', {
        what: `${role} ${given}${real !== given ? ` (${real})` : ''}`,
        why: `kubeception would run it as ${userName(process.geteuid?.() ?? 0)}, but ${bad.why}`,
        fix: `${bad.fix}; or ${otherwise}`,
      });
  }
}

/** True if `a` and `b` are the same file (after symlinks); false if either is missing. */
export async function sameFile(a: string, b: string): Promise<boolean> {
  const [x, y] = await Promise.all([a, b].map((p) => fs.realpath(p).catch(() => undefined)));
  return x !== undefined && x === y;
}
