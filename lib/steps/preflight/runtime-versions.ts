/**
 * Preflight checks of the Kubernetes minor and of the runtime stack under it, against the versions
 * table (manifests/addons/versions.ts):
 *
 * - `KubernetesVersionSupport` (bootstrap): a minor past upstream end of life (`existing-clusters` in
 *   the table, today 1.34) is refused for a new cluster; a host that already holds the cluster's CA
 *   key (a re-run on an existing cluster) passes with a warning.
 * - `EtcdVersion`: warns (never fails) when the installed etcd is older than kubeadm's
 *   `MinExternalEtcdVersion` (3.5.24) or of an older minor than the one kubeadm of this Kubernetes
 *   release pairs with (1.37 → 3.7).
 * - `EtcdDataDirVersion`: warns when the running etcd is more than one minor below the installed
 *   binary (3.4 running, 3.6 installed: a distro package upgrade): etcd supports upgrades one minor at
 *   a time, and the next restart of etcd skips a minor. Measured on the bed (test/integration/
 *   runtime-stack.test.ts): etcd 3.6.16 on a one-member data dir of 3.4.23 starts, logs "cannot detect
 *   storage schema version: missing term information" once, then moves the cluster version 3.4 → 3.6
 *   and migrates the storage to 3.6.0 within seconds, data kept — so a warning, not a refusal. With
 *   etcd stopped the dir's version is not read.
 * - `ContainerRuntimeVersion`: warns when the kubelet is 1.37 or later and containerd is 1.x, which
 *   lacks the CRI `RuntimeConfig` call: the kubelet falls back to its own `cgroupDriver` until 1.38,
 *   which removes that fallback (kubeadm's check of the same name warns likewise).
 *
 * Reads only (`etcd --version`, `kubelet --version`, `ctr version`, etcd's `/version` over TLS).
 * @see kubernetes/cmd/kubeadm/app/preflight/checks.go (ExternalEtcdVersionCheck, ContainerRuntimeVersionCheck)
 * @see https://etcd.io/docs/v3.6/upgrades/upgrade_3_6/
 */
import { join } from 'node:path';
import { etcdClientUrls } from '../../etcd/config.ts';
import { probeHttps } from '../../net/probe.ts';
import { KUBEADM_MIN_EXTERNAL_ETCD, compareVersions, parseVersion, type Version } from '../../upgrade/skew.ts';
import { etcdPairing, kubernetesMinor, minorVersions, SUPPORTED_MINORS } from '../../../manifests/addons/versions.ts';
import { healthcheckTls } from '../bootstrap/etcd.ts';
import type { Check } from './preflight-check.ts';
import type { Context } from '../../context.ts';

/** The first `X.Y.Z` of a `--version` text (`etcd Version: 3.6.16`, `containerd … 1.6.20~ds1 …`), or undefined. */
export function versionIn(text: string): Version | undefined {
  const m = /(?:^|[\s:v])(\d+\.\d+\.\d+)/.exec(text);
  return m ? parseVersion(m[1]) : undefined;
}

const show = (v: Version) => `${v.major}.${v.minor}.${v.patch}`;
const latestSupported = () => SUPPORTED_MINORS[SUPPORTED_MINORS.length - 1];

/** Preflight `KubernetesVersionSupport`: no new cluster at a minor the table keeps for existing clusters only. */
export const kubernetesVersionSupportCheck: Check = {
  id: 'KubernetesVersionSupport',
  async run(ctx) {
    const v = ctx.config.kubernetesVersion;
    if (minorVersions(v)?.support !== 'existing-clusters') return undefined;
    const minor = kubernetesMinor(v);
    if (await ctx.files.exists(join(ctx.config.certificatesDir, 'ca.key'))) {
      ctx.log.warn(`[KubernetesVersionSupport] Kubernetes ${minor} is past upstream end of life; this existing cluster is still served: upgrade it with \`kubeception upgrade apply\` one minor at a time`);
      return undefined;
    }
    return {
      message: `Kubernetes ${minor} (kubernetesVersion ${v}) is past upstream end of life: kubeception bootstraps new clusters at ${SUPPORTED_MINORS.join(', ')} only and keeps ${minor} for existing clusters (re-run, join, reset, upgrade apply)`,
      fix: `set kubernetesVersion to a release of ${latestSupported()} (the default) or another supported minor; to create a ${minor} cluster anyway (e.g. to rehearse the upgrade of an existing one) pass --ignore-preflight-errors KubernetesVersionSupport`,
    };
  },
};

/** `etcd --version` of the distro's etcd, or undefined if it is not installed or says no version. */
async function installedEtcd(ctx: Context): Promise<Version | undefined> {
  const bin = await ctx.sh.which(ctx.config.distro.binaries.etcd);
  if (!bin) return undefined; // FileExisting-etcd reports it
  const r = await ctx.sh.read([bin, '--version'], { allowFail: true, timeoutMs: 15_000 });
  return versionIn(r.stdout);
}

