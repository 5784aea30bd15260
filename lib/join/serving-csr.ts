/**
 * The decision on a kubelet serving CSR (signer `kubernetes.io/kubelet-serving`, the kubelet's
 * `serverTLSBootstrap: true`), pure. kubeadm leaves these pending (kubernetes#73356); kubeception's
 * approver decides every one, and approves only a node's request for its own addresses:
 * 1. the requester is a node: user `system:node:<name>`, group `system:nodes`;
 * 2. the request is a kubelet serving one: CN the requester's own name, O exactly `system:nodes`,
 *    usages within digital signature, key encipherment, server auth (server auth included), DNS and
 *    IP SANs only (no email, URI or other name), at least one;
 * 3. every SAN is one of the addresses the requester's own Node lists in `status.addresses` (DNS names
 *    from Hostname, InternalDNS, ExternalDNS; IPs from InternalIP, ExternalIP and an IP Hostname — what
 *    the kubelet itself puts in its request);
 * 4. no SAN is another Node's address (a node can patch its own status: it must not buy a certificate
 *    for a neighbour's IP), and none is reserved: the apiserver's shared names and IPs (the
 *    `kubernetes` Service's names and ClusterIP, the `controlPlaneEndpoint` host, `apiServer.extraSANs`),
 *    any `*.svc` / `*.svc.*` name, `localhost`, a wildcard, a loopback or unspecified IP. The serving
 *    certificate is signed by the cluster CA, which every client of the apiserver trusts: a kubelet
 *    certificate for the apiserver's name would let a node impersonate the apiserver.
 * Anything else is denied, with a reason naming the offending SANs.
 * @see kubernetes/pkg/kubelet/certificate/kubelet.go (newGetTemplateFn, addressesToHostnamesAndIPs)
 * @see kubernetes/pkg/apis/certificates/v1/helpers.go (IsKubeletServingCSR)
 */
import { isIP, normalizeIP } from '../net/cidr.ts';
import { NODES_GROUP } from '../constants.ts';
import type { CsrSubject } from '../pki/x509.ts';

/** A decision to send; `reason` becomes the condition's reason. */
export type Verdict = { approve: boolean; reason: string; message: string };

/** A Node as far as the SAN check reads it. */
export interface NodeLike {
  metadata?: { name?: string };
  status?: { addresses?: { type?: string; address?: string }[] };
}

/** Names and IPs no kubelet may have in its serving certificate (the apiserver's shared SANs). */
export interface ReservedSans {
  dnsNames: readonly string[];
  ipAddresses: readonly string[];
}

const SERVING_USAGES = new Set(['digital signature', 'key encipherment', 'server auth']);
const deny = (reason: string, message: string): Verdict => ({ approve: false, reason, message: `kubeception: ${message}` });

/** The DNS names and IPs of a Node's `status.addresses`, as the kubelet turns them into its request's SANs. */
export function nodeSans(node: NodeLike): { dnsNames: Set<string>; ipAddresses: Set<string> } {
  const dnsNames = new Set<string>();
  const ipAddresses = new Set<string>();
  for (const { type, address } of node.status?.addresses ?? []) {
    if (!address) continue;
    if ((type === 'InternalIP' || type === 'ExternalIP' || type === 'Hostname') && isIP(address)) ipAddresses.add(normalizeIP(address));
    else if (type === 'Hostname' || type === 'InternalDNS' || type === 'ExternalDNS') dnsNames.add(address.toLowerCase());
  }
  return { dnsNames, ipAddresses };
}

/** Why a name is reserved, or undefined. */
function reservedName(dns: string, reserved: ReservedSans): string | undefined {
  if (dns.includes('*')) return 'a wildcard';
  if (dns === 'localhost' || dns.endsWith('.localhost')) return 'loopback';
  if (dns.endsWith('.svc') || dns.includes('.svc.') || dns === 'kubernetes' || dns === 'kubernetes.default') return 'a Service name';
  if (reserved.dnsNames.some((r) => r.toLowerCase() === dns)) return "one of the apiserver's names";
  return undefined;
}

/** Why an IP is reserved, or undefined. */
function reservedIP(ip: string, reserved: ReservedSans): string | undefined {
  if (ip === '::1' || ip.startsWith('127.') || ip === '::ffff:127.0.0.1') return 'loopback';
  if (ip === '0.0.0.0' || ip === '::') return 'unspecified';
  if (reserved.ipAddresses.some((r) => normalizeIP(r) === ip)) return "one of the apiserver's addresses";
  return undefined;
}

