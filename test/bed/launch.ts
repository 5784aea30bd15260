/**
 * Launching one host: the overlay's upper dir is prepared from the machine side, then a launcher in a
 * private mount namespace mounts the overlay (lower = the machine's `/`, read-only, non-recursive) and
 * execs systemd-nspawn, whose PID 1 is init.sh, which becomes systemd.
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { createHostCgroups, procsFiles } from './cgroups.ts';
import { hostNetns } from './net.ts';
import { children, comm, type OwnedPid, own, runOk, waitFor } from './proc.ts';
import { type Bind, diskDir, type HostState, hostDir, writeState } from './state.ts';
import { INIT, prepareUpper } from './upper.ts';


/** Where an overlay bind (Bind.overlay) is mounted in the launcher's namespace before nspawn binds it. */
const overlayMount = (s: HostState, i: number) => `${hostDir(s.name)}/binds/${i}`;

function nspawnArgs(s: HostState): string[] {
  const bindArg = (b: Bind, i: number) =>
    b.overlay ? `--bind=${overlayMount(s, i)}:${b.dst ?? b.src}` : `--bind${b.readOnly ? '-ro' : ''}=${b.src}:${b.dst ?? b.src}`;
  const args = [
    '--quiet',
    '--register=no',
    '--keep-unit',
    '--kill-signal=SIGRTMIN+3',
    `--directory=${hostDir(s.name)}/root`,
    `--machine=kc-${s.name}`,
    `--hostname=${s.hostname}`,
    `--network-namespace-path=/run/netns/${hostNetns(s.name)}`,
    '--capability=all',
    '--system-call-filter=@keyring',
    '--link-journal=no',
    '--resolv-conf=off',
    '--timezone=off',
    '--console=read-only',
    `--bind=${diskDir(s.name)}/containerd:/var/lib/containerd`,
    `--bind=${diskDir(s.name)}/dbus:/run/dbus`,
  ];
  if (existsSync('/dev/kmsg')) args.push('--bind-ro=/dev/kmsg');
  args.push(...s.binds.map(bindArg));
  return [...args, INIT];
}

// Runs inside `unshare -m --propagation private`: drop other hosts' mounts from this private copy (so it
// pins none of their tmpfs or netns), mount the overlay, then become systemd-nspawn. The machine's file
// systems are not written to.
const LAUNCHER = `set -eu
for f in $KCB_PROCS; do echo $$ > "$f"; done
awk '{ print $2 }' /proc/self/mounts | grep -E '^(/run/netns/|/run/kubeception-bed/hosts/)' | sort -r |
while read -r m; do
  case "$m" in "$KCB_DISK"|"/run/netns/$KCB_NETNS") ;; *) umount -l "$m" 2>/dev/null || true ;; esac
done
# nspawn keeps lock and propagation dirs under /run/systemd/nspawn: keep them in this namespace only.
if [ -d /run/systemd ]; then mount -t tmpfs -o mode=0755 kc-bed-run /run/systemd; fi
mount --bind / "$KCB_LOWER"
mount -o remount,bind,ro "$KCB_LOWER"
mount -t overlay overlay -o "lowerdir=$KCB_LOWER,upperdir=$KCB_DISK/upper,workdir=$KCB_DISK/work" "$KCB_ROOT"
for o in $KCB_OVERLAYS; do # src:index — a writable, throw-away view of src
  src=\${o%:*}; i=\${o##*:}
  mkdir -p "$KCB_DISK/binds/$i/upper" "$KCB_DISK/binds/$i/work"
  mount -t overlay overlay -o "lowerdir=$src,upperdir=$KCB_DISK/binds/$i/upper,workdir=$KCB_DISK/binds/$i/work" "$KCB_BINDS/$i"
done
exec systemd-nspawn "$@"
`;

/** Starts the host's launcher; resolves with nspawn's and the host PID 1's owned PIDs. */
export async function launch(s: HostState, initSource: string): Promise<{ nspawn: OwnedPid; pid1: OwnedPid }> {
  const dir = hostDir(s.name);
  for (const d of ['lower', 'root']) mkdirSync(`${dir}/${d}`, { recursive: true });
  for (const [i, b] of s.binds.entries()) if (b.overlay) mkdirSync(overlayMount(s, i), { recursive: true });
  for (const d of ['upper', 'work', 'containerd', 'dbus']) mkdirSync(`${diskDir(s.name)}/${d}`, { recursive: true });
  await runOk(['rm', '-f', `${diskDir(s.name)}/dbus/system_bus_socket`]);
  await prepareUpper(s, initSource);
  s.cgroups = createHostCgroups(s.name);
  writeState(s);
  const log = openSync(`${dir}/console.log`, 'a');
  const child = spawn('unshare', ['-m', '--propagation', 'private', 'sh', '-c', LAUNCHER, 'launcher', ...nspawnArgs(s)], {
    detached: true,
    stdio: ['ignore', log, log],
    env: {
      PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
      SYSTEMD_NSPAWN_API_VFS_WRITABLE: 'network',
      KCB_PROCS: procsFiles(s.cgroups, 'host').join(' '),
      KCB_DISK: diskDir(s.name),
      KCB_NETNS: hostNetns(s.name),
      KCB_LOWER: `${dir}/lower`,
      KCB_ROOT: `${dir}/root`,
      KCB_BINDS: `${dir}/binds`,
      KCB_OVERLAYS: s.binds.flatMap((b, i) => (b.overlay ? [`${b.src}:${i}`] : [])).join(' '),
    },
  });
  closeSync(log);
  child.unref();
  if (!child.pid) throw new Error(`bed: cannot start the launcher of host ${s.name}`);
  const nspawn = own(child.pid);
  let exited: number | null = null;
  child.on('exit', (code) => {
    exited = code ?? -1;
  });
  const pid1 = await waitFor(() => {
    if (exited !== null) throw new Error(`bed: host ${s.name} exited (${exited}) while booting:\n${consoleTail(s.name)}`);
    return children(nspawn.pid).find((p) => comm(p) === 'systemd');
  }, 30_000, 20);
  if (!pid1) throw new Error(`bed: host ${s.name} has no systemd after 30 s:\n${consoleTail(s.name)}`);
  return { nspawn, pid1: own(pid1) };
}

/** The last lines of the host's console (nspawn's and systemd's output). */
export function consoleTail(name: string, lines = 20): string {
  try {
    return readFileSync(`${hostDir(name)}/console.log`, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no console log)';
  }
}
