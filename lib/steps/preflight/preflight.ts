/**
 * The `preflight` step: every check runs, then failures are reported once (kubeadm's way). Each
 * check has a stable id that `--ignore-preflight-errors` (or `ignorePreflightErrors` in the config)
 * turns into a warning; `all` ignores every check. Reads only: nothing on the host changes.
 * @see kubernetes/cmd/kubeadm/app/preflight/checks.go
 */
import { join } from 'node:path';
import process from 'node:process';
import * as C from '../../constants.ts';
import { PreflightError } from '../../errors.ts';
import { checkConfigIgnoreIds, checkIgnoreIds } from './preflight-ids.ts';
import { listeningSockets, processHoldsSocket } from '../../host/ports.ts';
import { BOOTSTRAP_CONTROLLER_MANAGER_PORT, BOOTSTRAP_SCHEDULER_PORT, KUBE_PROXY_HEALTHZ_PORT, KUBE_PROXY_METRICS_PORT } from '../../../manifests/common.ts';
import { etcdDataDirState, foreignEtcdEnvironment } from '../bootstrap/etcd.ts';
import { encryptionConfigCheck } from '../bootstrap/apiserver-config.ts';
import { checkDataDirPath } from '../../etcd/ownership.ts';
import { controlPlaneUrl, kubeconfigPaths } from '../../k8s/endpoints.ts';
import { parseKubeconfig } from '../../k8s/kubeconfig.ts';
import { cgroupDriverMismatch } from '../../host/cgroup-driver.ts';
import { imagePullCheck, kubeletVersionCheck } from './images.ts';
import { kubernetesVersionCheck } from '../upgrade/version-check.ts';
import { clusterConfigurationCheck } from '../bootstrap/cluster-configuration.ts';
import { nodeConfigurationCheck } from '../bootstrap/node-configuration.ts';
import { joinedControlPlane } from '../join/joined-control-plane.ts';
import { containerRuntimeVersionCheck, etcdDataDirVersionCheck, etcdVersionCheck, kubernetesVersionSupportCheck } from './runtime-versions.ts';
import type { Context } from '../../context.ts';
import type { StepOutcome } from '../../engine/dsl.ts';
import { kernelTunablesCheck } from '../bootstrap/kernel-tunables.ts';

export type { Check, CheckFailure } from './preflight-check.ts';
import type { Check, CheckFailure } from './preflight-check.ts';

