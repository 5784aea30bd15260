/**
 * This host's state, split by the rules of lib/reset/ownership.ts into the cluster's (`ours`, what a
 * reset removes) and `foreign` (kept, reported): mounts, pod network namespaces, links, netfilter
 * chains, files. Read-only: every probe runs through `ctx.sh.read` / `ctx.files` (and `/proc`
 * reads), so it also runs under `--dry-run`.
 */
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { ETCD_OWNER_MARKER } from '../constants.ts';
import { chainOwnership, CANDIDATE_LINK, linkIsOurs, proofOf, RESET_JOURNAL, type OwnershipFacts } from './ownership.ts';
import { foreignChains, ourChains } from './netfilter.ts';
import { hardeningPaths } from '../../manifests/apiserver-hardening.ts';
import { CANDIDATE_NETNS, isCandidate, ownedPaths, scannedDirs, structuralDirs } from './owned.ts';
import type { Context } from '../context.ts';
import type { ResetOptions } from '../steps/contexts.ts';

type Ctx = Pick<Context<Pick<ResetOptions, 'keepEtcdData'>>, 'sh' | 'files' | 'config' | 'options'>;
/** Ours and foreign, each sorted. */
export interface Split {
  ours: string[];
  foreign: string[];
}
const split = (ours: Iterable<string>, foreign: Iterable<string>): Split => ({ ours: [...new Set(ours)].sort(), foreign: [...new Set(foreign)].sort() });
export const read = async (ctx: Pick<Context, 'sh'>, argv: string[]) => (await ctx.sh.read(argv, { allowFail: true, timeoutMs: 20_000 }).catch(() => ({ code: 1, stdout: '' }))).stdout;

/** Decodes the octal escapes of /proc/self/mountinfo (`\040` space, `\011` tab, `\012` newline, `\134` backslash, any `\NNN`). */
export const decodeMountPath = (s: string) => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(Number.parseInt(o, 8)));

/** Every mount point of this mount namespace (field 5 of mountinfo, decoded). */
export function mountPointsOf(mountinfo: string): string[] {
  return mountinfo.split('\n').map((l) => l.split(' ')[4]).filter((m): m is string => !!m).map(decodeMountPath);
}

/** containerd's per-namespace state of its `k8s.io` namespace (the kubelet's): exact prefixes, not substrings. */
const CONTAINERD_K8S = ['/run/containerd/io.containerd.runtime.v2.task/k8s.io/', '/run/containerd/io.containerd.grpc.v1.cri/sandboxes/', '/var/lib/containerd/io.containerd.grpc.v1.cri/sandboxes/'];

/** A pod's directory under the kubelet's (`pods/<pod UID>/`), where the kubelet mounts volumes. */
const POD_UID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';

/**
 * Whether a mount point is the cluster's: a pod volume our kubelet mounted (`pods/<pod UID>/volumes/…`
 * or `volume-subpaths/…`), a CSI/plugin mount under `plugins/`, our pods' netns, containerd's k8s.io
 * state. Anything else under the kubelet's directory (an operator's bind mount at `pods/backup`, say)
 * is foreign: never unmounted, and the tree removal stops at it, so what it shows is never deleted.
 */
export function mountIsOurs(m: string, kubeletDir: string, f: OwnershipFacts, netns: readonly string[]): boolean {
  const esc = kubeletDir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  if (f.kubelet && new RegExp(`^${esc}/pods/${POD_UID}/(volumes|volume-subpaths)/`).test(m)) return true;
  if (f.kubelet && m.startsWith(`${kubeletDir}/plugins/`)) return true;
  if (m.startsWith('/run/netns/') && netns.includes(m.slice('/run/netns/'.length))) return true;
  return f.kubelet && CONTAINERD_K8S.some((p) => m.startsWith(p));
}

/** Mount points split into ours and foreign (only those in places the cluster uses are listed as foreign). */
export async function mounts(ctx: Ctx, f: OwnershipFacts, netns: readonly string[]): Promise<Split & { all: string[] }> {
  const all = mountPointsOf((await ctx.files.read('/proc/self/mountinfo')) ?? '');
  const kubelet = ctx.config.distro.paths.kubeletConfigDir;
  const ours = all.filter((m) => mountIsOurs(m, kubelet, f, netns));
  const near = [kubelet, '/run/netns', ...CONTAINERD_K8S.map((p) => p.replace(/\/$/, '')), ...ownedPaths(ctx.config).filter((o) => o.tree).map((o) => o.path)];
  const foreign = all.filter((m) => !ours.includes(m) && near.some((n) => m.startsWith(`${n}/`)));
  return { ...split(ours, foreign), all };
}

/**
 * Pod network namespaces of this cluster: those a task of containerd's `k8s.io` namespace is in
 * (matched by the namespace's inode), plus those a killed reset recorded in {@link RESET_JOURNAL}.
 */
