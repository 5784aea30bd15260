/**
 * Removing this cluster's netfilter chains without touching anyone else's. From `iptables-save`
 * output: which chains are ours ({@link ourChains}), and an `iptables-restore --noflush` script that
 * deletes the rules of *other* chains that jump to ours, then flushes and deletes ours. Built-in
 * chains and tables are never flushed. Pure text in, text out.
 *
 * Which chains are ours ({@link ChainOwnership}, decided by lib/reset/ownership.ts):
 * - `KUBE-*` (kube-proxy, the kubelet) when this host's kubelet is kubeception's;
 * - `FLANNEL*` when kubeception's flannel ran here;
 * - a `CNI-*` chain when a rule in it or jumping to it names one of this cluster's CNI networks (the
 *   bridge and portmap plugins tag their rules `name: "<network>" id: "<container>"`), or it is
 *   portmap's shared `CNI-HOSTPORT-*` plumbing of a network of ours — and in either case no rule in
 *   it or jumping to it names another network (podman's, nerdctl's), and none jumps to a chain that
 *   is not ours. Any other `CNI-*` chain (an unreferenced `CNI-FOO`, another runtime's) is foreign: kept.
 * @see https://kubernetes.io/docs/reference/setup-tools/kubeadm/kubeadm-reset/ (what kubeadm leaves to the operator)
 */

/** The cluster's claims on netfilter state. */
export interface ChainOwnership {
  /** `KUBE-*` chains are ours. */
  kube: boolean;
  /** `FLANNEL*` chains are ours. */
  flannel: boolean;
  /** Names of this cluster's CNI networks (e.g. flannel's `cbr0`). */
  networks: readonly string[];
}

/** Every chain name that may be ours by its prefix. */
export const CANDIDATE_CHAIN = /^(KUBE-|CNI-|FLANNEL)/;

interface Table {
  chains: string[];
  rules: { chain: string; text: string; target?: string; network?: string }[];
}

function parse(save: string): Map<string, Table> {
  const tables = new Map<string, Table>();
  let t: Table | undefined;
  for (const line of save.split('\n')) {
    if (line.startsWith('*')) {
      t = { chains: [], rules: [] };
      tables.set(line.slice(1).trim(), t);
      continue;
    }
    if (!t) continue;
    const decl = /^:(\S+)/.exec(line);
    if (decl) t.chains.push(decl[1]!);
    const rule = /^-A (\S+) (.*)$/.exec(line);
    if (rule) {
      const target = / -[jg] (\S+)/.exec(` ${rule[2]}`)?.[1];
      // The bridge and portmap plugins' comments: "name: \"cbr0\" id: \"…\"", "dnat name: \"bed\" id: \"…\"".
      const network = /name: \\"([^"\\]+)\\"/.exec(rule[2]!)?.[1];
      t.rules.push({ chain: rule[1]!, text: rule[2]!, target, network });
    }
  }
  return tables;
}

function oursIn(t: Table, own: ChainOwnership): Set<string> {
  const ours = new Set<string>();
  for (const c of t.chains) if ((own.kube && c.startsWith('KUBE-')) || (own.flannel && c.startsWith('FLANNEL'))) ours.add(c);
  const mine = (n?: string) => n !== undefined && own.networks.includes(n);
  const foreignNet = (n?: string) => n !== undefined && !own.networks.includes(n);
  const cni = t.chains.filter((c) => c.startsWith('CNI-'));
  const touching = (c: string) => t.rules.filter((r) => r.chain === c || r.target === c);
  // Tainted: named by another network, or jumping to a CNI chain that is tainted (fixed point).
  const tainted = new Set(cni.filter((c) => touching(c).some((r) => foreignNet(r.network))));
  for (let grew = true; grew; ) {
    grew = false;
    for (const c of cni)
      if (!tainted.has(c) && t.rules.some((r) => r.chain === c && r.target !== undefined && tainted.has(r.target))) {
        tainted.add(c);
        grew = true;
      }
  }
  const shared = own.networks.length > 0;
  for (const c of cni) {
    if (tainted.has(c)) continue;
    if (touching(c).some((r) => mine(r.network)) || (shared && c.startsWith('CNI-HOSTPORT-'))) ours.add(c);
  }
  // A CNI chain that only chains of ours jump to (and that no one else references) is ours too.
  for (let grew = true; grew; ) {
    grew = false;
    for (const c of cni) {
      if (ours.has(c) || tainted.has(c)) continue;
      const refs = t.rules.filter((r) => r.target === c);
      if (refs.length && refs.every((r) => ours.has(r.chain))) {
        ours.add(c);
        grew = true;
      }
    }
  }
  return ours;
}

/** `[table, chain]` of every chain of ours declared in an `iptables-save` dump. */
export function ourChains(save: string, own: ChainOwnership): [string, string][] {
  const out: [string, string][] = [];
  for (const [name, t] of parse(save)) for (const c of t.chains) if (oursIn(t, own).has(c)) out.push([name, c]);
  return out;
}

/** `[table, chain]` of every chain with a cluster prefix that is not ours (reported as foreign, kept). */
export function foreignChains(save: string, own: ChainOwnership): [string, string][] {
  const out: [string, string][] = [];
  for (const [name, t] of parse(save)) {
    const ours = oursIn(t, own);
    for (const c of t.chains) if (CANDIDATE_CHAIN.test(c) && !ours.has(c)) out.push([name, c]);
  }
  return out;
}

/**
 * The `iptables-restore --noflush` input that removes our chains, or '' if there are none.
 * Per table: `-D` each rule of a chain not ours whose target (`-j`/`-g`) is ours, then `-F` and `-X`
 * each of our chains (flushing all first, so references between them are gone before the deletes).
 */
export function removalScript(save: string, own: ChainOwnership): string {
  const parts: string[] = [];
  for (const [name, t] of parse(save)) {
    const ours = [...oursIn(t, own)];
    const set = new Set(ours);
    const refs = t.rules.filter((r) => !set.has(r.chain) && r.target !== undefined && set.has(r.target)).map((r) => `-D ${r.chain} ${r.text}`);
    if (!ours.length && !refs.length) continue;
    parts.push(`*${name}`, ...refs, ...ours.map((c) => `-F ${c}`), ...ours.map((c) => `-X ${c}`), 'COMMIT');
  }
  return parts.length ? `${parts.join('\n')}\n` : '';
}
