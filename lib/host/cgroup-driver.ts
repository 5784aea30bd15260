/**
 * The container runtime's cgroup driver, read from the runtime's own config on this node, and the
 * kubelet's driver matched to it. A kubelet on `systemd` with containerd on `cgroupfs` (or the
 * reverse) still runs pods, but their processes live outside the kubelet's pod cgroups, so limits
 * and eviction silently stop applying.
 *
 * - containerd: `SystemdCgroup` of the default runtime's options (`version = 3`, containerd 2:
 *   `plugins."io.containerd.cri.v1.runtime".containerd.runtimes.<default_runtime_name|runc>.options`;
 *   `version = 2`: `plugins."io.containerd.grpc.v1.cri".containerd…`; version 1: `plugins.cri…`);
 *   absent (or no config.toml) = containerd's default, `cgroupfs` (1.x and 2.x alike).
 * - CRI-O: `cgroup_manager` in `[crio.runtime]` of /etc/crio/crio.conf and crio.conf.d/*.conf (later
 *   files win); absent = CRI-O's default, `systemd`.
 * Reads only.
 * @see https://kubernetes.io/docs/setup/production-environment/container-runtimes/#cgroup-drivers
 */
import { join } from 'node:path';
import { HostStateError } from '../errors.ts';
import type { Context } from '../context.ts';

export type CgroupDriver = 'systemd' | 'cgroupfs';

/** The runtime's driver and where it was read (file and setting, for messages). */
export interface RuntimeCgroupDriver {
  runtime: 'containerd' | 'cri-o';
  driver: CgroupDriver;
  source: string;
}

export const CONTAINERD_CONFIG = '/etc/containerd/config.toml';
export const CRIO_CONFIG = '/etc/crio/crio.conf';

async function toml(text: string, file: string): Promise<any> {
  // The TOML parser is loaded on first use: the task files import this module, `plan --order-only` never calls it.
  const { parseToml } = await import('../config/toml.ts');
  try {
    return parseToml(text, file);
  } catch (err) {
    throw new HostStateError('runtime-config-invalid', { what: file, why: `the container runtime's config is not valid TOML (${(err as Error).message.split('\n')[0]})`, fix: `correct ${file}; the runtime itself would refuse it too`, cause: err });
  }
}

async function containerd(files: Context['files']): Promise<RuntimeCgroupDriver> {
  const text = await files.read(CONTAINERD_CONFIG);
  if (text === undefined) return { runtime: 'containerd', driver: 'cgroupfs', source: `${CONTAINERD_CONFIG} absent: containerd's default` };
  const doc = await toml(text, CONTAINERD_CONFIG);
  const cri = doc?.version === 3 ? doc?.plugins?.['io.containerd.cri.v1.runtime'] : (doc?.plugins?.['io.containerd.grpc.v1.cri'] ?? doc?.plugins?.cri);
  const name = cri?.containerd?.default_runtime_name ?? 'runc';
  const value = cri?.containerd?.runtimes?.[name]?.options?.SystemdCgroup;
  return { runtime: 'containerd', driver: value === true ? 'systemd' : 'cgroupfs', source: `${CONTAINERD_CONFIG}: SystemdCgroup = ${value === undefined ? '(unset)' : String(value)} for runtime ${name}` };
}

async function crio(files: Context['files']): Promise<RuntimeCgroupDriver> {
  const dropIns = (await files.list(`${CRIO_CONFIG}.d`)).filter((f) => f.endsWith('.conf')).map((f) => join(`${CRIO_CONFIG}.d`, f));
  let found: RuntimeCgroupDriver = { runtime: 'cri-o', driver: 'systemd', source: `${CRIO_CONFIG}: cgroup_manager unset (CRI-O's default)` };
  for (const file of [CRIO_CONFIG, ...dropIns]) {
    const text = await files.read(file);
    const v = text === undefined ? undefined : (await toml(text, file))?.crio?.runtime?.cgroup_manager;
    if (v === 'systemd' || v === 'cgroupfs') found = { runtime: 'cri-o', driver: v, source: `${file}: cgroup_manager = "${v}"` };
  }
  return found;
}

/** The runtime's cgroup driver, by the CRI socket's name; undefined for a runtime kubeception cannot read. */
export async function runtimeCgroupDriver(ctx: Pick<Context, 'files' | 'config'>): Promise<RuntimeCgroupDriver | undefined> {
  const socket = ctx.config.kubelet.criSocket;
  if (socket.includes('containerd')) return containerd(ctx.files);
  if (socket.includes('crio')) return crio(ctx.files);
  return undefined;
}

/**
 * The driver the kubelet must use: the operator's `kubelet.cgroupDriver` if set (preflight
 * refuses a mismatch), else the runtime's, else kubeadm's default `systemd`.
 */
export async function kubeletCgroupDriver(ctx: Pick<Context, 'files' | 'config'>): Promise<CgroupDriver> {
  if (ctx.config.kubelet.cgroupDriverSet) return ctx.config.kubelet.cgroupDriver;
  return (await runtimeCgroupDriver(ctx))?.driver ?? ctx.config.kubelet.cgroupDriver;
}

/** Preflight: why the configured driver conflicts with the runtime's, or undefined. */
export async function cgroupDriverMismatch(ctx: Pick<Context, 'files' | 'config'>): Promise<{ message: string; fix: string } | undefined> {
  if (!ctx.config.kubelet.cgroupDriverSet) return undefined;
  const rt = await runtimeCgroupDriver(ctx);
  const want = ctx.config.kubelet.cgroupDriver;
  if (!rt || rt.driver === want) return undefined;
  const runtimeFix = rt.runtime === 'containerd' ? `SystemdCgroup = ${want === 'systemd'} in ${CONTAINERD_CONFIG} (then restart containerd)` : `cgroup_manager = "${want}" in ${CRIO_CONFIG} (then restart crio)`;
  return {
    message: `kubelet.cgroupDriver is "${want}" in the config, but ${rt.runtime} uses "${rt.driver}" (${rt.source}); pods would run outside the kubelet's cgroups`,
    fix: `set kubelet.cgroupDriver: '${rt.driver}' in the config (or remove it: kubeception then matches the runtime), or set ${runtimeFix}`,
  };
}