const pathId = (p: string) => p.replace(/\//g, '-');

function binaryCheck(name: 'etcd' | 'kubelet' | 'kubectl'): Check {
  return {
    id: `FileExisting-${name}`,
    async run(ctx) {
      const bin = ctx.config.distro.binaries[name];
      if (await ctx.sh.which(bin)) return undefined;
      return { message: `${bin} not found on PATH`, fix: `install ${name} (the distro's package) or set binaries.${name} in distros/${ctx.config.distro.name}/${ctx.config.distro.name}.toml` };
    },
  };
}

function unitCheck(kind: 'etcd' | 'kubelet'): Check {
  return {
    id: `Service-${kind}`,
    async run(ctx) {
      const unit = ctx.config.distro.units[kind];
      if ((await ctx.systemd.unitFileState(unit)) !== 'not-found') return undefined;
      return { message: `systemd has no unit ${unit}`, fix: `install the ${kind} package that ships ${unit}, or set units.${kind} in the distro settings` };
    },
  };
}

/**
 * Ports and the unit whose activity means the listener is our own component. A port counts as ours
 * when its unit is `active`, or when the unit's main process itself holds the listening socket: etcd
 * binds its ports before it reports ready, so a run killed while etcd.service was still `activating`
 * (the etcd step runs beside the kubelet's) leaves etcd listening in a unit that is not yet active.
 */
function portChecks(ctx: Context): Check[] {
  const { config } = ctx;
  const owned: [number, 'etcd' | 'kubelet'][] = [
    [C.ETCD_CLIENT_PORT, 'etcd'],
    [C.ETCD_PEER_PORT, 'etcd'],
    [config.localAPIEndpoint.bindPort, 'kubelet'],
    [config.bootstrapAPIEndpoint.bindPort, 'kubelet'],
    [C.KUBELET_PORT, 'kubelet'],
    [C.CONTROLLER_MANAGER_PORT, 'kubelet'],
    [C.SCHEDULER_PORT, 'kubelet'],
    [BOOTSTRAP_CONTROLLER_MANAGER_PORT, 'kubelet'],
    [BOOTSTRAP_SCHEDULER_PORT, 'kubelet'],
    [KUBE_PROXY_HEALTHZ_PORT, 'kubelet'],
    [KUBE_PROXY_METRICS_PORT, 'kubelet'],
  ];
  let sockets: Promise<Map<number, Set<string>>> | undefined;
  const read = () => (sockets ??= listeningSockets());
  return owned.map(([port, owner]) => portCheck(port, owner, read));
}

/**
 * `Port-PORT`: fails when PORT is listened on by something other than our `owner` component (see
 * {@link portChecks}). `sockets` reads the socket table (shared by the checks of one run).
 */
export function portCheck(port: number, owner: 'etcd' | 'kubelet', sockets: () => Promise<Map<number, Set<string>>> = listeningSockets): Check {
  return {
    id: `Port-${port}`,
    async run(c: Context) {
      const inodes = (await sockets()).get(port);
      if (!inodes) return undefined;
      const unit = c.config.distro.units[owner];
      const state = await c.systemd.activeState(unit).catch(() => 'unknown');
      if (state === 'active') return undefined; // our own component
      if (await processHoldsSocket((await c.systemd.mainPid?.(unit).catch(() => 0)) ?? 0, inodes)) return undefined; // ours, still starting
      return { message: `port ${port} is in use and ${unit} is ${state}, so another program holds it`, fix: `stop the program listening on ${port} (ss -ltnp 'sport = :${port}')` };
    },
  };
}

const privileged: Check = {
  id: 'IsPrivilegedUser',
  async run() {
    return process.getuid?.() === 0 ? undefined : { message: 'kubeception must run as root', fix: 'run it with sudo or as root' };
  },
};

/** Existing kubeconfigs kubeception would rewrite must parse: an unreadable one may hold the only copy of its key. */
const kubeconfigsReadable: Check = {
  id: 'KubeconfigReadable',
  async run(ctx) {
    for (const path of Object.values(kubeconfigPaths(ctx.config))) {
      const text = await ctx.files.read(path);
      const error = text === undefined ? undefined : parseKubeconfig(text, path).error;
      if (error) return { message: `${path} is not a readable kubeconfig (${error}); rewriting it would replace its client key`, fix: `restore ${path} from a backup, or move it aside (mv ${path} ${path}.bad) so kubeception issues a new key` };
    }
    return undefined;
  },
};

/** The kubelet's cgroup driver, when set in the config, must be the container runtime's (read from its config on this node). */
const cgroupDriverCheck: Check = { id: 'CgroupDriver', run: (ctx) => cgroupDriverMismatch(ctx) };

/**
 * Checks for a worker: root, the kubelet binary and unit, the kernel tunables, the runtime's version,
 * the kubelet's port, and `NodeConfiguration` (on a worker: its distro against the node record the
 * join's `kubelet-config` step writes; a worker has no etcd environment file to compare).
 */
export const workerChecks = (ctx: Context): Check[] => [
  privileged,
  binaryCheck('kubelet'),
  unitCheck('kubelet'),
  cgroupDriverCheck,
  kernelTunablesCheck,
  containerRuntimeVersionCheck,
  ...portChecks(ctx).filter((c) => c.id === `Port-${C.KUBELET_PORT}`),
  nodeConfigurationCheck,
];

/**
 * `ControlPlaneEndpoint` (bootstrap): never a second bootstrap control plane against a running
 * cluster. Refused: a node that joined as a further control-plane node (its etcd environment says
 * `initial-cluster-state=existing`: the cluster's objects are rendered on the node that bootstrapped it), and
 * a node without the cluster CA key (a fresh host, a worker) while an apiserver already answers at the
 * `controlPlaneEndpoint`.
 */
const bootstrapEndpointCheck: Check = {
  id: 'ControlPlaneEndpoint',
  ignorable: false,
  async run(ctx) {
    if (await joinedControlPlane(ctx))
      return { message: 'this node joined the cluster as a further control-plane node (run join --control-plane): bootstrap would render the cluster\'s self-hosted control plane from this node\'s config', fix: 'converge it with the same `kubeception run join … --control-plane` command (with a new `certs upload` key if the shared keys are gone)' };
    const cpe = ctx.config.controlPlaneEndpoint;
    // A node holding the cluster CA key is this cluster's control plane (a re-run); a worker has only ca.crt.
    if (!cpe || (await ctx.files.exists(join(ctx.config.certificatesDir, 'ca.key')))) return undefined;
    const { call } = await import('../../join/client.ts');
    const target = new URL('/readyz', controlPlaneUrl(ctx.config));
    const answered = await call(target, { timeoutMs: 3_000 }).then((r) => r.status > 0, () => false);
    return answered ? { message: `an apiserver already answers at controlPlaneEndpoint ${target.host}: bootstrapping here would start a second control plane`, fix: 'join this node to that cluster: `kubeception certs upload` on one of its control-plane nodes prints the `run join --control-plane` command' } : undefined;
  },
};

/** Checks for a control-plane node (bootstrap). */
export const controlPlaneChecks = (ctx: Context): Check[] => [
  privileged,
  binaryCheck('etcd'),
  binaryCheck('kubelet'),
  binaryCheck('kubectl'),
  unitCheck('etcd'),
  unitCheck('kubelet'),
  ...portChecks(ctx),
  kubeconfigsReadable,
  cgroupDriverCheck,
  kernelTunablesCheck,
  kubeletVersionCheck,
  kubernetesVersionCheck,
  clusterConfigurationCheck,
  nodeConfigurationCheck,
  kubernetesVersionSupportCheck,
  etcdVersionCheck,
  etcdDataDirVersionCheck,
  containerRuntimeVersionCheck,
  imagePullCheck,
  bootstrapEndpointCheck,
  encryptionConfigCheck,
  {
    id: `DirAvailable-${pathId(ctx.config.etcd.dataDir)}`,
    async run(c) {
      const unsafe = await checkDataDirPath(c.config.etcd.dataDir, c.config.distro.etcdUser).catch(() => undefined);
      if (unsafe) return { message: `${unsafe.what}: ${unsafe.why}`, fix: unsafe.fix };
      const s = await etcdDataDirState(c);
      return s.kind === 'foreign' ? { message: `etcd data dir ${c.config.etcd.dataDir}: ${s.why}`, fix: `move ${c.config.etcd.dataDir} aside if its data is not needed, or restore this cluster's PKI` } : undefined;
    },
  },
  {
    id: `FileAvailable-${pathId(ctx.config.distro.paths.etcdEnvironmentFile)}`,
    async run(c) {
      const why = await foreignEtcdEnvironment(c);
      return why ? { message: why, fix: `move ${c.config.distro.paths.etcdEnvironmentFile} aside; kubeception writes its own` } : undefined;
    },
  },
];

/**
 * Runs every check, logs ignored failures as warnings.
 * @throws InputError `preflight-ignore-unknown` for an `--ignore-preflight-errors` id no check has.
 * @throws ConfigError `config-invalid` for a config `ignorePreflightErrors` id no check has ({@link checkConfigIgnoreIds}).
 * @throws PreflightError (exit 2) listing every failed, non-ignored check.
 */
export async function runPreflight<C extends Context>(ctx: C, checks: readonly Check<C>[]): Promise<StepOutcome> {
  const ignore = ctx.options.ignorePreflightErrors;
  checkIgnoreIds(ctx.options.ignorePreflightErrorsFlag ?? [], checks);
  checkConfigIgnoreIds(ctx.config?.ignorePreflightErrors ?? [], checks);
  for (const notice of ctx.config?.notices ?? []) ctx.log.warn(notice);
  const failures: CheckFailure[] = [];
  // Checks only read the host: run them at once (most wait on a command), report in their order.
  // Every check finishes before a thrown one is reported: none is left running behind the error.
  const ms: number[] = [];
  const settled = await Promise.allSettled(
    checks.map(async (check, i) => {
      const t0 = performance.now();
      try {
        return await check.run(ctx);
      } finally {
        ms[i] = performance.now() - t0;
      }
    }),
  );
  const thrown = settled.find((r) => r.status === 'rejected');
  if (thrown) throw (thrown as PromiseRejectedResult).reason;
  const results = settled.map((r) => (r as PromiseFulfilledResult<Awaited<ReturnType<Check['run']>>>).value);
  for (const [i, check] of checks.entries()) {
    const r = results[i];
    if (!r) continue;
    if (check.ignorable !== false && (ignore.has('all') || ignore.has(check.id))) ctx.log.warn(`[${check.id}] ${r.message} (ignored)`);
    else failures.push({ id: check.id, ...r, ...(check.ignorable === false ? { ignorable: false } : {}) });
  }
  if (failures.length) throw new PreflightError(failures);
  const slowest = checks.map((c, i) => ({ id: c.id, ms: ms[i] ?? 0 })).sort((a, b) => b.ms - a.ms).slice(0, 3);
  return { changed: false, detail: `all ${checks.length} checks passed (slowest: ${slowest.map((c) => `${c.id} ${(c.ms / 1000).toFixed(2)} s`).join(', ')})` };
}
