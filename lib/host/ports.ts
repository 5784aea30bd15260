/**
 * Listening TCP ports of the host, read from /proc/net/tcp and /proc/net/tcp6 (no sockets opened).
 */
import { promises as fs } from 'node:fs';
import { HostStateError } from '../errors.ts';

/**
 * Ports with a socket in LISTEN state (any address), IPv4 and IPv6. `files` for tests.
 * Same errors as {@link listeningSockets}.
 */
export async function listeningPorts(files: readonly string[] = PROC_NET_TCP): Promise<Set<number>> {
  return new Set((await listeningSockets(files)).keys());
}

const PROC_NET_TCP = ['/proc/net/tcp', '/proc/net/tcp6'] as const;

/**
 * Listening TCP sockets by port: port → the socket inodes (decimal strings, the `inode` column) of
 * its LISTEN rows, IPv4 and IPv6. `files` for tests.
 * A missing `/proc/net/tcp6` (IPv6 disabled) counts as no IPv6 listeners.
 * @throws HostStateError `proc-net-unreadable` if `/proc/net/tcp` cannot be read, or a file has no header
 *   line: an unreadable table must not read as "every port free".
 */
export async function listeningSockets(files: readonly string[] = PROC_NET_TCP): Promise<Map<number, Set<string>>> {
  const ports = new Map<number, Set<string>>();
  for (const [i, file] of files.entries()) {
    let text: string;
    try {
      text = await fs.readFile(file, 'utf8');
    } catch (err) {
      if (i > 0 && (err as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw new HostStateError('proc-net-unreadable', { what: file, why: `cannot read the listening sockets: ${(err as Error).message}`, fix: 'run kubeception as root on a host with /proc mounted', cause: err });
    }
    if (!/^\s*sl\s+local_address/.test(text))
      throw new HostStateError('proc-net-unreadable', { what: file, why: 'it is not a socket table (no "sl local_address" header)', fix: 'run kubeception on a host with a real /proc' });
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols[3] !== '0A') continue; // TCP_LISTEN
      const port = Number.parseInt(cols[1]?.split(':')[1] ?? '', 16);
      if (!Number.isFinite(port)) continue;
      const inodes = ports.get(port) ?? new Set<string>();
      if (cols[9] && cols[9] !== '0') inodes.add(cols[9]);
      ports.set(port, inodes);
    }
  }
  return ports;
}

/**
 * Whether process `pid` has one of the socket `inodes` open (its `/proc/PID/fd` links read
 * `socket:[INODE]`). A process that is gone, or whose fds cannot be read, holds none.
 */
export async function processHoldsSocket(pid: number, inodes: ReadonlySet<string>, proc = '/proc'): Promise<boolean> {
  if (!(pid > 0) || inodes.size === 0) return false;
  const dir = `${proc}/${pid}/fd`;
  const fds = await fs.readdir(dir).catch(() => [] as string[]);
  for (const fd of fds) {
    const link = await fs.readlink(`${dir}/${fd}`).catch(() => '');
    const m = /^socket:\[(\d+)\]$/.exec(link);
    if (m && inodes.has(m[1]!)) return true;
  }
  return false;
}