/**
 * Checks 1 and 2 (the requester and the request, no apiserver call).
 * @returns the node name to look up, or the denial.
 */
export function servingRequest(spec: { username?: string; groups?: string[]; usages?: string[] }, subject: CsrSubject): { node: string } | { deny: Verdict } {
  const user = spec.username ?? '';
  const node = /^system:node:(.+)$/.exec(user)?.[1];
  if (!node || !(spec.groups ?? []).includes(NODES_GROUP))
    return { deny: deny('KubeceptionNotNode', `${user || 'an unknown user'} is not a node (user system:node:<name> in group ${NODES_GROUP}): only a kubelet may request its own serving certificate`) };
  if (subject.commonName !== user || subject.organizations.length !== 1 || subject.organizations[0] !== NODES_GROUP)
    return { deny: deny('KubeceptionNotKubeletServing', `subject CN=${subject.commonName ?? ''} O=${subject.organizations.join(',')} is not ${user}'s own (CN=${user}, O=${NODES_GROUP})`) };
  const usages = spec.usages ?? [];
  if (!usages.includes('server auth') || usages.some((u) => !SERVING_USAGES.has(u)))
    return { deny: deny('KubeceptionNotKubeletServing', `usages ${usages.join(',')} are not those of a kubelet serving certificate (server auth, digital signature, key encipherment)`) };
  if (subject.otherSans.length) return { deny: deny('KubeceptionNotKubeletServing', `SANs ${subject.otherSans.join(', ')} are not DNS names or IP addresses`) };
  if (!subject.dnsNames.length && !subject.ipAddresses.length) return { deny: deny('KubeceptionNotKubeletServing', 'the request names no DNS or IP SAN') };
  return { node };
}

/**
 * Checks 3 and 4: each SAN of `subject` against the requester's Node (`own`, undefined if no such
 * Node exists), every other Node and the reserved SANs.
 */
export function servingSansVerdict(name: string, subject: CsrSubject, own: NodeLike | undefined, others: readonly NodeLike[], reserved: ReservedSans): Verdict {
  if (!own) return deny('KubeceptionNodeUnknown', `no Node ${name} exists: a serving certificate is issued only for the addresses a registered Node lists`);
  const mine = nodeSans(own);
  const theirs = others.filter((n) => n.metadata?.name !== name).map((n) => ({ name: n.metadata?.name ?? '', ...nodeSans(n) }));
  const problems: { reason: string; text: string }[] = [];
  const judge = (san: string, isDns: boolean) => {
    const key = isDns ? san.toLowerCase() : san;
    const why = isDns ? reservedName(key, reserved) : reservedIP(key, reserved);
    if (why) return problems.push({ reason: 'KubeceptionSANReserved', text: `${san} (${why})` });
    const holder = theirs.find((n) => (isDns ? n.dnsNames : n.ipAddresses).has(key));
    if (holder) return problems.push({ reason: 'KubeceptionSANOfOtherNode', text: `${san} (Node ${holder.name}'s address)` });
    if (!(isDns ? mine.dnsNames : mine.ipAddresses).has(key)) problems.push({ reason: 'KubeceptionSANNotNodeAddress', text: `${san} (not in Node ${name}'s status.addresses)` });
    return undefined;
  };
  for (const d of subject.dnsNames) judge(d, true);
  for (const ip of subject.ipAddresses) judge(ip, false);
  if (problems.length) return deny(problems[0]!.reason, `${name} may have a serving certificate only for its own addresses; refused: ${problems.map((p) => p.text).join(', ')}`);
  return { approve: true, reason: 'KubeceptionAutoApproved', message: `kubeception: serving certificate for node ${name}'s own addresses ${[...subject.dnsNames, ...subject.ipAddresses].join(', ')}` };
}

/** `KUBECEPTION_RESERVED_SANS` (comma-separated names and IPs, as the approver's Deployment sets it) as {@link ReservedSans}. */
export function parseReservedSans(text: string | undefined): ReservedSans {
  const entries = (text ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  return { dnsNames: entries.filter((e) => !isIP(e)), ipAddresses: entries.filter(isIP).map(normalizeIP) };
}
