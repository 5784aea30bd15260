/**
 * What on this host is this cluster's, and so what `kubeception reset` may remove. Three sources of
 * proof, nothing else:
 * 1. **Recorded**: a path in the ownership manifest (lib/host/owned-manifest.ts), which every
 *    file write of kubeception adds to before it writes.
 * 2. **Marked**: kubeception's own names and headers — `kubeception-join.{crt,key}`, the
 *    `bootstrap-kube-*.yaml` and `recovery-kube-apiserver.yaml` static pods, the recovery tree,
 *    `/run/kubeception`, the kubelet drop-in / recovery unit / etcd environment starting with
 *    `# Written by kubeception`, the etcd data dir holding kubeception's owner marker.
 * 3. **Made by this cluster's components** (the kubelet kubeception configured, and the pods it ran):
 *    - the kubelet's state trees and files under its directory, when the kubelet is ours (its
 *      config or drop-in recorded or marked);
 *    - CNI state of this cluster's networks: the network the container runtime uses for pods (the
 *      first config in /etc/cni/net.d, as containerd picks it) and flannel's `cbr0` when flannel is
 *      ours, and containerd's per-sandbox `cni-loopback`: `/var/lib/cni/networks/<net>`,
 *      `/var/lib/cni/results/<net>-*`, `/var/lib/cni/flannel`;
 *      the flannel conflist only if its content is the one kubeception's DaemonSet installs;
 *    - links: the bridge of the pod network (`cni0` unless the config names another), veths
 *      attached to it, flannel's devices when flannel is ours, kube-proxy's IPVS/dummy devices;
 *    - network namespaces the runtime's pods (containerd's `k8s.io`) hold, or that a killed reset
 *      recorded before removing the pods;
 *    - netfilter chains: see lib/reset/netfilter.ts.
 * Everything else is foreign: listed in the report, never removed. A host set up before the manifest
 * existed (no manifest) keeps only proofs 2 and 3: its PKI and kubeconfigs at kubeadm's paths cannot
 * be told from kubeadm's and are kept and listed (the report says so) — kubeadm-like, nothing is
 * wiped that cannot be proven ours.
 */
import { basename, join } from 'node:path';
import { ETCD_OWNER_MARKER } from '../constants.ts';
import { OWNED_MANIFEST, parseOwnedManifest, type OwnedKind } from '../host/owned-manifest.ts';
import { CNI_CONF_DIR, FLANNEL_CONFLIST, flannelCniConf } from '../../manifests/addons/flannel.ts';
import { RECOVERY_UNIT } from '../steps/recovery/recovery.ts';
import { SNAPSHOT_SERVICE, SNAPSHOT_TIMER } from '../etcd/snapshot-schedule.ts';
import { etcdDropIn } from '../etcd/config.ts';
import type { ChainOwnership } from './netfilter.ts';
import { isCandidate, ownedPaths } from './owned.ts';
import type { Context } from '../context.ts';
import type { ResetState } from '../steps/contexts.ts';
import type { ResolvedConfig } from '../types.ts';

export const HEADER = '# Written by kubeception';
/** The CNI network name containerd's CRI plugin uses for each pod sandbox's loopback (its results: `/var/lib/cni/results/cni-loopback-<sandbox id>-lo`). */
export const CRI_LOOPBACK_NETWORK = 'cni-loopback';
/** Where a reset records the pod network namespaces before it removes the pods (read by the next reset if this one is killed). */
export const RESET_JOURNAL = '/var/lib/kubeception/reset-netns.json';

export type { OwnershipFacts } from './types.ts';
import type { OwnershipFacts } from './types.ts';

type Ctx = Pick<Context, 'files' | 'config'>;

