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
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { procsFiles } from './cgroups.ts';
import { launch } from './launch.ts';
import { allocateIp, ensureBedNet, ensureHostNet, hostNetns, validHostIp, vethName } from './net.ts';
import { alive, type ExecResult, run, runOk, sleep } from './proc.ts';
import { type Bind, diskDir, type HostState, listStates, readState, withLock, writeState } from './state.ts';
import { destroyAllHosts, destroyHost, stopHost } from './teardown.ts';
import { DEFAULT_KUBERNETES_VERSION } from '../../lib/constants.ts';
import { containerdBinds, defaultContainerd, defaultEtcd, etcdBinds, type RuntimeVariant } from './runtime.ts';

export type { Bind, ExecResult };
export { destroyAllHosts };
export { BED_CIDR, BRIDGE_IP } from './net.ts';

/** Root of the kubeception checkout this file belongs to (works from any clone). */
export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** Cache of built binaries and images (see build-k8s.sh). */
export const CACHE_DIR = process.env.KUBECEPTION_CACHE ?? '/var/cache/kubeception';
/** The Kubernetes version of the bed's hosts (binaries, images): `K8S_VERSION`, else kubeception's default. */
export const K8S_VERSION = process.env.K8S_VERSION ?? DEFAULT_KUBERNETES_VERSION;

const INIT_SOURCE = join(dirname(fileURLToPath(import.meta.url)), 'init.sh');
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
}

export interface HostExecOptions {
  input?: string | Buffer;
  /** Extra environment; the base is PATH (incl. /usr/local/bin and node's dir), HOME=/root, LANG. */
  env?: Record<string, string>;
  /** Working directory inside the host. Default '/'. */
  cwd?: string;
  /** Kill the command after this many ms (result code 124). Default: no limit. */
  timeoutMs?: number;
}

const BASE_PATH = `/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`;

/** A running (or stopped) bed host. Get one from bootHost() or getHost(). */
export class Host {
  /** Units that had failed when the host reached `degraded` (empty when `running`). */
  failedUnits: string[] = [];

  constructor(private s: HostState) {}

  get name(): string {
    return this.s.name;
  }
  get ip(): string {
    return this.s.ip;
  }
  get hostname(): string {
    return this.s.hostname;
  }
  /** PID of the host's PID 1 (systemd) as seen from the root namespace. Throws if the host is stopped. */
  get pid(): number {
    if (!this.s.pid1) throw new Error(`bed: host ${this.name} is not running`);
    return this.s.pid1.pid;
  }
  /** D-Bus address of the host's system bus, usable from the machine (root). */
  get busAddress(): string {
    return `unix:path=${diskDir(this.name)}/dbus/system_bus_socket`;
  }
  /** The host's network namespace name (`kc-<name>`) in /run/netns. */
  get netns(): string {
    return this.s.netns;
  }
  get running(): boolean {
    return alive(this.s.pid1);
  }
  /** Which etcd and containerd the host runs (test/bed/runtime.ts). */
  get runtime(): { etcd: RuntimeVariant; containerd: RuntimeVariant } {
    return { etcd: this.s.etcd ?? 'bed', containerd: this.s.containerd ?? 'bed' };
  }
  /** Pod CIDR of the host's bridge CNI (set by prepareKubeletHost), or undefined. */
  get podSubnet(): string | undefined {
    return this.s.podSubnet;
  }
  setPodSubnet(cidr: string): void {
    this.s.podSubnet = cidr;
    writeState(this.s);
  }

  /**
   * Adds a bind mount, kept for every later start. If the host is running, it is also mounted now, which
   * works when `src` is visible inside the host (the repo root and the cache dir are).
   */
  async bind(b: Bind): Promise<void> {
    const dst = b.dst ?? b.src;
    if (!this.s.binds.some((x) => (x.dst ?? x.src) === dst)) {
      this.s.binds.push(b);
      writeState(this.s);
    }
    if (!this.running || (await this.exec(['findmnt', '-n', '--mountpoint', dst])).code === 0) return;
    const script = `set -e
if [ -d "$1" ]; then mkdir -p "$2"; else mkdir -p "$(dirname "$2")"; [ -e "$2" ] || touch "$2"; fi
mount --bind "$1" "$2"
[ "$3" = ro ] && mount -o remount,bind,ro "$2" || true`;
    await this.execOk(['sh', '-c', script, 'bind', b.src, dst, b.readOnly ? 'ro' : 'rw']);
  }

