/**
 * IP and CIDR math: the one wrapper around `ipaddr.js`. Also the one helper that builds every URL
 * and `host:port` kubeception writes, bracketing IPv6 literals (RFC 3986 §3.2.2).
 */
import ipaddr from 'ipaddr.js';

/** A parsed CIDR: family, normalised network address and prefix length. */
export interface Cidr {
  family: 'ipv4' | 'ipv6';
  /** Normalised network address (host bits cleared), e.g. `10.96.0.0`, `fd00:96::`. */
  network: string;
  prefix: number;
}

/** True if `s` is an IPv4 or IPv6 literal (no brackets, no zone). */
export function isIP(s: string): boolean {
  return ipaddr.isValid(s) && (ipaddr.IPv4.isValidFourPartDecimal(s) || (s.includes(':') && ipaddr.IPv6.isValid(s)));
}

/** Normalised text form of an IP literal (`fd00:20:0::2` → `fd00:20::2`). @throws Error if not an IP. */
export function normalizeIP(s: string): string {
  return ipaddr.parse(s).toString();
}

/** `4`, `6` or `undefined` for a non-IP string. */
export function ipFamily(s: string): 4 | 6 | undefined {
  if (!isIP(s)) return undefined;
  return ipaddr.parse(s).kind() === 'ipv4' ? 4 : 6;
}

/**
 * Parses `a.b.c.d/n` or `x::/n`. Host bits must be zero, as Kubernetes requires for
 * `--service-cluster-ip-range` and `--cluster-cidr`.
 * @returns the parsed CIDR, or a string saying what is wrong.
 */
export function parseCidr(s: string): Cidr | string {
  if (!/^[0-9a-fA-F:.]+\/\d{1,3}$/.test(s)) return `"${s}" is not in CIDR notation (address/prefix)`;
  let parsed: [ipaddr.IPv4 | ipaddr.IPv6, number];
  try {
    parsed = ipaddr.parseCIDR(s);
  } catch {
    return `"${s}" is not a valid CIDR`;
  }
  const [addr, prefix] = parsed;
  const network =
    addr.kind() === 'ipv4'
      ? ipaddr.IPv4.networkAddressFromCIDR(s).toString()
      : ipaddr.IPv6.networkAddressFromCIDR(s).toString();
  if (network !== addr.toString()) return `"${s}" has host bits set; the network address is ${network}/${prefix}`;
  return { family: addr.kind(), network, prefix };
}

/** True if the two CIDRs share any address. Different families never overlap. */
export function cidrsOverlap(a: Cidr, b: Cidr): boolean {
  if (a.family !== b.family) return false;
  const shorter = a.prefix <= b.prefix ? a : b;
  const longer = shorter === a ? b : a;
  return ipaddr.parse(longer.network).match(ipaddr.parse(shorter.network), shorter.prefix);
}

/** True if `ip` lies inside `cidr`. */
export function cidrContains(cidr: Cidr, ip: string): boolean {
  const addr = ipaddr.parse(ip);
  if (addr.kind() !== cidr.family) return false;
  return addr.match(ipaddr.parse(cidr.network), cidr.prefix);
}

/**
 * The address `index` places after a CIDR's network address (kubeadm's `GetIndexedIP`):
 * `indexedIP('10.96.0.64/26', 10)` → `10.96.0.74`; `indexedIP('fd00:96::/108', 10)` → `fd00:96::a`.
 * @throws Error if `cidr` is not a valid CIDR, or the address lies outside it (the subnet is too small).
 */
export function indexedIP(cidr: string, index: number): string {
  const c = parseCidr(cidr);
  if (typeof c === 'string') throw new Error(c);
  const bytes = ipaddr.parse(c.network).toByteArray();
  const size = 1n << BigInt(bytes.length * 8 - c.prefix);
  if (!Number.isInteger(index) || index < 0 || BigInt(index) >= size) throw new Error(`${cidr} has ${size} addresses; it has no address number ${index}`);
  let n = bytes.reduce((acc, b) => (acc << 8n) | BigInt(b), 0n) + BigInt(index);
  for (let i = bytes.length - 1; i >= 0; i--, n >>= 8n) bytes[i] = Number(n & 0xffn);
  return ipaddr.fromByteArray(bytes).toString();
}

/**
 * The first host address of a service subnet: the ClusterIP of the `kubernetes` Service, which the
 * apiserver certificate must carry (kubeadm's `GetAPIServerVirtualIP`).
 * `10.96.0.0/12` → `10.96.0.1`; `fd00:96::/108` → `fd00:96::1`.
 * @throws Error if `serviceSubnet` is not a valid CIDR.
 */
export function firstServiceIP(serviceSubnet: string): string {
  return indexedIP(serviceSubnet, 1);
}

/**
 * The cluster DNS address: the tenth address of the service subnet (kubeadm's `GetDNSIP`), the
 * ClusterIP of the `kube-dns` Service and the kubelets' `clusterDNS`.
 * `10.96.0.0/12` → `10.96.0.10`; `10.96.0.64/26` → `10.96.0.74`; `fd00:96::/108` → `fd00:96::a`.
 * @throws Error if `serviceSubnet` is not a valid CIDR or has fewer than 11 addresses.
 */
export function clusterDNSIP(serviceSubnet: string): string {
  return indexedIP(serviceSubnet, 10);
}

/** `host:port`, with IPv6 literals bracketed: `[fd00:20::2]:2379`. */
export function hostPort(host: string, port: number): string {
  return ipFamily(host) === 6 ? `[${normalizeIP(host)}]:${port}` : `${host}:${port}`;
}

/** `scheme://host:port[path]` with IPv6 literals bracketed. The only way kubeception builds a URL. */
export function url(scheme: 'https' | 'http', host: string, port: number, path = ''): string {
  return `${scheme}://${hostPort(host, port)}${path}`;
}

/**
 * The network of an interface address in CIDR form (host bits allowed): `10.250.0.2/16` →
 * `{ network: '10.250.0.0', prefix: 16 }`. Returns undefined if `ifaceCidr` is not parseable.
 */
export function networkOf(ifaceCidr: string): Cidr | undefined {
  try {
    const [addr, prefix] = ipaddr.parseCIDR(ifaceCidr);
    const network =
      addr.kind() === 'ipv4'
        ? ipaddr.IPv4.networkAddressFromCIDR(ifaceCidr).toString()
        : ipaddr.IPv6.networkAddressFromCIDR(ifaceCidr).toString();
    return { family: addr.kind(), network, prefix };
  } catch {
    return undefined;
  }
}
