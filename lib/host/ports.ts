/**
 * Listening TCP ports of the host, read from /proc/net/tcp and /proc/net/tcp6 (no sockets opened).
 */
import { promises as fs } from 'node:fs';

/** Ports with a socket in LISTEN state (any address), IPv4 and IPv6. */
export async function listeningPorts(): Promise<Set<number>> {
  const ports = new Set<number>();
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    const text = await fs.readFile(file, 'utf8').catch(() => '');
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols[3] !== '0A') continue; // TCP_LISTEN
      const port = Number.parseInt(cols[1]?.split(':')[1] ?? '', 16);
      if (Number.isFinite(port)) ports.add(port);
    }
  }
  return ports;
}
