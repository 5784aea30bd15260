/**
 * The residue report of `kubeception reset`: what of kubeception's (see {@link ./owned.ts}) is still
 * on this host — processes, containers, mounts, network namespaces, links, routes to the pod and
 * service ranges, netfilter chains, listening ports, files, units — plus foreign files (reported,
 * never deleted) and what was kept on purpose (`--keep-etcd-data`). Read-only: every probe runs
 * through `ctx.sh.read` / `ctx.files`, so it also runs under `--dry-run`.
 */
import { join } from 'node:path';
import { ETCD_OWNER_MARKER } from '../constants.ts';
import { cidrContains, parseCidr, type Cidr } from '../net/cidr.ts';
import { chainsOf } from './netfilter.ts';
import { isOwned, OWN_COMMANDS, OWN_LINK, OWN_NETNS, OWN_NFT_TABLE, OWN_PORTS, OWN_PROCESSES, ownedPaths, RECOVERY_UNIT, scannedDirs, structuralDirs } from './owned.ts';
import type { Context } from '../context.ts';

/** Residue categories, in report order. */
export const CATEGORIES = ['processes', 'containers', 'mounts', 'netns', 'links', 'routes', 'chains', 'ports', 'files', 'units'] as const;
export type Category = (typeof CATEGORIES)[number];

/** The report. `residue` lists what of ours remains per category (empty: clean). */
export interface ResidueReport {
  kind: 'ResetReport';
  residue: Record<Category, string[]>;
  /** Files in the scanned directories kubeception did not write: kept. */
  foreign: string[];
  /** What was kept on purpose (e.g. the etcd data dir under `--keep-etcd-data`). */
  kept: string[];
}

type Ctx = Pick<Context, 'sh' | 'files' | 'config' | 'systemd' | 'options'>;
const read = async (ctx: Ctx, argv: string[]) => (await ctx.sh.read(argv, { allowFail: true, timeoutMs: 20_000 }).catch(() => ({ code: 1, stdout: '' }))).stdout;

/** Processes of the components and of kubeception's own services. */
export async function processes(ctx: Ctx): Promise<string[]> {
  const out = await read(ctx, ['ps', '-eo', 'pid=,comm=,args=']);
  return out.split('\n').map((l) => l.trim()).filter(Boolean).flatMap((l) => {
    const [pid, comm = '', ...args] = l.split(/\s+/);
    const cmd = args.join(' ');
    return OWN_PROCESSES.includes(comm) || OWN_COMMANDS.some((c) => cmd.includes(c)) ? [`${pid} ${comm}`] : [];
  });
}

