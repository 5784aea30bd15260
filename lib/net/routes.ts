/**
 * The interfaces of the host's default routes, read from the kernel's routing tables as kubeadm
 * does (k8s.io/apimachinery/pkg/util/net.ChooseHostInterface reads /proc/net/route, then
 * /proc/net/ipv6_route): the advertise address defaults to an address of the default route's
 * interface, not to whichever interface the OS lists first.
 */
import { readFileSync } from 'node:fs';

/** Default routes of one family, lowest metric first. */
export interface DefaultRoute {
  iface: string;
  family: 4 | 6;
  metric: number;
}

/** Parses `/proc/net/route` (IPv4) text: rows with destination and mask 0 and the RTF_UP flag. */
export function parseRoute4(text: string): DefaultRoute[] {
  return text
    .split('\n')
    .slice(1)
    .map((l) => l.trim().split(/\s+/))
    .filter((c) => c.length >= 8 && c[1] === '00000000' && c[7] === '00000000' && (Number.parseInt(c[3]!, 16) & 1) === 1)
    .map((c) => ({ iface: c[0]!, family: 4 as const, metric: Number(c[6]) }))
    .sort((a, b) => a.metric - b.metric);
}

/** Parses `/proc/net/ipv6_route` text: rows with destination ::/0, up, not on `lo`. */
export function parseRoute6(text: string): DefaultRoute[] {
  return text
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .filter((c) => c.length >= 10 && /^0{32}$/.test(c[0]!) && c[1] === '00' && c[9] !== 'lo' && (Number.parseInt(c[8]!, 16) & 1) === 1)
    .map((c) => ({ iface: c[9]!, family: 6 as const, metric: Number.parseInt(c[5]!, 16) }))
    .sort((a, b) => a.metric - b.metric);
}

/** The host's default routes, IPv4 first (as kubeadm prefers); [] for a table that cannot be read. */
export function readDefaultRoutes(): DefaultRoute[] {
  const read = (p: string) => {
    try {
      return readFileSync(p, 'utf8');
    } catch {
      return '';
    }
  };
  return [...parseRoute4(read('/proc/net/route')), ...parseRoute6(read('/proc/net/ipv6_route'))];
}