/** The pod network's CNI config: the first `*.conf`/`*.conflist`/`*.json` in /etc/cni/net.d (containerd's choice). */
async function podNetwork(ctx: Ctx): Promise<{ file: string; name?: string; bridge?: string } | undefined> {
  const first = (await ctx.files.list(CNI_CONF_DIR)).filter((f) => /\.(conflist|conf|json)$/.test(f)).sort()[0];
  if (!first) return undefined;
  const file = join(CNI_CONF_DIR, first);
  try {
    const doc = JSON.parse((await ctx.files.read(file)) ?? '{}') as { name?: string; type?: string; bridge?: string; plugins?: { type?: string; bridge?: string }[] };
    const plugins = doc.plugins ?? [doc];
    const bridge = plugins.find((p) => p.type === 'bridge')?.bridge ?? (plugins.some((p) => p.type === 'bridge' || p.type === 'flannel') ? 'cni0' : undefined);
    return { file, name: doc.name, bridge };
  } catch {
    return { file };
  }
}

/** Reads the facts (read-only; also under dry-run). */
export async function ownershipFacts(ctx: Ctx): Promise<OwnershipFacts> {
  const recorded = parseOwnedManifest(await ctx.files.read(OWNED_MANIFEST));
  const p = ctx.config.distro.paths;
  const dropIn = join(p.systemdDir, `${ctx.config.distro.units.kubelet}.d`, '20-kubeception.conf');
  const kubelet = !!recorded?.has(join(p.kubeletConfigDir, 'config.yaml')) || !!recorded?.has(dropIn) || ((await ctx.files.read(dropIn))?.startsWith(HEADER) ?? false);
  const flannel = kubelet && ctx.config.podNetwork.plugin === 'flannel';
  const confText = await ctx.files.read(join(CNI_CONF_DIR, FLANNEL_CONFLIST));
  let flannelConfOurs = false;
  try {
    flannelConfOurs = flannel && confText !== undefined && JSON.stringify(JSON.parse(confText)) === JSON.stringify(flannelCniConf());
  } catch {}
  const net = kubelet ? await podNetwork(ctx) : undefined;
  // containerd's CRI plugin gives every pod sandbox a loopback network of its own name, `cni-loopback`.
  const networks = [...new Set([...(net?.name ? [net.name] : []), ...(flannel ? [String(flannelCniConf().name)] : []), ...(kubelet ? [CRI_LOOPBACK_NETWORK] : [])])];
  return { recorded, kubelet, flannel, networks, bridge: net?.bridge ?? (flannel ? 'cni0' : undefined), flannelConfOurs };
}

/** The netfilter claims of these facts. */
export const chainOwnership = (f: OwnershipFacts): ChainOwnership => ({ kube: f.kubelet, flannel: f.flannel, networks: f.networks });

/** kubeception-only names (proof 2 by name). */
export function markedByName(config: ResolvedConfig, path: string): boolean {
  const p = config.distro.paths;
  const recovery = join(p.secretsDir, 'recovery');
  return [join(config.certificatesDir, 'kubeception-join.crt'), join(config.certificatesDir, 'kubeception-join.key'), join(p.staticPodPath, 'recovery-kube-apiserver.yaml')].includes(path)
    || (path.startsWith(`${p.staticPodPath}/bootstrap-kube-`) && path.endsWith('.yaml'))
    || path === recovery || path.startsWith(`${recovery}/`) || path === '/run/kubeception' || path.startsWith('/run/kubeception/');
}

/** Files kubeception marks with {@link HEADER} (proof 2 by content). */
export function headerMarked(config: ResolvedConfig): string[] {
  const p = config.distro.paths;
  return [join(p.systemdDir, `${config.distro.units.kubelet}.d`, '20-kubeception.conf'), join(p.systemdDir, RECOVERY_UNIT), join(p.systemdDir, SNAPSHOT_SERVICE), join(p.systemdDir, SNAPSHOT_TIMER), p.etcdEnvironmentFile, etcdDropIn(config)];
}

/** Whether the kubelet-made path `path` (under the kubelet's directory) is ours. */
const kubeletMade = (config: ResolvedConfig, f: OwnershipFacts, path: string) => f.kubelet && path.startsWith(`${config.distro.paths.kubeletConfigDir}/`);

