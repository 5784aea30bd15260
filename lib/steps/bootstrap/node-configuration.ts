/**
 * Preflight check `NodeConfiguration` of `run bootstrap`: the fields that fix this node's identity in
 * the cluster once its etcd member exists — `nodeName` (the etcd member's name, the Node, the
 * kubelet's and etcd's certificates), `etcd.dataDir` (where this member's data is) and
 * `localAPIEndpoint.advertiseAddress` (the member's peer URL, stored in etcd's membership) — must
 * not change on a re-run. Read from the etcd environment file kubeception wrote on this host (its
 * header marks it as ours), so it works with the control plane down too; no file, or a file that is
 * not ours (another check refuses that), means nothing to compare. Not ignorable: changing them
 * would start an empty etcd in a new data dir (a new, empty cluster over the old one), register a
 * second Node and member name, or leave the member's peer URL pointing at an address it no longer has.
 * kubeadm has no way to change them either (a node is reset and joined again).
 *
 * Host effects: none (reads the etcd environment file).
 */
import { ETCD_ENV_HEADER, etcdPeerUrl, readEtcdEnvironment } from '../../etcd/config.ts';
import type { ResolvedConfig } from '../../types.ts';
import type { Check } from '../preflight/preflight-check.ts';

/** The node fields the check compares: config path, the etcd flag that records it, what it means. */
const NODE_FIELDS = [
  { field: 'nodeName', flag: 'name', want: (c: ResolvedConfig) => c.nodeName, why: "it is this node's etcd member name and its Node: another name would register a second Node and member" },
  { field: 'etcd.dataDir', flag: 'data-dir', want: (c: ResolvedConfig) => c.etcd.dataDir, why: "this node's etcd member keeps the cluster's data there: another directory would start an empty etcd, a new cluster in place of this one" },
  { field: 'localAPIEndpoint.advertiseAddress', flag: 'initial-advertise-peer-urls', want: etcdPeerUrl, why: "etcd's membership stores this member's peer URL, which kubeception does not move" },
] as const;

/** One node field the config would change. */
export interface NodeFieldChange {
  field: (typeof NODE_FIELDS)[number]['field'];
  recorded: string;
  config: string;
}

/** The node fields `config` would change, given the text of the etcd environment file kubeception wrote. Pure. */
export function nodeFieldChanges(etcdEnvironment: string, config: ResolvedConfig): NodeFieldChange[] {
  if (!etcdEnvironment.startsWith(ETCD_ENV_HEADER)) return [];
  return NODE_FIELDS.flatMap((f) => {
    const recorded = readEtcdEnvironment(etcdEnvironment, f.flag);
    const want = f.want(config);
    return recorded !== undefined && recorded !== want ? [{ field: f.field, recorded, config: want }] : [];
  });
}

/** See the module docstring. */
export const nodeConfigurationCheck: Check = {
  id: 'NodeConfiguration',
  ignorable: false,
  async run(ctx) {
    const file = ctx.config.distro.paths.etcdEnvironmentFile;
    const text = await ctx.files.read(file);
    const changes = text === undefined ? [] : nodeFieldChanges(text, ctx.config);
    if (changes.length === 0) return undefined;
    const why = (f: NodeFieldChange['field']) => NODE_FIELDS.find((x) => x.field === f)!.why;
    return {
      message: changes.map((c) => `${c.field} gives ${c.config} in the config, but this node runs with ${c.recorded} (${file}): ${why(c.field)}`).join('; '),
      fix: `set ${changes.map((c) => c.field).join(', ')} back to what ${file} has in kubeception.config.ts (to give this node another identity: \`kubeception reset\` it and join it again)`,
    };
  },
};