  /** Runs argv inside the host (all its namespaces, its cgroups), with a clean environment. */
  async exec(argv: readonly string[], opts: HostExecOptions = {}): Promise<ExecResult> {
    if (!this.running) throw new Error(`bed: host ${this.name} is not running`);
    const env: Record<string, string> = {
      PATH: `${BASE_PATH}:${dirname(process.execPath)}`,
      HOME: '/root',
      LANG: 'C.UTF-8',
      USER: 'root',
      TERM: 'dumb',
      ...opts.env,
    };
    const inner = ['env', '-i', '-C', opts.cwd ?? '/', ...Object.entries(env).map(([k, v]) => `${k}=${v}`), ...argv];
    const script = 'for f in $KCB_PROCS; do echo $$ > "$f"; done; exec nsenter -t "$KCB_PID" -a -- "$@"';
    return run(['sh', '-c', script, 'exec', ...inner], {
      input: opts.input,
      timeoutMs: opts.timeoutMs,
      env: { PATH: BASE_PATH, KCB_PID: String(this.pid), KCB_PROCS: procsFiles(this.s.cgroups, 'exec').join(' ') },
    });
  }

  /** Like exec(), but throws (with stderr) on a non-zero exit; returns stdout. */
  async execOk(argv: readonly string[], opts: HostExecOptions = {}): Promise<string> {
    const r = await this.exec(argv, opts);
    if (r.code !== 0) {
      throw new Error(`bed: \`${argv.join(' ')}\` on ${this.name} exited ${r.code}\n${r.stderr.trim() || r.stdout.trim()}`);
    }
    return r.stdout;
  }

  /** Contents of a file inside the host (UTF-8). Throws if it does not exist. */
  readFile(path: string): Promise<string> {
    return this.execOk(['cat', '--', path]);
  }

  /** Writes a file inside the host (parent dirs created), with an octal mode (default 0644). */
  async writeFile(path: string, content: string | Buffer, mode = 0o644): Promise<void> {
    const script = 'mkdir -p "$(dirname "$1")" && cat > "$1" && chmod "$2" "$1"';
    await this.execOk(['sh', '-c', script, 'write', path, mode.toString(8)], { input: content });
  }

  /** The last `lines` journal lines of a unit inside the host (for failure messages). */
  async journal(unit: string, lines = 100): Promise<string> {
    const r = await this.exec(['journalctl', '-u', unit, '-n', String(lines), '--no-pager', '-o', 'short-precise']);
    return r.stdout || r.stderr;
  }

  async exists(path: string): Promise<boolean> {
    return (await this.exec(['test', '-e', path])).code === 0;
  }

  /** Powers the host off (SIGRTMIN+3 to systemd; SIGKILL after timeoutMs). Files stay; processes die. */
  async stop(timeoutMs = 30_000): Promise<void> {
    await stopHost(this.s, timeoutMs);
  }

  /**
   * A power cut: SIGKILL to the host's PID 1, so every process of the host (systemd, etcd, containerd,
   * the kubelet, every container) dies at once with no clean shutdown; then nspawn. Files stay (the disk
   * tmpfs), `/run` and `/tmp` inside are gone on the next start(), as after a real power loss.
   */
  async powerCut(): Promise<void> {
    await stopHost(this.s, 0);
  }

  /** Boots the stopped host again from the same upper dir (a reboot keeps its files). */
  async start(bootTimeoutMs = 60_000): Promise<void> {
    if (this.running) return;
    const { nspawn, pid1 } = await launch(this.s, INIT_SOURCE);
    Object.assign(this.s, { nspawn, pid1 });
    writeState(this.s);
    this.failedUnits = await waitBooted(this, bootTimeoutMs);
  }

  /** Stops the host and removes everything it had: files, mounts, netns, cgroups. Idempotent. */
  async destroy(): Promise<void> {
    await destroyHost(this.s.name);
  }
}

async function waitBooted(host: Host, timeoutMs: number): Promise<string[]> {
  const end = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < end) {
    const left = Math.max(1_000, end - Date.now());
    const r = await host.exec(['systemctl', 'is-system-running', '--wait'], { timeoutMs: left });
    last = (r.stdout.trim() || r.stderr.trim()).split('\n').pop() ?? '';
    if (last === 'running') return [];
    if (last === 'degraded') {
      const failed = await host.exec(['systemctl', 'list-units', '--failed', '--plain', '--no-legend']);
      const units = failed.stdout.split('\n').filter(Boolean).map((l) => l.split(/\s+/)[0] ?? l);
      process.stderr.write(`bed: host ${host.name} is degraded; failed units: ${units.join(', ')}\n`);
      return units;
    }
    if (!host.running) break;
    await sleep(100);
  }
  throw new Error(`bed: host ${host.name} did not finish booting in ${timeoutMs} ms (last state: ${last || 'none'})`);
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
    binds.push(...etcdBinds(etcd), ...containerdBinds(containerd));
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
    if (opts.kubelet) {
      const { kubeletBinds } = await import('./kubelet.ts');
      state.binds.push(...kubeletBinds(typeof opts.kubelet === 'object' ? opts.kubelet.version : undefined));
      state.kubelet = true;
      writeState(state);
    }
    await host.start(opts.bootTimeoutMs);
    if (opts.kubelet) {
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
