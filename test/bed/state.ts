/**
 * On-disk state of the bed under /run/kubeception-bed, so that any process (a test, a fresh `host.ts
 * down-all`) can find and tear down what an earlier one started.
 */
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { alive, type OwnedPid, sleep, startTime } from './proc.ts';

export const BED_ROOT = process.env.KUBECEPTION_BED_ROOT ?? '/run/kubeception-bed';
export const HOSTS_DIR = `${BED_ROOT}/hosts`;
const LOCK_DIR = `${BED_ROOT}/lock`;

/** A bind mount into a host: `src` on the machine, `dst` inside the host (default: same path). */
export interface Bind {
  src: string;
  dst?: string;
  readOnly?: boolean;
  /**
   * Mount a writable overlay of `src` instead (a directory): the host sees src's live files and may
   * change them, and its changes stay in the host (kept across stop/start, gone on destroy).
   */
  overlay?: boolean;
}

export interface HostState {
  name: string;
  ip: string;
  hostname: string;
  netns: string;
  veth: string;
  /** Absolute cgroup directories of this host, one per mounted hierarchy. */
  cgroups: string[];
  binds: Bind[];
  /** Bind the cached kubelet and kubeadm to /usr/local/bin at every launch. */
  kubelet: boolean;
  /** Which etcd and containerd the host's units run (test/bed/runtime.ts); absent = `bed` (hosts of older bed code: `debian`). */
  etcd?: 'bed' | 'debian';
  containerd?: 'bed' | 'debian';
  /** `kubic`: a Kubic-like host (test/bed/kubic.ts: read-only /usr, CRI-O, /etc/sysconfig/etcd); absent: the plain Debian host. */
  flavour?: 'kubic';
  /** Pod CIDR of the host's bridge CNI, once prepareKubeletHost has run. */
  podSubnet?: string;
  /** systemd-nspawn (the launcher) and the host's PID 1, while running. */
  nspawn?: OwnedPid;
  pid1?: OwnedPid;
}

export const hostDir = (name: string) => `${HOSTS_DIR}/${name}`;
export const diskDir = (name: string) => `${hostDir(name)}/disk`;

export function readState(name: string): HostState | undefined {
  try {
    return JSON.parse(readFileSync(`${hostDir(name)}/state.json`, 'utf8')) as HostState;
  } catch {
    return undefined;
  }
}

export function writeState(s: HostState): void {
  mkdirSync(hostDir(s.name), { recursive: true });
  const file = `${hostDir(s.name)}/state.json`;
  writeFileSync(`${file}.tmp`, `${JSON.stringify(s, null, 2)}\n`);
  renameSync(`${file}.tmp`, file);
}

export function listStates(): HostState[] {
  let names: string[] = [];
  try {
    names = readdirSync(HOSTS_DIR);
  } catch {}
  return names.map(readState).filter((s): s is HostState => s !== undefined);
}

let chain: Promise<unknown> = Promise.resolve();

/**
 * Runs fn holding the bed lock: an in-process queue plus a directory with the owner's PID, so that
 * address allocation and bed network setup/teardown are serialised between concurrent boots in this and
 * other processes. Not re-entrant: fn must not call withLock.
 */
export function withLock<T>(fn: () => Promise<T>): Promise<T> {
  const next = chain.then(() => withFileLock(fn));
  chain = next.catch(() => {});
  return next;
}

function lockAgeMs(): number {
  try {
    return Date.now() - statSync(LOCK_DIR).mtimeMs;
  } catch {
    return 0;
  }
}

async function withFileLock<T>(fn: () => Promise<T>): Promise<T> {
  mkdirSync(BED_ROOT, { recursive: true });
  const deadline = Date.now() + 120_000;
  for (;;) {
    try {
      mkdirSync(LOCK_DIR);
      writeFileSync(`${LOCK_DIR}/owner`, JSON.stringify({ pid: process.pid, start: startTime(process.pid) }));
      break;
    } catch (e) {
      // The last host's teardown removes BED_ROOT (lock included) while others wait: make it again.
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') {
        mkdirSync(BED_ROOT, { recursive: true });
        continue;
      }
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      let owner: OwnedPid | undefined;
      try {
        owner = JSON.parse(readFileSync(`${LOCK_DIR}/owner`, 'utf8'));
      } catch {}
      // A dead owner, or none written 10 s after the lock was taken (its process died in between).
      if (owner ? !alive(owner) : lockAgeMs() > 10_000) rmSync(LOCK_DIR, { recursive: true, force: true });
      if (Date.now() > deadline) throw new Error(`bed: lock ${LOCK_DIR} held too long (owner ${owner?.pid})`);
      await sleep(50);
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(LOCK_DIR, { recursive: true, force: true });
  }
}
