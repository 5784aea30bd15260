/**
 * Launching one host: the overlay's upper dir is prepared from the machine side, then a launcher in a
 * private mount namespace mounts the overlay (lower = the machine's `/`, read-only, non-recursive) and
 * execs systemd-nspawn, whose PID 1 is init.sh, which becomes systemd.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  copyFileSync,
  type Dirent,
  existsSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname } from 'node:path';
import { createHostCgroups, procsFiles } from './cgroups.ts';
import { hostNetns } from './net.ts';
import { children, comm, type OwnedPid, own, runOk, waitFor } from './proc.ts';
import { type Bind, diskDir, type HostState, hostDir, writeState } from './state.ts';

const INIT = '/usr/local/lib/kubeception-bed/init';

/** Units enabled on the machine that a bed host has no use for (or cannot run in a container). */
export const MASKED_UNITS = [
  'postgresql.service',
  'postgresql@.service',
  'e2scrub_reap.service',
  'e2scrub_all.timer',
  'systemd-timesyncd.service',
  'systemd-pstore.service',
  'apt-daily.timer',
  'apt-daily-upgrade.timer',
  'dpkg-db-backup.timer',
  'fstrim.timer',
  'man-db.timer',
  'console-getty.service',
];

/**
 * Enablement links of the machine that must not act in a host: the stock etcd unit would start with its
 * default data dir, and containerd must not start before the bed has configured it (prepareKubeletHost
 * enables it). The unit files stay, so kubeception can configure and start them.
 */
export const DISABLED_UNITS = ['etcd', 'containerd'];

/** The machine's enablement links of DISABLED_UNITS: systemd's (.wants links and aliases such as
 * etcd2.service) and SysV rc links, all of which `systemctl is-enabled` reports. */
function disabledLinks(): string[] {
  const units = new Set(DISABLED_UNITS.map((u) => `${u}.service`));
  const links: string[] = [];
  const walk = (dir: string) => {
    let entries: Dirent[] = [];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {}
    for (const e of entries) {
      const p = `${dir}/${e.name}`;
      if (e.isDirectory()) walk(p);
      else if (e.isSymbolicLink() && units.has(basename(readlinkSync(p)))) links.push(p);
    }
  };
  walk('/etc/systemd/system');
  for (const rc of ['0', '1', '2', '3', '4', '5', '6', 'S']) {
    let entries: string[] = [];
    try {
      entries = readdirSync(`/etc/rc${rc}.d`);
    } catch {}
    for (const e of entries) if (DISABLED_UNITS.includes(e.replace(/^[SK]\d\d/, ''))) links.push(`/etc/rc${rc}.d/${e}`);
  }
  return links;
}

/** Values the kubelet insists on; the init shadows any that differ on the VM (see init.sh). */
export const KUBELET_SYSCTLS: Record<string, string> = {
  'vm.overcommit_memory': '1',
  'vm.panic_on_oom': '0',
  'kernel.panic': '10',
  'kernel.panic_on_oops': '1',
  'kernel.keys.root_maxkeys': '1000000',
  'kernel.keys.root_maxbytes': '25000000',
};

function put(upper: string, path: string, content: string, mode = 0o644): void {
  mkdirSync(dirname(`${upper}${path}`), { recursive: true });
  writeFileSync(`${upper}${path}`, content, { mode });
}

const present = (p: string) => {
  try {
    lstatSync(p);
    return true;
  } catch {
    return false;
  }
};

/** Writes the host's identity and bed files into the overlay's upper dir (overlay not mounted). */
export async function prepareUpper(s: HostState, initSource: string): Promise<void> {
  const upper = `${diskDir(s.name)}/upper`;
  const firstBoot = !existsSync(`${diskDir(s.name)}/prepared`);
  if (firstBoot) {
    put(upper, '/etc/hostname', `${s.hostname}\n`);
    const names = s.hostname === s.name ? s.hostname : `${s.hostname} ${s.name}`;
    put(upper, '/etc/hosts', `127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n${s.ip}\t${names}\n`);
    put(upper, '/etc/machine-id', `${randomBytes(16).toString('hex')}\n`, 0o444);
    put(upper, '/etc/systemd/journald.conf.d/kubeception-bed.conf', '[Journal]\nReadKMsg=no\n');
    for (const unit of MASKED_UNITS) {
      const link = `${upper}/etc/systemd/system/${unit}`;
      mkdirSync(dirname(link), { recursive: true });
      if (!present(link)) symlinkSync('/dev/null', link);
    }
    for (const link of disabledLinks()) {
      // An overlay whiteout (char device 0:0) hides the machine's link inside the host only.
      if (!present(link) || present(`${upper}${link}`)) continue;
      mkdirSync(dirname(`${upper}${link}`), { recursive: true });
      await runOk(['mknod', `${upper}${link}`, 'c', '0', '0']);
    }
    writeFileSync(`${diskDir(s.name)}/prepared`, '');
  }
  mkdirSync(dirname(`${upper}${INIT}`), { recursive: true });
  copyFileSync(initSource, `${upper}${INIT}`);
  await runOk(['chmod', '0755', `${upper}${INIT}`]);
  for (const [key, value] of Object.entries(KUBELET_SYSCTLS)) {
    put(upper, `${dirname(INIT)}/sysctl/${key}`, `${value}\n`);
  }
}

function nspawnArgs(s: HostState): string[] {
  const bindArg = (b: Bind) => `--bind${b.readOnly ? '-ro' : ''}=${b.src}:${b.dst ?? b.src}`;
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
  for (const b of s.binds) args.push(bindArg(b));
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
exec systemd-nspawn "$@"
`;

/** Starts the host's launcher; resolves with nspawn's and the host PID 1's owned PIDs. */
export async function launch(s: HostState, initSource: string): Promise<{ nspawn: OwnedPid; pid1: OwnedPid }> {
  const dir = hostDir(s.name);
  for (const d of ['lower', 'root']) mkdirSync(`${dir}/${d}`, { recursive: true });
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