/** Preflight `EtcdVersion`: a warning when etcd is older than kubeadm's minimum or than this release's pairing. */
export const etcdVersionCheck: Check = {
  id: 'EtcdVersion',
  async run(ctx) {
    const have = await installedEtcd(ctx);
    const pairing = parseVersion(etcdPairing(ctx.config.kubernetesVersion));
    if (!have || !pairing) return undefined;
    const minor = kubernetesMinor(ctx.config.kubernetesVersion);
    const min = parseVersion(KUBEADM_MIN_EXTERNAL_ETCD)!;
    if (compareVersions(have, min) < 0)
      ctx.log.warn(`[EtcdVersion] etcd ${show(have)} is older than ${KUBEADM_MIN_EXTERNAL_ETCD}, the oldest etcd kubeadm accepts (MinExternalEtcdVersion); Kubernetes ${minor} pairs with etcd ${show(pairing)}. Upgrade etcd one minor at a time (${have.major}.${have.minor} → ${have.major}.${have.minor + 1} → …, each run once on the data dir)`);
    else if (have.major < pairing.major || (have.major === pairing.major && have.minor < pairing.minor))
      ctx.log.warn(`[EtcdVersion] etcd ${show(have)} is of an older minor than the etcd ${show(pairing)} kubeadm pairs with Kubernetes ${minor}; it is supported (≥ ${KUBEADM_MIN_EXTERNAL_ETCD}), upgrade it to ${pairing.major}.${pairing.minor} when the distro offers it`);
    return undefined;
  },
};

/** The running etcd's server version from its `/version` (healthcheck client certificate), or undefined. */
async function runningEtcd(ctx: Context): Promise<Version | undefined> {
  if ((await ctx.systemd.activeState(ctx.config.distro.units.etcd).catch(() => 'unknown')) !== 'active') return undefined;
  const tls = await healthcheckTls(ctx).catch(() => undefined);
  if (!tls) return undefined;
  const r = await probeHttps(new URL('/version', etcdClientUrls(ctx.config)[0]).href, tls, 3_000);
  if ('error' in r || r.status !== 200) return undefined;
  try {
    return parseVersion((JSON.parse(r.body) as { etcdserver?: string }).etcdserver);
  } catch {
    return undefined;
  }
}

/** Preflight `EtcdDataDirVersion`: a warning when the installed etcd is more than one minor above the running one. */
export const etcdDataDirVersionCheck: Check = {
  id: 'EtcdDataDirVersion',
  async run(ctx) {
    const [have, running] = await Promise.all([installedEtcd(ctx), runningEtcd(ctx)]);
    if (!have || !running || have.major !== running.major || have.minor - running.minor <= 1) return undefined;
    const next = `${running.major}.${running.minor + 1}`;
    ctx.log.warn(
      `[EtcdDataDirVersion] etcd ${show(have)} is installed, but the running etcd that serves ${ctx.config.etcd.dataDir} is ${show(running)}: its next restart skips etcd ${next}, and etcd supports upgrades one minor at a time (a one-member ${running.major}.${running.minor} data dir was seen to migrate to ${have.major}.${have.minor}, a multi-member cluster is not known to). Take \`etcdctl snapshot save\` first; where the distro offers ${next}.x, install it and restart etcd once before ${have.major}.${have.minor}`,
    );
    return undefined;
  },
};

/** The container runtime's version: the running containerd's (`ctr version`), else its binary's. */
async function containerdVersion(ctx: Context): Promise<Version | undefined> {
  const socket = ctx.config.kubelet.criSocket;
  if (!socket.includes('containerd')) return undefined;
  if (await ctx.sh.which('ctr')) {
    const r = await ctx.sh.read(['ctr', '--address', socket.replace(/^unix:\/\//, ''), 'version'], { allowFail: true, timeoutMs: 15_000 });
    const server = /Server:[\s\S]*?Version:\s*(\S+)/.exec(r.stdout)?.[1];
    if (r.code === 0 && server) return versionIn(` ${server}`);
  }
  const bin = await ctx.sh.which('containerd');
  return bin ? versionIn((await ctx.sh.read([bin, '--version'], { allowFail: true, timeoutMs: 15_000 })).stdout.replace(/^containerd\s+\S+/, '')) : undefined;
}

/** Preflight `ContainerRuntimeVersion`: a warning for containerd 1.x under a kubelet of 1.37 or later. */
export const containerRuntimeVersionCheck: Check = {
  id: 'ContainerRuntimeVersion',
  async run(ctx) {
    const bin = await ctx.sh.which(ctx.config.distro.binaries.kubelet);
    const kubelet = bin ? versionIn((await ctx.sh.read([bin, '--version'], { allowFail: true, timeoutMs: 15_000 })).stdout) : undefined;
    if (kubelet?.major !== 1 || kubelet.minor < 37) return undefined;
    const runtime = await containerdVersion(ctx);
    if (!runtime || runtime.major >= 2) return undefined;
    ctx.log.warn(`[ContainerRuntimeVersion] containerd ${show(runtime)} has no CRI RuntimeConfig call: the kubelet v${kubelet.major}.${kubelet.minor} falls back to its own cgroupDriver, a fallback Kubernetes 1.38 removes; 1.38 will need containerd 2.0 or newer (and a cgroup driver set in containerd's config)`);
    return undefined;
  },
};
