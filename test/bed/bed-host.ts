/**
 * One host of the test bed (test/bed/bed.ts boots them): the {@link Host} handle — exec, files,
 * binds, start/stop — and the bed's paths. test/bed/kubelet.ts prepares a host through it, without
 * importing bed.ts (which imports kubelet.ts).
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { procsFiles } from './cgroups.ts';
import { launch } from './launch.ts';
import { alive, type ExecResult, run, sleep } from './proc.ts';
import { type Bind, diskDir, type HostState, writeState } from './state.ts';
import { destroyHost, stopHost } from './teardown.ts';
import { DEFAULT_KUBERNETES_VERSION } from '../../lib/constants.ts';
import type { RuntimeVariant } from './runtime.ts';

/** Root of the kubeception checkout this file belongs to (works from any clone). */
export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** Cache of built binaries and images (see build-k8s.sh). */
export const CACHE_DIR = process.env.KUBECEPTION_CACHE ?? '/var/cache/kubeception';
/** The Kubernetes version of the bed's hosts (binaries, images): `K8S_VERSION`, else kubeception's default. */
export const K8S_VERSION = process.env.K8S_VERSION ?? DEFAULT_KUBERNETES_VERSION;

const INIT_SOURCE = join(dirname(fileURLToPath(import.meta.url)), 'init.sh');

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
  /** `kubic` for a Kubic-like host (test/bed/kubic.ts), else `debian`. */
  get flavour(): 'debian' | 'kubic' {
    return this.s.flavour ?? 'debian';
  }
  /**
   * Replaces the bind at `b.dst` (or adds it) for the next start; a running host keeps its mounts until
   * then (how test/bed/kubic.ts swaps the kubelet of a read-only /usr: the new one after a reboot).
   */
  rebind(b: Bind): void {
    const dst = b.dst ?? b.src;
    this.s.binds = [...this.s.binds.filter((x) => (x.dst ?? x.src) !== dst), b];
    writeState(this.s);
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