/**
 * Why `path` (a candidate of lib/reset/owned.ts, or a file found in a scanned directory) is ours, or
 * undefined if it is not proven ours. `read` gives a file's text (for the header marks).
 */
export async function proofOf(config: ResolvedConfig, f: OwnershipFacts, path: string, read: (p: string) => Promise<string | undefined>): Promise<string | undefined> {
  if (f.recorded?.has(path)) return 'recorded';
  if (markedByName(config, path)) return 'kubeception\'s name';
  if (headerMarked(config).includes(path) && (await read(path))?.startsWith(HEADER)) return 'kubeception\'s header';
  if (path === config.etcd.dataDir && (await read(join(path, ETCD_OWNER_MARKER))) !== undefined) return 'kubeception\'s owner marker';
  if (path === join(CNI_CONF_DIR, FLANNEL_CONFLIST)) return f.flannelConfOurs ? 'kubeception\'s flannel config' : undefined;
  if ((path === '/run/flannel' || path === '/var/lib/cni/flannel') && f.flannel) return 'flannel of this cluster';
  for (const n of f.networks)
    if (path === `/var/lib/cni/networks/${n}` || (path.startsWith('/var/lib/cni/results/') && basename(path).startsWith(`${n}-`))) return `CNI network ${n} of this cluster`;
  // Kubelet state: the trees and state files under its directory, but not the files kubeception writes there (recorded or not).
  const k = config.distro.paths.kubeletConfigDir;
  const written = ['config.yaml', 'kubeconfig', 'bootstrap-kubeconfig'].map((n) => join(k, n));
  if (!written.includes(path) && kubeletMade(config, f, path) && isCandidate(path, ownedPaths(config))) return 'the kubelet of this cluster';
  return undefined;
}

/** Whether a link is this cluster's (see the module doc). */
export function linkIsOurs(f: OwnershipFacts, l: { ifname: string; master?: string; kind?: string }): boolean {
  if (f.bridge && (l.ifname === f.bridge || (l.master === f.bridge && /^veth/.test(l.ifname)))) return f.kubelet;
  if (/^flannel[.\w-]*$/.test(l.ifname)) return f.flannel;
  return f.kubelet && ['kube-ipvs0', 'kube-bridge', 'kube-dummy-if', 'nodelocaldns'].includes(l.ifname);
}

/** Links that may be the cluster's by name (the rest of a host's links are not considered at all). */
export const CANDIDATE_LINK = /^(cni0|flannel[.\w-]*|veth[0-9a-f]+|kube-ipvs0|kube-bridge|kube-dummy-if|nodelocaldns)$/;

/** Where a reset keeps the facts it decided on, so a reset killed midway (its removals drop paths from the manifest) finishes with the same ones. */
export const RESET_FACTS = '/var/lib/kubeception/reset-facts.json';

/**
 * The facts of this reset: read once per run, before anything is removed, and kept in
 * {@link RESET_FACTS} until a reset ends clean (a killed reset's next run reuses them).
 */
export async function resetFacts(ctx: Pick<Context<object, Pick<ResetState, 'resetFacts'>>, 'files' | 'config' | 'state' | 'dryRun'>): Promise<OwnershipFacts> {
  if (ctx.state.resetFacts) return ctx.state.resetFacts;
  let facts: OwnershipFacts | undefined;
  try {
    const saved = JSON.parse((await ctx.files.read(RESET_FACTS)) ?? 'null') as (Omit<OwnershipFacts, 'recorded'> & { recorded?: [string, OwnedKind][] }) | null;
    if (saved) facts = { ...saved, recorded: saved.recorded ? new Map(saved.recorded) : undefined };
  } catch {}
  facts ??= await ownershipFacts(ctx);
  if (!ctx.dryRun) await ctx.files.write(RESET_FACTS, `${JSON.stringify({ ...facts, recorded: facts.recorded ? [...facts.recorded] : undefined })}\n`, { mode: 0o600, dirMode: 0o700 });
  ctx.state.resetFacts = facts;
  return facts;
}
