/**
 * Subject alternative names: classifying operator-supplied entries as IP or DNS, normalising and
 * de-duplicating them, and taking the host out of `controlPlaneEndpoint`.
 * @see kubernetes/cmd/kubeadm/app/util/pkiutil/pki_helpers.go (appendSANsToAltNames)
 */
import { isIP, normalizeIP } from '../net/cidr.ts';
import { PkiError } from './errors.ts';

/** SANs of a certificate: DNS names (lower-case) and IP literals (normalised). */
export interface AltNames {
  dnsNames: string[];
  ipAddresses: string[];
}

const DNS_LABEL = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const DNS_1123_SUBDOMAIN = new RegExp(`^(\\*\\.)?${DNS_LABEL}(\\.${DNS_LABEL})*$`);

/** True for a DNS-1123 subdomain (≤ 253 chars), optionally with a leading `*.` wildcard label. Case-insensitive. */
export function isDnsName(s: string): boolean {
  return s.length <= 253 && DNS_1123_SUBDOMAIN.test(s.toLowerCase());
}

/**
 * The host part of `controlPlaneEndpoint`: `api.example.com:6443` → `api.example.com`,
 * `[fd00::10]:6443` → `fd00::10`, `fd00::10` → `fd00::10`, `10.0.0.5` → `10.0.0.5`.
 */
export function endpointHost(endpoint: string): string {
  if (isIP(endpoint)) return endpoint;
  const bracketed = /^\[([^\]]+)\](:\d+)?$/.exec(endpoint);
  if (bracketed) return bracketed[1]!;
  const withPort = /^(.*):\d+$/.exec(endpoint);
  return withPort ? withPort[1]! : endpoint;
}

/**
 * Sorts `entries` into IP and DNS SANs, normalised, order kept, duplicates dropped.
 * @param field the config field the entries came from, for the error.
 * @throws PkiError `pki-invalid-san` for an entry that is neither an IP nor a DNS name.
 */
export function classifySANs(entries: readonly string[], field: string): AltNames {
  const out: AltNames = { dnsNames: [], ipAddresses: [] };
  for (const entry of entries) {
    if (isIP(entry)) out.ipAddresses.push(normalizeIP(entry));
    else if (isDnsName(entry)) out.dnsNames.push(entry.toLowerCase());
    else
      throw new PkiError('pki-invalid-san', {
        what: `${field}: "${entry}"`,
        why: 'a certificate SAN must be an IPv4/IPv6 address or a DNS-1123 name (optionally *.-wildcarded)',
        fix: `correct or remove "${entry}" in ${field}`,
      });
  }
  return uniqueAltNames(out);
}

/** Concatenates SAN lists, dropping duplicates (first occurrence wins). */
export function uniqueAltNames(...lists: AltNames[]): AltNames {
  return {
    dnsNames: [...new Set(lists.flatMap((l) => l.dnsNames))],
    ipAddresses: [...new Set(lists.flatMap((l) => l.ipAddresses))],
  };
}

/** Entries of `want` missing from `have`, and entries of `have` not in `want`, as `DNS:x`/`IP:y`. */
export function diffAltNames(have: AltNames, want: AltNames): { missing: string[]; unexpected: string[] } {
  const tag = (l: AltNames) => [...l.dnsNames.map((d) => `DNS:${d}`), ...l.ipAddresses.map((i) => `IP:${i}`)];
  const h = new Set(tag(have));
  const w = new Set(tag(want));
  return { missing: [...w].filter((x) => !h.has(x)), unexpected: [...h].filter((x) => !w.has(x)) };
}
