/**
 * The residue report of `kubeception reset`: what of this cluster's (proven: lib/reset/ownership.ts)
 * is still on this host — processes, containers, mounts, network namespaces, links, routes to the pod
 * and service ranges, netfilter chains, listening ports, files, units — plus foreign files and state
 * (reported, never deleted) and what was kept on purpose (`--keep-etcd-data`). Read-only: every probe runs
 * through `ctx.sh.read` / `ctx.files`, so it also runs under `--dry-run`.
 */
import { hardeningPaths } from '../../manifests/apiserver-hardening.ts';
import { cidrContains, parseCidr, type Cidr } from '../net/cidr.ts';
import { OWNED_MANIFEST } from '../host/owned-manifest.ts';
import { criContainers, criPods, isContainerd } from '../host/crictl.ts';
import { chains, files, links, mounts, netns, read } from './cluster-state.ts';
import { ownershipFacts } from './ownership.ts';
import { OWN_COMMANDS, OWN_PORTS, OWN_PROCESSES, RECOVERY_UNIT, SNAPSHOT_TIMER } from './owned.ts';
import type { Context } from '../context.ts';
import type { ResetContext, ResetOptions } from '../steps/contexts.ts';

export { CATEGORIES, type Category, type ResidueReport } from './types.ts';
import { CATEGORIES, type ResidueReport } from './types.ts';

type Ctx = Pick<Context<Pick<ResetOptions, 'keepEtcdData'>>, 'sh' | 'files' | 'config' | 'systemd' | 'options'>;

/** Processes of the components and of kubeception's own services. */
export async function processes(ctx: Ctx): Promise<string[]> {
  const out = await read(ctx, ['ps', '-eo', 'pid=,comm=,args=']);
  return out.split('\n').map((l) => l.trim()).filter(Boolean).flatMap((l) => {
    const [pid, comm = '', ...args] = l.split(/\s+/);
    const cmd = args.join(' ');
    return OWN_PROCESSES.includes(comm) || OWN_COMMANDS.some((c) => cmd.includes(c)) ? [`${pid} ${comm}`] : [];
  });
}

/**
 * The kubelet's containers: containerd's `k8s.io` namespace (`ctr`), or for another runtime (CRI-O)
 * every pod sandbox and container it holds through the CRI (`crictl`: `pod <id>`, `container <id>`).
 */
export async function containers(ctx: Ctx): Promise<string[]> {
  const sock = ctx.config.kubelet.criSocket.replace(/^unix:\/\//, '');
  if (!(await ctx.files.exists(sock))) return [];
  if (!isContainerd(ctx)) return [...(await criPods(ctx)).map((id) => `pod ${id}`), ...(await criContainers(ctx)).map((id) => `container ${id}`)];
  return (await read(ctx, ['ctr', '--address', sock, '-n', 'k8s.io', 'containers', 'ls', '-q'])).split('\n').filter(Boolean);
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

/** Listening TCP sockets on the components' ports. */
export async function ports(ctx: Ctx): Promise<string[]> {
  const out = await read(ctx, ['ss', '-Hltn']);
  return out.split('\n').flatMap((l) => {
    const local = l.trim().split(/\s+/)[3] ?? '';
    const port = Number(local.slice(local.lastIndexOf(':') + 1));
    return OWN_PORTS.includes(port) ? [local] : [];
  });
}

/** Units still running or enabled: the kubelet, etcd (unless its data is kept and it is stopped), the recovery watcher, the snapshot timer. */
export async function units(ctx: Ctx): Promise<string[]> {
  const out: string[] = [];
  for (const u of [ctx.config.distro.units.kubelet, ctx.config.distro.units.etcd, RECOVERY_UNIT, SNAPSHOT_TIMER]) {
    const active = await ctx.systemd.activeState(u).catch(() => 'unknown');
    const file = await ctx.systemd.unitFileState(u).catch(() => 'unknown');
    if (active === 'active' || active === 'activating' || file === 'enabled') out.push(`${u} ${active}/${file}`);
  }
  return out;
}

/** Gathers the whole report. */
export async function residueReport(ctx: Ctx): Promise<ResidueReport> {
  const facts = 'state' in ctx && (ctx as ResetContext).state?.resetFacts ? (ctx as ResetContext).state.resetFacts! : await ownershipFacts(ctx);
  const ns = await netns(ctx, facts);
  const m = await mounts(ctx, facts, ns.ours);
  const f = await files(ctx, facts, m.foreign);
  const l = await links(ctx, facts);
  const c = await chains(ctx, facts);
  const kept = ctx.options.keepEtcdData && (await ctx.files.list(ctx.config.etcd.dataDir)).length > 0 ? [ctx.config.etcd.dataDir] : [];
  const encryption = hardeningPaths(ctx.config).encryptionConfig;
  if (ctx.options.keepEtcdData && (await ctx.files.exists(encryption))) kept.push(encryption);
  // A path of ours that holds a foreign mount point is kept around it: not residue (the mount point is listed foreign).
  const holdsMount = (p: string) => m.foreign.some((x) => x === p || x.startsWith(`${p}/`));
  const residue = {
    processes: await processes(ctx), containers: await containers(ctx), mounts: m.ours, netns: ns.ours,
    links: l.ours, routes: await routes(ctx), chains: c.ours, ports: await ports(ctx), files: f.ours.filter((p) => !holdsMount(p)), units: await units(ctx),
  };
  const notes = facts.recorded ? [] : [`no ownership manifest (${OWNED_MANIFEST}): this host was not set up by this kubeception, or before it recorded its files; files it cannot prove its own (PKI, kubeconfigs at kubeadm's paths) are kept — remove them by hand if they are kubeception's`];
  return { kind: 'ResetReport', residue, foreign: f.foreign, foreignState: { mounts: m.foreign, netns: ns.foreign, links: l.foreign, chains: c.foreign }, kept, notes };
}

/** Number of residue items. */
export const residueCount = (r: ResidueReport) => CATEGORIES.reduce((n, c) => n + r.residue[c].length, 0);
