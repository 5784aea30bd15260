/**
 * Stopping and destroying hosts from their on-disk state, so that any process can tear down what another
 * started. Only PIDs the bed recorded (with their start time) and processes in the bed's own cgroups are
 * ever signalled.
 */
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { killCgroupProcesses, removeCgroups } from './cgroups.ts';
import { removeBedNet, removeHostNet } from './net.ts';
import { alive, run, runOk, signal, sleep, waitFor } from './proc.ts';
import { BED_ROOT, diskDir, type HostState, HOSTS_DIR, hostDir, listStates, readState, withLock, writeState } from './state.ts';

const SIGRTMIN_3 = 37;

/**
 * Powers the host off (SIGRTMIN+3 to its systemd; SIGKILL after timeoutMs); keeps its files.
 * `timeoutMs: 0` is a power cut: SIGKILL to the host's PID 1 at once, which the kernel turns into a
 * SIGKILL of every process in the host's PID namespace (containers included), with no clean shutdown.
 */
export async function stopHost(s: HostState, timeoutMs: number): Promise<void> {
  if (alive(s.pid1)) {
    if (timeoutMs > 0) signal(s.pid1, SIGRTMIN_3);
    if (timeoutMs === 0 || !(await waitFor(() => !alive(s.nspawn) && !alive(s.pid1), timeoutMs, 50))) {
      signal(s.pid1, 'SIGKILL'); // kills the host's whole PID namespace
      await waitFor(() => !alive(s.pid1), 5_000, 50);
    }
  }
  signal(s.nspawn, 'SIGKILL');
  await waitFor(() => !alive(s.nspawn), 5_000, 50);
  // Anything left in the host's cgroups (e.g. an exec'd command) was started through the bed; a frozen
  // container is thawed first (a frozen task ignores SIGKILL).
  for (let i = 0; i < 20 && killCgroupProcesses(s.cgroups) > 0; i++) await sleep(100);
  s.nspawn = undefined;
  s.pid1 = undefined;
  if (existsSync(hostDir(s.name))) writeState(s);
}

async function isMounted(path: string): Promise<boolean> {
  return (await run(['mountpoint', '-q', path])).code === 0;
}

/**
 * Removes the host's cgroup trees; while one is busy (EBUSY: a process of it has not exited yet — a
 * SIGKILLed process on a loaded machine, or a frozen one, as seen in a three-lane e2e run), the trees are
 * thawed, their processes killed again and the removal retried, for up to `timeoutMs`.
 * @throws the last EBUSY (or any other error of rmdir) after that.
 */
async function removeCgroupsOnceEmpty(dirs: readonly string[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      removeCgroups(dirs);
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EBUSY' || Date.now() > deadline) throw err;
    }
    killCgroupProcesses(dirs);
    await sleep(200);
  }
}

/** Stops the host and removes its mounts, netns, cgroups and files; the bed network with the last host. */
export async function destroyHost(name: string): Promise<void> {
  const s = readState(name);
  if (s) await stopHost(s, 30_000);
  await withLock(async () => {
    const disk = diskDir(name);
    while (await isMounted(disk)) await runOk(['umount', disk]);
    await removeHostNet(name);
    if (s) await removeCgroupsOnceEmpty(s.cgroups, 30_000);
    rmSync(hostDir(name), { recursive: true, force: true });
    if (listStates().length === 0) {
      await removeBedNet();
      rmSync(BED_ROOT, { recursive: true, force: true, maxRetries: 3 });
    }
  });
}

/** Destroys every host the bed knows of (from any process) and the bed network. Leaves nothing behind. */
export async function destroyAllHosts(): Promise<void> {
  let names: string[] = [];
  try {
    names = readdirSync(HOSTS_DIR);
  } catch {}
  await Promise.all(names.map((n) => destroyHost(n)));
  if (names.length === 0) {
    await withLock(async () => {
      await removeBedNet();
    });
    rmSync(BED_ROOT, { recursive: true, force: true });
  }
}
