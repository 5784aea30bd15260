/**
 * Preflight checks that the configured Kubernetes version can run on this node before anything is
 * written: the control-plane images are in the runtime's store or can be pulled (kubeadm's
 * `ImagePull` preflight: it pulls them too), and the kubelet's version fits the version skew
 * policy against that control plane.
 *
 * Host effects: missing images pulled into containerd (namespace `k8s.io`) with `ctr`; nothing
 * under `--dry-run`.
 * @see https://kubernetes.io/releases/version-skew-policy/#kubelet
 */
import { image, type ImageName } from '../../../manifests/common.ts';
import { criImages, criPull } from '../../host/crictl.ts';
import type { Check } from './preflight-check.ts';
import type { Context } from '../../context.ts';

const IMAGES: readonly ImageName[] = ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kube-proxy'];
const PULL_TIMEOUT_MS = 120_000;

/** The control-plane images of the configured version. */
export const controlPlaneImages = (ctx: Pick<Context, 'config'>) => IMAGES.map((n) => image(ctx.config, n));

const socketPath = (criSocket: string) => criSocket.replace(/^unix:\/\//, '');

/** Preflight `ImagePull`: each image is present in containerd's `k8s.io` namespace or pulls now. */
export const imagePullCheck: Check = {
  id: 'ImagePull',
  async run(ctx) {
    const socket = ctx.config.kubelet.criSocket;
    if (!socket.includes('containerd') || !(await ctx.sh.which('ctr'))) {
      ctx.log.warn(`ImagePull: cannot list images of ${socket} (only containerd, with ctr); not checked`);
      return undefined;
    }
    const ctr = ['ctr', '--address', socketPath(socket), '-n', 'k8s.io'];
    const ls = await ctx.sh.read([...ctr, 'images', 'ls', '-q'], { allowFail: true, timeoutMs: 30_000 });
    if (ls.code !== 0) {
      return {
        message: `cannot list the images of the container runtime at ${socket}: ${(ls.stderr.trim().split('\n').pop() ?? `exit ${ls.code}`).slice(0, 200)}`,
        fix: `start containerd (systemctl start containerd) or set kubelet.criSocket to the runtime's socket; --ignore-preflight-errors ImagePull skips this check`,
      };
    }
    const have = new Set(ls.stdout.split('\n').map((l) => l.trim()));
    // The missing images pull at once (an unreachable registry costs one timeout, not one per image).
    const missing = controlPlaneImages(ctx).filter((r) => !have.has(r));
    const pulls = await Promise.all(missing.map(async (ref) => {
      ctx.log.info(`pulling ${ref}`);
      const r = await ctx.sh.exec([...ctr, 'images', 'pull', ref], { allowFail: true, timeoutMs: PULL_TIMEOUT_MS });
      return r.code === 0 ? undefined : `${ref} (${(r.stderr.trim().split('\n').pop() ?? `exit ${r.code}`).slice(0, 200)})`;
    }));
    const failed = pulls.filter((f): f is string => f !== undefined);
    if (!failed.length) return undefined;
    return {
      message: `control-plane image(s) of kubernetesVersion ${ctx.config.kubernetesVersion} are not on this node and cannot be pulled: ${failed.join('; ')}`,
      fix: `set kubernetesVersion to a version whose images the node has (ctr -n k8s.io images ls), or import/pull ${controlPlaneImages(ctx)[0]} and the others, or set imageRepository to a registry that has them`,
    };
  },
};

/**
 * Preflight `ImagePull` through the CRI with `crictl` (cri-tools), for a runtime other than containerd
 * (CRI-O: distros/kubic/overrides.ts puts it in place of {@link imagePullCheck}): each control-plane
 * image is in the runtime's store (`crictl images`) or pulls now (`crictl pull`).
 * Host effects: missing images pulled; nothing under `--dry-run`.
 */
export const criImagePullCheck: Check = {
  id: 'ImagePull',
  async run(ctx) {
    const socket = ctx.config.kubelet.criSocket;
    const unit = ctx.config.distro.units.containerRuntime;
    if (!(await ctx.sh.which('crictl')))
      return { message: `crictl is not on PATH: the images of the container runtime at ${socket} cannot be listed`, fix: 'install cri-tools (crictl); --ignore-preflight-errors ImagePull skips this check' };
    const have = await criImages(ctx);
    if ('error' in have)
      return { message: `cannot list the images of the container runtime at ${socket}: ${have.error}`, fix: `start the runtime (systemctl enable --now ${unit}) or set kubelet.criSocket to its socket; --ignore-preflight-errors ImagePull skips this check` };
    const missing = controlPlaneImages(ctx).filter((r) => !have.refs.has(r));
    const pulls = await Promise.all(missing.map(async (ref) => {
      ctx.log.info(`pulling ${ref}`);
      const why = await criPull(ctx, ref, PULL_TIMEOUT_MS);
      return why === undefined ? undefined : `${ref} (${why})`;
    }));
    const failed = pulls.filter((f): f is string => f !== undefined);
    if (!failed.length) return undefined;
    return {
      message: `control-plane image(s) of kubernetesVersion ${ctx.config.kubernetesVersion} are not on this node and cannot be pulled: ${failed.join('; ')}`,
      fix: `set kubernetesVersion to a version whose images the node has (crictl images), or import/pull ${controlPlaneImages(ctx)[0]} and the others, or set imageRepository to a registry that has them`,
    };
  },
};

/** `vMAJOR.MINOR` of a version string such as `Kubernetes v1.34.4` or `v1.35.0`, or undefined. */
export function minorVersion(text: string): [number, number] | undefined {
  const m = /v(\d+)\.(\d+)\.\d+/.exec(text);
  return m ? [Number(m[1]), Number(m[2])] : undefined;
}

/** Why `kubelet` (version text) may not run against control plane `cp`, or undefined (same major; at most 3 minors older; never newer). */
export function kubeletSkewProblem(kubelet: string, cp: string): string | undefined {
  const k = minorVersion(kubelet);
  const c = minorVersion(cp);
  if (!k || !c) return undefined;
  if (k[0] !== c[0] || k[1] > c[1]) return `the kubelet (v${k[0]}.${k[1]}) is newer than the control plane (${cp}): a kubelet must never be newer than kube-apiserver`;
  if (c[1] - k[1] > 3) return `the kubelet (v${k[0]}.${k[1]}) is more than 3 minor versions older than the control plane (${cp})`;
  return undefined;
}

/** Preflight `KubeletVersion`: `kubelet --version` fits the skew policy against `kubernetesVersion`. */
export const kubeletVersionCheck: Check = {
  id: 'KubeletVersion',
  async run(ctx) {
    const bin = await ctx.sh.which(ctx.config.distro.binaries.kubelet);
    if (!bin) return undefined; // FileExisting-kubelet reports it
    const r = await ctx.sh.read([bin, '--version'], { allowFail: true, timeoutMs: 15_000 });
    const why = kubeletSkewProblem(r.stdout, ctx.config.kubernetesVersion);
    return why ? { message: `${bin}: ${r.stdout.trim()}; ${why}`, fix: `install a kubelet of ${ctx.config.kubernetesVersion} (or up to 3 minor versions older), or set kubernetesVersion to match it` } : undefined;
  },
};
