/**
 * The container runtime through its CRI API, with `crictl` (cri-tools): what kubeception asks of a
 * runtime that is not containerd (CRI-O on Kubic), where `ctr` does not apply. Every call names the
 * socket (`kubelet.criSocket`), so no `/etc/crictl.yaml` is needed; reads go through `ctx.sh.read`
 * (they also run under `--dry-run`), changes through `ctx.sh.exec`.
 *
 * Shapes: image references as the runtime tags them (`registry.k8s.io/pause:3.10.2`); pod sandbox
 * and container ids as 64-hex strings.
 * @see https://github.com/kubernetes-sigs/cri-tools/blob/master/docs/crictl.md
 */
import type { Context } from '../context.ts';
import type { CommandResult } from './sh.ts';

type Ctx = Pick<Context, 'sh' | 'config'>;

/** The CRI socket as crictl takes it (`unix:///var/run/crio/crio.sock`; a bare path gets `unix://`). */
export const criEndpoint = (criSocket: string) => (criSocket.includes('://') ? criSocket : `unix://${criSocket}`);

/** `crictl --runtime-endpoint S --image-endpoint S …args` for the configured socket. */
export const crictlArgv = (ctx: Pick<Context, 'config'>, ...args: string[]): string[] => {
  const e = criEndpoint(ctx.config.kubelet.criSocket);
  return ['crictl', '--runtime-endpoint', e, '--image-endpoint', e, '--timeout', '20s', ...args];
};

/** True if the runtime is containerd (kubeception then uses `ctr`), else it is reached with crictl. */
export const isContainerd = (ctx: Pick<Context, 'config'>) => ctx.config.kubelet.criSocket.includes('containerd');

/** The last line of a failed command's stderr, short: for messages. */
export const lastLine = (r: CommandResult) => (r.stderr.trim().split('\n').pop() ?? `exit ${r.code}`).slice(0, 200);

const ids = (r: CommandResult) => (r.code === 0 ? r.stdout.split('\n').map((l) => l.trim()).filter(Boolean) : []);

/**
 * The image references the runtime has (every repo tag of every image).
 * @returns `{ refs }`, or `{ error }` (the last stderr line) when the runtime does not answer.
 */
export async function criImages(ctx: Ctx): Promise<{ refs: Set<string> } | { error: string }> {
  const r = await ctx.sh.read(crictlArgv(ctx, 'images', '-o', 'json'), { allowFail: true, timeoutMs: 30_000 });
  if (r.code !== 0) return { error: lastLine(r) };
  const doc = JSON.parse(r.stdout || '{}') as { images?: { repoTags?: string[] }[] };
  return { refs: new Set((doc.images ?? []).flatMap((i) => i.repoTags ?? [])) };
}

/** Pulls `ref` into the runtime (a host change). @returns undefined, or why it failed. */
export async function criPull(ctx: Ctx, ref: string, timeoutMs: number): Promise<string | undefined> {
  const r = await ctx.sh.exec(crictlArgv(ctx, 'pull', ref), { allowFail: true, timeoutMs });
  return r.code === 0 ? undefined : lastLine(r);
}

/** Ids of every pod sandbox the runtime holds (ready or not); none when it does not answer. */
export async function criPods(ctx: Ctx): Promise<string[]> {
  return ids(await ctx.sh.read(crictlArgv(ctx, 'pods', '-q'), { allowFail: true, timeoutMs: 30_000 }));
}

/** Ids of every container the runtime holds (any state); none when it does not answer. */
export async function criContainers(ctx: Ctx): Promise<string[]> {
  return ids(await ctx.sh.read(crictlArgv(ctx, 'ps', '-a', '-q'), { allowFail: true, timeoutMs: 30_000 }));
}

/**
 * Stops and removes every pod sandbox (with its containers) the runtime holds: `crictl rmp --force
 * --all`, as kubeadm reset does through the CRI (`RemovePodSandbox` after `StopPodSandbox`; the runtime
 * removes the pods' namespaces, mounts and CNI attachments itself).
 * @returns how many pods there were; the command's failure is left to the caller's next listing.
 */
export async function criRemoveAllPods(ctx: Ctx): Promise<number> {
  const pods = await criPods(ctx);
  if (pods.length) await ctx.sh.exec(crictlArgv(ctx, 'rmp', '--force', '--all'), { allowFail: true, timeoutMs: 120_000 });
  return pods.length;
}
