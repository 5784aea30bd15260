/**
 * Bed networking: one namespace `kc-bed` holding a bridge, one namespace `kc-<host>` per host joined to it
 * by a veth pair. The root namespace only gets a blackhole route for the bed range, so nothing it sends
 * can reach a bed address, and nothing in the bed can leave the machine.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { run, runOk } from './proc.ts';

export const BED_CIDR = '10.250.0.0/16';
export const BED_PREFIX = 16;
/** The bridge's own address in `kc-bed`; hosts use it as their default gateway. */
export const BRIDGE_IP = '10.250.0.1';
export const BED_NETNS = 'kc-bed';
const BRIDGE = 'kcbr0';

export const hostNetns = (name: string) => `kc-${name}`;
/** The bed-side veth name: interface names are limited to 15 bytes, so a hash of the host name. */
export const vethName = (name: string) => `kcv${createHash('sha1').update(name).digest('hex').slice(0, 10)}`;

const netnsExists = (ns: string) => existsSync(`/run/netns/${ns}`);

async function hasBlackhole(): Promise<boolean> {
  const out = await runOk(['ip', '-4', 'route', 'show', 'type', 'blackhole']);
  return out.split('\n').some((l) => l.trim().split(/\s+/).includes(BED_CIDR));
}

/** Blackhole route in the root namespace (first!), then the bed namespace and its bridge. Idempotent. */
export async function ensureBedNet(): Promise<void> {
  if (!(await hasBlackhole())) await runOk(['ip', 'route', 'add', 'blackhole', BED_CIDR]);
  if (!netnsExists(BED_NETNS)) await runOk(['ip', 'netns', 'add', BED_NETNS]);
  const ip = (...a: string[]) => runOk(['ip', '-n', BED_NETNS, ...a]);
  await ip('link', 'set', 'lo', 'up');
  if ((await run(['ip', '-n', BED_NETNS, 'link', 'show', BRIDGE])).code !== 0) {
    await ip('link', 'add', BRIDGE, 'type', 'bridge');
    await ip('addr', 'add', `${BRIDGE_IP}/${BED_PREFIX}`, 'dev', BRIDGE);
  }
  await ip('link', 'set', BRIDGE, 'up');
}

/** The host's namespace with loopback up and eth0 = ip/16, default route via the bridge. Idempotent. */
export async function ensureHostNet(name: string, hostIp: string): Promise<void> {
  const ns = hostNetns(name);
  const veth = vethName(name);
  if (!netnsExists(ns)) await runOk(['ip', 'netns', 'add', ns]);
  const inHost = (...a: string[]) => runOk(['ip', '-n', ns, ...a]);
  await inHost('link', 'set', 'lo', 'up');
  if ((await run(['ip', '-n', ns, 'link', 'show', 'eth0'])).code !== 0) {
    await run(['ip', '-n', BED_NETNS, 'link', 'del', veth]);
    await runOk(['ip', '-n', BED_NETNS, 'link', 'add', veth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns]);
    await inHost('addr', 'add', `${hostIp}/${BED_PREFIX}`, 'dev', 'eth0');
  }
  await runOk(['ip', '-n', BED_NETNS, 'link', 'set', veth, 'master', BRIDGE, 'up']);
  await inHost('link', 'set', 'eth0', 'up');
  await inHost('route', 'replace', 'default', 'via', BRIDGE_IP, 'dev', 'eth0');
}

/** Removes the host's veth and namespace. Idempotent. */
export async function removeHostNet(name: string): Promise<void> {
  if (netnsExists(BED_NETNS)) await run(['ip', '-n', BED_NETNS, 'link', 'del', vethName(name)]);
  if (netnsExists(hostNetns(name))) await runOk(['ip', 'netns', 'del', hostNetns(name)]);
}

/** Removes the bed namespace and the root namespace's blackhole route. Idempotent. */
export async function removeBedNet(): Promise<void> {
  if (netnsExists(BED_NETNS)) await runOk(['ip', 'netns', 'del', BED_NETNS]);
  while (await hasBlackhole()) await runOk(['ip', 'route', 'del', 'blackhole', BED_CIDR]);
}

/** Checks an address is a usable host address in the bed range (10.250.0.2 – 10.250.255.254). */
export function validHostIp(ip: string): boolean {
  const m = /^10\.250\.(\d{1,3})\.(\d{1,3})$/.exec(ip);
  if (!m) return false;
  const [c, d] = [Number(m[1]), Number(m[2])];
  if (c > 255 || d > 255) return false;
  const n = c * 256 + d;
  return n >= 2 && n <= 65534 && ip !== BRIDGE_IP;
}

/** The lowest free address from 10.250.0.10 upwards. */
export function allocateIp(used: Set<string>): string {
  for (let n = 10; n < 65535; n++) {
    const ip = `10.250.${n >> 8}.${n & 255}`;
    if (!used.has(ip) && validHostIp(ip)) return ip;
  }
  throw new Error('bed: no free address in 10.250.0.0/16');
}