export async function netns(ctx: Ctx, f: OwnershipFacts): Promise<Split> {
  const names = (await ctx.files.list('/run/netns')).filter((n) => CANDIDATE_NETNS.test(n));
  if (!names.length) return split([], []);
  const held = new Set<number>();
  const sock = ctx.config.kubelet.criSocket.replace(/^unix:\/\//, '');
  if (f.kubelet && (await ctx.files.exists(sock)))
    for (const line of (await read(ctx, ['ctr', '--address', sock, '-n', 'k8s.io', 'tasks', 'ls'])).split('\n').slice(1)) {
      const pid = Number(line.trim().split(/\s+/)[1]);
      if (pid > 0) await fs.stat(`/proc/${pid}/ns/net`).then((st) => held.add(st.ino), () => undefined);
    }
  let journal: string[] = [];
  try {
    journal = JSON.parse((await ctx.files.read(RESET_JOURNAL)) ?? '[]');
  } catch {}
  const ours: string[] = [];
  for (const n of names) {
    const ino = await fs.stat(join('/run/netns', n)).then((st) => st.ino, () => -1);
    if (held.has(ino) || journal.includes(n)) ours.push(n);
  }
  return split(ours, names.filter((n) => !ours.includes(n)));
}

/** Links that may be the cluster's by name, split by {@link linkIsOurs}. */
export async function links(ctx: Ctx, f: OwnershipFacts): Promise<Split> {
  const list = JSON.parse((await read(ctx, ['ip', '-j', 'link', 'show'])) || '[]') as { ifname: string; master?: string }[];
  const cands = list.filter((l) => CANDIDATE_LINK.test(l.ifname));
  return split(cands.filter((l) => linkIsOurs(f, l)).map((l) => l.ifname), cands.filter((l) => !linkIsOurs(f, l)).map((l) => l.ifname));
}

/** The iptables backends present, as `[cmd, save output]`. */
export async function iptablesDumps(ctx: Ctx): Promise<[string, string][]> {
  const out: [string, string][] = [];
  for (const cmd of ['iptables-nft', 'ip6tables-nft', 'iptables-legacy', 'ip6tables-legacy']) if (await ctx.sh.which(`${cmd}-save`)) out.push([cmd, await read(ctx, [`${cmd}-save`])]);
  return out;
}

/** nftables tables of kube-proxy (nftables mode) and flannel, ours when the kubelet / flannel is. */
export function nftTableIsOurs(f: OwnershipFacts, name: string): boolean {
  return (f.kubelet && name.startsWith('kube-proxy')) || (f.flannel && name.startsWith('flannel'));
}

/** iptables chains (every backend) and nftables tables, split. */
export async function chains(ctx: Ctx, f: OwnershipFacts): Promise<Split> {
  const ours: string[] = [];
  const foreign: string[] = [];
  const own = chainOwnership(f);
  for (const [cmd, save] of await iptablesDumps(ctx)) {
    for (const [t, c] of ourChains(save, own)) ours.push(`${cmd} ${t} ${c}`);
    for (const [t, c] of foreignChains(save, own)) foreign.push(`${cmd} ${t} ${c}`);
  }
  for (const line of (await read(ctx, ['nft', 'list', 'tables'])).split('\n')) {
    const [, family, name] = line.trim().split(/\s+/);
    if (!name || !/^(kube-proxy|flannel)/.test(name)) continue;
    (nftTableIsOurs(f, name) ? ours : foreign).push(`nft table ${family} ${name}`);
  }
  return split(ours, foreign);
}

/**
 * Files: every candidate that exists and every entry of the scanned directories, split by proof;
 * `dirs` are recorded directories kubeception created (removed only once empty). Paths holding a
 * foreign mount point are not removed (the mount point is listed foreign).
 */
export async function files(ctx: Ctx, f: OwnershipFacts, foreignMounts: readonly string[] = []): Promise<Split & { dirs: string[] }> {
  const { config } = ctx;
  const owned = ownedPaths(config);
  const structural = structuralDirs(config, owned);
  const ours = new Set<string>();
  const foreign = new Set<string>();
  const readText = (p: string) => ctx.files.read(p).catch(() => undefined);
  const judge = async (path: string) => ((await proofOf(config, f, path, readText)) ? ours : foreign).add(path);
  const walk = async (dir: string, depth: number): Promise<void> => {
    for (const name of await ctx.files.list(dir).catch(() => [] as string[])) {
      const path = join(dir, name);
      if (isCandidate(path, owned) || (await proofOf(config, f, path, readText))) await judge(path);
      else if (structural.has(path)) continue;
      else if (depth > 0 && (await ctx.files.list(path).catch(() => [])).length > 0) await walk(path, depth - 1);
      else foreign.add(path);
    }
  };
  for (const d of scannedDirs(config)) await walk(d, 0);
  for (const o of owned) if (await ctx.files.exists(o.path)) await judge(o.path);
  for (const [p, kind] of f.recorded ?? []) if (kind === 'file' && (await ctx.files.exists(p))) ours.add(p);
  const env = config.distro.paths.etcdEnvironmentFile;
  if (await ctx.files.exists(env)) await judge(env);
  const etcd = config.etcd.dataDir;
  if ((await ctx.files.list(etcd)).length > 0 && !ctx.options.keepEtcdData) (await ctx.files.exists(join(etcd, ETCD_OWNER_MARKER)) ? ours : foreign).add(etcd);
  // --keep-etcd-data keeps the encryption-at-rest key too: the kept data's Secrets are readable only with it.
  if (ctx.options.keepEtcdData) ours.delete(hardeningPaths(config).encryptionConfig);
  // A tree of ours that holds a foreign mount point stays (its other content goes: removeTree skips the mount).
  for (const m of foreignMounts) foreign.add(`${m} (mount point, kept)`);
  const dirs = [...(f.recorded ?? [])].filter(([p, k]) => k === 'dir' && !ours.has(p)).map(([p]) => p);
  return { ...split(ours, [...foreign].filter((p) => !ours.has(p))), dirs };
}
