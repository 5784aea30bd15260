/**
 * The kubeception test bed: simulated hosts, each a systemd-nspawn container that boots a throw-away
 * overlay of this machine's own root with a real systemd as PID 1, its own system D-Bus, its own network
 * namespace on a private bridge (10.250.0.0/16), and its own cgroups.
 *
 * ```ts
 * const host = await bootHost({ name: 'a', hostname: 'Node-A' });
 * const r = await host.exec(['npx', 'kubeception', 'run', 'bootstrap'], { cwd: REPO_ROOT });
 * await destroyAllHosts();
 * ```
 * State lives under /run/kubeception-bed, so a fresh process can tear everything down.
 * Needs root. node:child_process / node:fs only.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { allocateIp, ensureBedNet, ensureHostNet, hostNetns, validHostIp, vethName } from './net.ts';
import { type ExecResult, runOk } from './proc.ts';
import { type Bind, diskDir, type HostState, listStates, readState, withLock, writeState } from './state.ts';
import { destroyAllHosts, destroyHost } from './teardown.ts';
import { containerdBinds, defaultContainerd, defaultEtcd, etcdBinds, type RuntimeVariant } from './runtime.ts';
import { CACHE_DIR, Host, REPO_ROOT } from './bed-host.ts';

export type { Bind, ExecResult };
export { destroyAllHosts };
export { BED_CIDR, BRIDGE_IP } from './net.ts';
export { CACHE_DIR, Host, type HostExecOptions, K8S_VERSION, REPO_ROOT } from './bed-host.ts';

const NAME_RE = /^[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?$/;

export interface BootOptions {
  /** Host name in the bed: [a-z0-9-], ≤ 22 chars. Names the netns `kc-<name>`. */
  name: string;
  /** Address in 10.250.0.0/16; default: the lowest free from 10.250.0.10. */
  ip?: string;
  /** Kernel hostname inside the host (may be upper-case, e.g. "Node-A"); default: name. */
  hostname?: string;
  /** More bind mounts. The repo root (see repoMount) and the cache dir (read-only) are always there. */
  extraBinds?: Bind[];
  /**
   * How the repo root appears at its own path inside the host: 'overlay' (default) — writable, changes
   * stay in the host; 'ro' — read-only bind; 'rw' — read-write bind (changes reach the checkout).
   */
  repoMount?: 'overlay' | 'ro' | 'rw';
  /** Also run prepareKubeletHost() (containerd, images, kubelet unit, CNI). Default false. */
  kubelet?: boolean | import('./kubelet.ts').KubeletHostOptions;
  /** How long to wait for systemd to finish booting. Default 60 000. */
  bootTimeoutMs?: number;
  /**
   * The etcd the host's etcd.service runs (test/bed/runtime.ts): `bed` — etcd 3.6 built from the Go
   * module proxy (build-etcd.sh), bind-mounted over /usr/bin/etcd{,ctl,utl}; `debian` — the machine's
   * Debian etcd 3.4. Default `KUBECEPTION_BED_ETCD`, else `bed`.
   */
  etcd?: RuntimeVariant;
  /**
   * The containerd the host's containerd.service runs: `bed` — containerd 2 built from the Go module
   * proxy (build-containerd.sh), over /usr/bin/{containerd,containerd-shim-runc-v2,ctr}, configured with
   * a version 3 config; `debian` — the machine's containerd 1.6 (version 2 config). Default
   * `KUBECEPTION_BED_CONTAINERD`, else `bed`.
   */
  containerd?: RuntimeVariant;
  /**
   * `kubic`: a Kubic-like host (test/bed/kubic.ts): read-only /usr, CRI-O (build-crio.sh) instead of
   * containerd, the kubelet at /usr/bin/kubelet, etcd's environment in /etc/sysconfig/etcd; always a
   * kubelet host (`kubelet` then takes `{ version?, cni? }`; its `cni` defaults to `none`, for flannel).
   * Default `debian`: the plain host, unchanged.
   */
  flavour?: 'debian' | 'kubic';
}


