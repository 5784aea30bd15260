/**
 * Removing kubeception's netfilter chains without touching anyone else's: from `iptables-save`
 * output, an `iptables-restore --noflush` script that deletes the rules of *other* chains that jump
 * to ours, then flushes and deletes our chains (KUBE-*, CNI-*, FLANNEL*; {@link OWN_CHAIN}). Built-in
 * chains and tables are never flushed. Pure text in, text out.
 * @see https://kubernetes.io/docs/reference/setup-tools/kubeadm/kubeadm-reset/ (what kubeadm leaves to the operator)
 */
import { OWN_CHAIN } from './owned.ts';

/** `[table, chain]` of every chain of ours declared in an `iptables-save` dump. */
export function chainsOf(save: string): [string, string][] {
  const out: [string, string][] = [];
  let table = '';
  for (const line of save.split('\n')) {
    if (line.startsWith('*')) table = line.slice(1).trim();
    const m = /^:(\S+)/.exec(line);
    if (m && OWN_CHAIN.test(m[1]!)) out.push([table, m[1]!]);
  }
  return out;
}

/**
 * The `iptables-restore --noflush` input that removes our chains, or '' if there are none.
 * Per table: `-D` each rule of a foreign chain whose target (`-j`/`-g`) is ours, then `-F` and `-X`
 * each of our chains (flushing all first, so references between them are gone before the deletes).
 */
export function removalScript(save: string): string {
  const tables = new Map<string, { ours: string[]; refs: string[] }>();
  let table = '';
  for (const line of save.split('\n')) {
    if (line.startsWith('*')) {
      table = line.slice(1).trim();
      tables.set(table, { ours: [], refs: [] });
      continue;
    }
    const t = tables.get(table);
    if (!t) continue;
    const decl = /^:(\S+)/.exec(line);
    if (decl && OWN_CHAIN.test(decl[1]!)) t.ours.push(decl[1]!);
    const rule = /^-A (\S+) (.*)$/.exec(line);
    if (rule && !OWN_CHAIN.test(rule[1]!) && / -[jg] (KUBE-|CNI-|FLANNEL)\S*/.test(` ${rule[2]}`)) t.refs.push(`-D ${rule[1]} ${rule[2]}`);
  }
  const parts: string[] = [];
  for (const [name, t] of tables) {
    if (!t.ours.length && !t.refs.length) continue;
    parts.push(`*${name}`, ...t.refs, ...t.ours.map((c) => `-F ${c}`), ...t.ours.map((c) => `-X ${c}`), 'COMMIT');
  }
  return parts.length ? `${parts.join('\n')}\n` : '';
}