/** Containers in containerd's `k8s.io` namespace (the kubelet's). */
export async function containers(ctx: Ctx): Promise<string[]> {
  const sock = ctx.config.kubelet.criSocket.replace(/^unix:\/\//, '');
  if (!(await ctx.files.exists(sock))) return [];
  return (await read(ctx, ['ctr', '--address', sock, '-n', 'k8s.io', 'containers', 'ls', '-q'])).split('\n').filter(Boolean);
}

/** Mount points of the kubelet's volumes, pod network namespaces and the kubelet's containers. */
export async function mounts(ctx: Ctx): Promise<string[]> {
  const text = (await ctx.files.read('/proc/self/mountinfo')) ?? '';
  const kubelet = `${ctx.config.distro.paths.kubeletConfigDir}/`;
  const ours = (m: string) => m.startsWith(kubelet) || /^\/run\/netns\/cni-/.test(m) || m.includes('/k8s.io/') || m.includes('/io.containerd.grpc.v1.cri/sandboxes/');
  return text.split('\n').map((l) => l.split(' ')[4]?.replace(/\\040/g, ' ')).filter((m): m is string => !!m && ours(m));
}

/** Pod network namespaces. */
export async function netns(ctx: Ctx): Promise<string[]> {
  return (await ctx.files.list('/run/netns')).filter((n) => OWN_NETNS.test(n));
}

/** Links of the CNI, flannel and kube-proxy. */
export async function links(ctx: Ctx): Promise<string[]> {
  const list = JSON.parse((await read(ctx, ['ip', '-j', 'link', 'show'])) || '[]') as { ifname: string }[];
  return list.map((l) => l.ifname).filter((n) => OWN_LINK.test(n));
}

/** Routes whose destination lies in the pod or service subnet. */
export async function routes(ctx: Ctx): Promise<string[]> {
  const ranges = [ctx.config.networking.podSubnet, ctx.config.networking.serviceSubnet].flatMap((s) => s.split(',')).map((s) => parseCidr(s.trim())).filter((c): c is Cidr => typeof c !== 'string');
  const out: string[] = [];
  for (const fam of ['-4', '-6']) {
    const list = JSON.parse((await read(ctx, ['ip', fam, '-j', 'route', 'show', 'table', 'all'])) || '[]') as { dst: string; dev?: string }[];
    for (const r of list) {
      const ip = r.dst?.split('/')[0] ?? '';
      if (ip && ip !== 'default' && ranges.some((c) => cidrContains(c, ip))) out.push(`${r.dst}${r.dev ? ` dev ${r.dev}` : ''}`);
    }
  }
  return out;
}

/** iptables chains (every backend found) and nftables tables of ours. */
export async function chains(ctx: Ctx): Promise<string[]> {
  const out = new Set<string>();
  for (const save of ['iptables-nft-save', 'ip6tables-nft-save', 'iptables-legacy-save', 'ip6tables-legacy-save'])
    if (await ctx.sh.which(save)) for (const [table, chain] of chainsOf(await read(ctx, [save]))) out.add(`${save.replace(/-save$/, '')} ${table} ${chain}`);
  for (const line of (await read(ctx, ['nft', 'list', 'tables'])).split('\n')) {
    const [, family, name] = line.trim().split(/\s+/);
    if (name && OWN_NFT_TABLE.test(name)) out.add(`nft table ${family} ${name}`);
  }
  return [...out];
}

/** Listening TCP sockets on the components' ports. */
export async function ports(ctx: Ctx): Promise<string[]> {
  const out = await read(ctx, ['ss', '-Hltn']);
  return out.split('\n').flatMap((l) => {
    const local = l.trim().split(/\s+/)[3] ?? '';
    const port = Number(local.slice(local.lastIndexOf(':') + 1));
    return OWN_PORTS.includes(port) ? [local] : [];
  });
}

/** Units still running or enabled: the kubelet, etcd (unless its data is kept and it is stopped), the recovery watcher. */
export async function units(ctx: Ctx): Promise<string[]> {
  const out: string[] = [];
  for (const u of [ctx.config.distro.units.kubelet, ctx.config.distro.units.etcd, RECOVERY_UNIT]) {
    const active = await ctx.systemd.activeState(u).catch(() => 'unknown');
    const file = await ctx.systemd.unitFileState(u).catch(() => 'unknown');
    if (active === 'active' || active === 'activating' || file === 'enabled') out.push(`${u} ${active}/${file}`);
  }
  return out;
}

/** Every file under the scanned directories (recursively), split into ours and foreign. */
export async function files(ctx: Ctx): Promise<{ ours: string[]; foreign: string[] }> {
  const owned = ownedPaths(ctx.config);
  const structural = structuralDirs(ctx.config, owned);
  const ours = new Set<string>();
  const foreign = new Set<string>();
  const walk = async (dir: string, depth: number): Promise<void> => {
    for (const name of await ctx.files.list(dir)) {
      const path = join(dir, name);
      if (isOwned(path, owned)) ours.add(path);
      else if (structural.has(path)) continue;
      else if (depth > 0 && (await ctx.files.list(path)).length > 0) await walk(path, depth - 1);
      else foreign.add(path);
    }
  };
  for (const d of scannedDirs(ctx.config)) await walk(d, 0);
  for (const o of owned) if (await ctx.files.exists(o.path)) ours.add(o.path);
  const env = ctx.config.distro.paths.etcdEnvironmentFile;
  if ((await ctx.files.read(env))?.startsWith('# Written by kubeception')) ours.add(env);
  const etcd = ctx.config.etcd.dataDir;
  if ((await ctx.files.list(etcd)).length > 0 && !ctx.options.keepEtcdData) {
    if (await ctx.files.exists(join(etcd, ETCD_OWNER_MARKER))) ours.add(etcd);
    else foreign.add(etcd);
  }
  return { ours: [...ours].sort(), foreign: [...foreign].sort() };
}

/** Gathers the whole report. */
export async function residueReport(ctx: Ctx): Promise<ResidueReport> {
  const f = await files(ctx);
  const kept = ctx.options.keepEtcdData && (await ctx.files.list(ctx.config.etcd.dataDir)).length > 0 ? [ctx.config.etcd.dataDir] : [];
  const residue = {
    processes: await processes(ctx), containers: await containers(ctx), mounts: await mounts(ctx), netns: await netns(ctx),
    links: await links(ctx), routes: await routes(ctx), chains: await chains(ctx), ports: await ports(ctx), files: f.ours, units: await units(ctx),
  };
  return { kind: 'ResetReport', residue, foreign: f.foreign, kept };
}

/** Number of residue items. */
export const residueCount = (r: ResidueReport) => CATEGORIES.reduce((n, c) => n + r.residue[c].length, 0);
