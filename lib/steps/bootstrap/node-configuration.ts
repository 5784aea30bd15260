/**
 * Preflight check `NodeConfiguration` of `run bootstrap` and `run join`: the fields that fix this
 * node's identity in the cluster once its etcd member exists — `nodeName` (the etcd member's name,
 * the Node, the kubelet's and etcd's certificates), `etcd.dataDir` (where this member's data is),
 * `localAPIEndpoint.advertiseAddress` (the member's peer URL, stored in etcd's membership),
 * `certificatesDir` (where every file of the node names its PKI), `localAPIEndpoint.bindPort` (the
 * port every component and kubeconfig reaches the API on) and `distro` (the container runtime, the
 * kubelet's and etcd's units and every path the node was set up with) — must not change on a re-run.
 * Read from the etcd environment file kubeception wrote on this host (its
 * header marks it as ours), so it works with the control plane down too; no file, or a file that is
 * not ours (another check refuses that), means nothing to compare. `distro` is read from the node
 * record (lib/host/node-record.ts) instead: the distro decides where the etcd environment file is, so
 * a node read with another distro's paths would show none of its files. No record (a node set up by
 * a kubeception before the record existed) means its distro is unknown: nothing is compared, and
 * the run's `etcd` step (a worker's: `kubelet-config`) records the config's. Not ignorable: changing them
 * would start an empty etcd in a new data dir (a new, empty cluster over the old one), register a
 * second Node and member name, leave the member's peer URL pointing at an address it no longer has,
 * or write a second set of files at another distro's paths beside the running ones.
 * kubeadm has no way to change them either (a node is reset and joined again).
 * Run by bootstrap's preflight, a control-plane join's (lib/steps/join/control-plane-join.ts) and a
 * worker join's (`workerChecks`, lib/steps/preflight/preflight.ts): a worker has no etcd environment
 * file, so on a worker only `distro` is compared, with the record the join's `kubelet-config` step wrote.
 *
 * Host effects: none (reads the etcd environment file, the controller-manager's kubeconfig and the node record).
 */
import { dirname } from 'node:path';
import { ETCD_ENV_HEADER, etcdPeerUrl, readEtcdEnvironment } from '../../etcd/config.ts';
import { kubeconfigPaths } from '../../k8s/endpoints.ts';
import { parseKubeconfig } from '../../k8s/kubeconfig.ts';
import { NODE_RECORD, recordedDistro } from '../../host/node-record.ts';
import type { ResolvedConfig } from '../../types.ts';
import type { Check } from '../preflight/preflight-check.ts';

/** The node fields the check compares: config path, the etcd flag that records it, what it means. */
const NODE_FIELDS = [
  { field: 'nodeName', flag: 'name', want: (c: ResolvedConfig) => c.nodeName, why: "it is this node's etcd member name and its Node: another name would register a second Node and member" },
  { field: 'etcd.dataDir', flag: 'data-dir', want: (c: ResolvedConfig) => c.etcd.dataDir, why: "this node's etcd member keeps the cluster's data there: another directory would start an empty etcd, a new cluster in place of this one" },
  { field: 'localAPIEndpoint.advertiseAddress', flag: 'initial-advertise-peer-urls', want: etcdPeerUrl, why: "etcd's membership stores this member's peer URL, which kubeception does not move" },
  // etcd's CA path is `<certificatesDir>/etcd/ca.crt`: compared (and shown) as the directory.
  { field: 'certificatesDir', flag: 'trusted-ca-file', want: (c: ResolvedConfig) => c.certificatesDir, recorded: (v: string) => dirname(dirname(v)), why: 'every key, certificate and kubeconfig of this node names the PKI there; kubeception does not move a PKI' },
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
    const raw = readEtcdEnvironment(etcdEnvironment, f.flag);
    const recorded = raw !== undefined && 'recorded' in f ? f.recorded(raw) : raw;
    const want = f.want(config);
    return recorded !== undefined && recorded !== want ? [{ field: f.field, recorded, config: want }] : [];
  });
}

/**
 * `localAPIEndpoint.bindPort` against the port of the controller-manager kubeconfig's server
 * (`https://127.0.0.1:<bindPort>`, written by the kubeconfig step; the self-hosted components, the
 * recovery copy and every kubeconfig name it). Pure. @returns the change, or undefined.
 */
export function bindPortChange(controllerManagerKubeconfig: string, source: string, config: ResolvedConfig): { recorded: string; config: string } | undefined {
  const server = parseKubeconfig(controllerManagerKubeconfig, source).server;
  const port = server ? /^https:\/\/127\.0\.0\.1:(\d+)\/?$/.exec(server)?.[1] : undefined;
  const want = String(config.localAPIEndpoint.bindPort);
  return port !== undefined && port !== want ? { recorded: port, config: want } : undefined;
}

/** Why a node does not change distro (see the module docstring). */
const DISTRO_WHY = "this node's container runtime, kubelet (and on a control-plane node etcd) units and paths were set up for that distro; kubeception does not move a node to another distro";

/**
 * `distro` against the node record's text (undefined: no record). Pure.
 * @returns the change, or undefined (also when the recorded distro is unknown: no record, or one without a distro).
 */
export function distroChange(nodeRecord: string | undefined, config: ResolvedConfig): { recorded: string; config: string } | undefined {
  const recorded = recordedDistro(nodeRecord);
  return recorded !== undefined && recorded !== config.distro.name ? { recorded, config: config.distro.name } : undefined;
}

/** See the module docstring. */
export const nodeConfigurationCheck: Check = {
  id: 'NodeConfiguration',
  ignorable: false,
  async run(ctx) {
    const file = ctx.config.distro.paths.etcdEnvironmentFile;
    const text = await ctx.files.read(file);
    const changes: (Omit<NodeFieldChange, 'field'> & { field: string; file: string; why: string })[] =
      text === undefined ? [] : nodeFieldChanges(text, ctx.config).map((c) => ({ ...c, file, why: NODE_FIELDS.find((x) => x.field === c.field)!.why }));
    const cm = kubeconfigPaths(ctx.config).controllerManager;
    const cmText = text === undefined ? undefined : await ctx.files.read(cm);
    const port = cmText === undefined ? undefined : bindPortChange(cmText, cm, ctx.config);
    if (port) changes.push({ field: 'localAPIEndpoint.bindPort', ...port, file: cm, why: "the self-hosted kube-apiserver, its recovery copy, the kubelet's and every kubeconfig serve or reach the API on that port; kubeception does not move it on a running node" });
    const distro = distroChange(await ctx.files.read(NODE_RECORD), ctx.config);
    if (distro) changes.push({ field: 'distro', ...distro, file: NODE_RECORD, why: DISTRO_WHY });
    if (changes.length === 0) return undefined;
    // reset finds the node's files at the paths of the distro it was set up with.
    const move = distro ? `; to move it to distro ${distro.config}: \`kubeception reset\` it with distro ${distro.recorded}, then bootstrap or join it with ${distro.config}` : '';
    return {
      message: changes.map((c) => `${c.field} gives ${c.config} in the config, but this node runs with ${c.recorded} (${c.file}): ${c.why}`).join('; '),
      fix: `set ${changes.map((c) => c.field).join(', ')} back to what this node runs with in kubeception.config.ts (to give this node another identity: \`kubeception reset\` it and join it again${move})`,
    };
  },
};