/**
 * Boots a new host and waits until systemd reports `running` or `degraded` (failed units in
 * host.failedUnits). Creates the bed network on first use.
 * @throws if the name is invalid or taken, the address is outside 10.250.0.0/16 or taken, or boot fails.
 */
export async function bootHost(opts: BootOptions): Promise<Host> {
  if (process.getuid?.() !== 0) throw new Error('bed: must run as root');
  if (!NAME_RE.test(opts.name)) throw new Error(`bed: invalid host name "${opts.name}" (want [a-z0-9-], ≤ 22 chars)`);
  if (opts.ip !== undefined && !validHostIp(opts.ip)) throw new Error(`bed: ${opts.ip} is not a host address in 10.250.0.0/16`);
  const state = await withLock(async () => {
    if (readState(opts.name)) throw new Error(`bed: host ${opts.name} already exists (destroy it first)`);
    const used = new Set(listStates().map((s) => s.ip));
    if (opts.ip && used.has(opts.ip)) throw new Error(`bed: address ${opts.ip} is already used`);
    const repoMount = opts.repoMount ?? 'overlay';
    const etcd = opts.etcd ?? defaultEtcd();
    const containerd = opts.containerd ?? defaultContainerd();
    const binds: Bind[] = [{ src: REPO_ROOT, readOnly: repoMount === 'ro', overlay: repoMount === 'overlay' }];
    if (existsSync(CACHE_DIR)) binds.push({ src: CACHE_DIR, readOnly: true });
    const kubic = opts.flavour === 'kubic';
    binds.push(...etcdBinds(etcd), ...(kubic ? [] : containerdBinds(containerd)));
    const s: HostState = {
      name: opts.name,
      ip: opts.ip ?? allocateIp(used),
      hostname: opts.hostname ?? opts.name,
      netns: hostNetns(opts.name),
      veth: vethName(opts.name),
      cgroups: [],
      binds: [...binds, ...(opts.extraBinds ?? [])],
      kubelet: false,
      etcd,
      containerd,
      ...(kubic ? { flavour: 'kubic' as const } : {}),
    };
    writeState(s);
    await ensureBedNet();
    await ensureHostNet(s.name, s.ip);
    mkdirSync(diskDir(s.name), { recursive: true });
    await runOk(['mount', '-t', 'tmpfs', '-o', 'mode=0755,size=16g', `kc-bed-${s.name}`, diskDir(s.name)]);
    return s;
  });
  const host = new Host(state);
  try {
    if (state.flavour === 'kubic') {
      const { kubicBinds, prepareKubicHost, writeKubicUpper } = await import('./kubic.ts');
      const k = typeof opts.kubelet === 'object' ? opts.kubelet : {};
      state.binds.push(...kubicBinds(state.name, k.version));
      writeState(state);
      writeKubicUpper(state.name);
      await host.start(opts.bootTimeoutMs);
      await prepareKubicHost(host, { cni: k.cni ?? 'none', version: k.version, images: k.images });
    } else if (opts.kubelet) {
      const { kubeletBinds } = await import('./kubelet.ts');
      state.binds.push(...kubeletBinds(typeof opts.kubelet === 'object' ? opts.kubelet.version : undefined));
      state.kubelet = true;
      writeState(state);
    }
    if (state.flavour !== 'kubic') await host.start(opts.bootTimeoutMs);
    if (opts.kubelet && state.flavour !== 'kubic') {
      const { prepareKubeletHost } = await import('./kubelet.ts');
      await prepareKubeletHost(host, typeof opts.kubelet === 'object' ? opts.kubelet : {});
    }
  } catch (e) {
    await destroyHost(opts.name).catch(() => {});
    throw e;
  }
  return host;
}

/** A Host object for a host booted earlier (maybe by another process), or undefined. */
export function getHost(name: string): Host | undefined {
  const s = readState(name);
  return s && new Host(s);
}

export function listHosts(): Host[] {
  return listStates().map((s) => new Host(s));
}
