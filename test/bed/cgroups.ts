/**
 * Per-host cgroups in every mounted hierarchy (v1 controllers, name=systemd, and the cgroup2 one).
 * Each host gets `<own cgroup>/kubeception-bed/<name>` below the current process's cgroup in that
 * hierarchy; without this, two hosts collide in nspawn's `payload/` and in the kubelet's `/kubepods`.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';

const BED_GROUP = 'kubeception-bed';

interface Hierarchy {
  mountpoint: string;
  /** The controller list as /proc/self/cgroup names it ('' for cgroup2). */
  key: string;
}

function hierarchies(): Hierarchy[] {
  const out: Hierarchy[] = [];
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const [pre = '', post] = line.split(' - ');
    if (!post) continue;
    const [fstype, , superOpts = ''] = post.split(' ');
    const mountpoint = pre.split(' ')[4] ?? '';
    if (!mountpoint.startsWith('/sys/fs/cgroup')) continue;
    if (fstype === 'cgroup2') out.push({ mountpoint, key: '' });
    if (fstype === 'cgroup') {
      const generic = ['rw', 'ro', 'xattr', 'noprefix', 'clone_children', 'cpuset_v2_mode', 'favordynmods'];
      const opts = superOpts.split(',').filter((o) => o.startsWith('name=') || (!o.includes('=') && !generic.includes(o)));
      out.push({ mountpoint, key: opts.sort().join(',') });
    }
  }
  return out;
}

function ownCgroups(): Map<string, string> {
  const m = new Map<string, string>();
  for (const line of readFileSync('/proc/self/cgroup', 'utf8').trim().split('\n')) {
    const [, ctrls = '', path] = line.match(/^\d+:([^:]*):(.*)$/) ?? [];
    if (path !== undefined) m.set(ctrls.split(',').sort().join(','), path);
  }
  return m;
}

function mkCgroup(dir: string): void {
  if (existsSync(dir)) return;
  mkdirSync(dir);
  // A new cpuset group has no cpus/mems, and a process cannot join it until they are set.
  for (const f of ['cpuset.cpus', 'cpuset.mems']) {
    if (existsSync(`${dir}/${f}`) && readFileSync(`${dir}/${f}`, 'utf8').trim() === '') {
      writeFileSync(`${dir}/${f}`, readFileSync(`${dir}/../${f}`, 'utf8'));
    }
  }
}

/** Creates the host's cgroup in every hierarchy; returns their absolute directories. */
export function createHostCgroups(name: string): string[] {
  const own = ownCgroups();
  const dirs: string[] = [];
  for (const h of hierarchies()) {
    const base = `${h.mountpoint}${own.get(h.key) ?? '/'}`.replace(/\/+$/, '');
    mkCgroup(`${base}/${BED_GROUP}`);
    mkCgroup(`${base}/${BED_GROUP}/${name}`);
    // `host` holds nspawn and the container; `exec` holds commands run through Host.exec, outside the
    // container's cgroup root, where the host's systemd does not manage (or remove) them.
    mkCgroup(`${base}/${BED_GROUP}/${name}/host`);
    mkCgroup(`${base}/${BED_GROUP}/${name}/exec`);
    dirs.push(`${base}/${BED_GROUP}/${name}`);
  }
  return dirs;
}

/** Calls `visit` on every directory of the cgroup trees below dirs (parents first); unreadable ones end their branch. */
function walkCgroups(dirs: readonly string[], visit: (dir: string) => void): void {
  const walk = (d: string) => {
    let entries: string[];
    try {
      visit(d);
      entries = readdirSync(d, { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => e.name);
    } catch {
      return;
    }
    for (const e of entries) walk(`${d}/${e}`);
  };
  for (const d of dirs) walk(d);
}

/** Every PID in the cgroup trees below dirs. */
export function cgroupPids(dirs: readonly string[]): number[] {
  const pids = new Set<number>();
  walkCgroups(dirs, (d) => {
    for (const p of readFileSync(`${d}/cgroup.procs`, 'utf8').split('\n')) if (p) pids.add(Number(p));
  });
  pids.delete(process.pid);
  return [...pids];
}

/**
 * Thaws every frozen cgroup (v1 freezer `freezer.state`, cgroup2 `cgroup.freeze`) in the trees below
 * dirs: a frozen task ignores SIGKILL until thawed. runc freezes a container while it changes its
 * cgroups; a host stopped in that moment leaves the container frozen (seen on the bed: a `runc init`
 * in a FROZEN freezer cgroup kept the host's cgroups busy for good).
 * @returns how many it thawed.
 */
export function thawCgroups(dirs: readonly string[]): number {
  let thawed = 0;
  walkCgroups(dirs, (d) => {
    if (existsSync(`${d}/freezer.state`) && readFileSync(`${d}/freezer.state`, 'utf8').trim() !== 'THAWED') {
      writeFileSync(`${d}/freezer.state`, 'THAWED');
      thawed++;
    }
    if (existsSync(`${d}/cgroup.freeze`) && readFileSync(`${d}/cgroup.freeze`, 'utf8').trim() === '1') {
      writeFileSync(`${d}/cgroup.freeze`, '0');
      thawed++;
    }
  });
  return thawed;
}

/** Thaws the trees below dirs ({@link thawCgroups}), then SIGKILLs every process in them. @returns how many were signalled. */
export function killCgroupProcesses(dirs: readonly string[]): number {
  thawCgroups(dirs);
  const left = cgroupPids(dirs);
  for (const p of left) {
    try {
      process.kill(p, 'SIGKILL');
    } catch {}
  }
  return left.length;
}

/** Removes the cgroup trees (deepest first); then the shared parent if it is empty. Throws if busy. */
export function removeCgroups(dirs: readonly string[]): void {
  const rm = (d: string) => {
    if (!existsSync(d)) return;
    for (const e of readdirSync(d, { withFileTypes: true })) if (e.isDirectory()) rm(`${d}/${e.name}`);
    rmdirSync(d);
  };
  for (const d of dirs) rm(d);
  for (const d of dirs) {
    const parent = d.slice(0, d.lastIndexOf('/'));
    try {
      if (parent.endsWith(`/${BED_GROUP}`)) rmdirSync(parent);
    } catch {}
  }
}

/** The `cgroup.procs` files a process writes its PID to, to join the host's cgroups. */
export const procsFiles = (dirs: readonly string[], sub = '') =>
  dirs.map((d) => `${d}${sub ? `/${sub}` : ''}/cgroup.procs`);
