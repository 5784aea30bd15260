/**
 * What the kubelet is doing with a static pod, when the apiserver that would show its status is the
 * pod itself: read from the kubelet's journal (image pulls, crash-loop back-offs) and the container
 * logs under /var/log/pods. Lets a wait fail with "image pull failed: …" or "crash loop, last log
 * lines: …" instead of "ECONNREFUSED" after five minutes.
 */
import { KubeceptionError } from '../errors.ts';
import type { Context } from '../context.ts';

/** What is wrong with a static pod. */
export interface PodTrouble {
  kind: 'image-pull' | 'crash-loop';
  message: string;
}

const unquote = (s: string) => s.replace(/\\+"/g, '"');

/** Last `n` lines of the newest log of `container` in pod `podName` (CRI log format, prefix stripped). */
async function containerLogTail(ctx: Pick<Context, 'files'>, podName: string, container: string, n = 5): Promise<string[]> {
  const dirs = (await ctx.files.list('/var/log/pods')).filter((d) => d.startsWith(`kube-system_${podName}_`));
  for (const d of dirs.reverse()) {
    const dir = `/var/log/pods/${d}/${container}`;
    const logs = (await ctx.files.list(dir)).filter((f) => f.endsWith('.log')).sort((a, b) => Number.parseInt(a) - Number.parseInt(b));
    const text = logs.length ? await ctx.files.read(`${dir}/${logs[logs.length - 1]}`) : undefined;
    if (text) return text.trim().split('\n').slice(-n).map((l) => l.replace(/^\S+ (stdout|stderr) [FP] /, ''));
  }
  return [];
}

/**
 * Trouble of the static pods named `<podPrefix>…` running `images`, from kubelet journal lines since
 * `sinceMs` (epoch ms), newest first; undefined if none is seen.
 */
export async function staticPodTrouble(ctx: Pick<Context, 'sh' | 'files' | 'config'>, opts: { podPrefix: string; images: readonly string[]; sinceMs: number }): Promise<PodTrouble | undefined> {
  const unit = ctx.config.distro.units.kubelet;
  const r = await ctx.sh.read(['journalctl', '-u', unit, '--since', `@${Math.floor(opts.sinceMs / 1000)}`, '-o', 'cat', '--no-pager', '-n', '3000'], { allowFail: true, timeoutMs: 10_000 }).catch(() => undefined);
  const lines = (r?.code === 0 ? r.stdout.split('\n') : []).reverse();
  for (const line of lines) {
    const img = opts.images.find((i) => line.includes(i));
    if (img && /ErrImagePull|ImagePullBackOff|[Ff]ailed to pull/.test(line)) {
      const m = /(failed to pull and unpack image.*|Failed to pull image.*)/.exec(unquote(line));
      return { kind: 'image-pull', message: `the kubelet cannot pull ${img}: ${(m?.[1] ?? line).replace(/"*\s+pod=.*$/, '').slice(0, 300)}` };
    }
    const pod = /pod="kube-system\/([^"]+)"/.exec(line)?.[1];
    if (pod?.startsWith(opts.podPrefix) && line.includes('CrashLoopBackOff')) {
      const container = /for \\*"([a-z0-9-]+)\\*" with CrashLoopBackOff/.exec(line)?.[1] ?? pod.replace(/^bootstrap-/, '').replace(/-[^-]+$/, '');
      const tail = await containerLogTail(ctx, pod, container);
      return { kind: 'crash-loop', message: `${pod}: container ${container} keeps exiting (CrashLoopBackOff)${tail.length ? `; its last log lines:\n    ${tail.join('\n    ')}` : ''}` };
    }
  }
  return undefined;
}

/** The error for a static pod that cannot start because its image cannot be pulled. */
export function imagePullError(trouble: PodTrouble, config: Context['config']): KubeceptionError {
  return new KubeceptionError('image-pull', {
    what: `bootstrap control plane (kubernetesVersion ${config.kubernetesVersion}, imageRepository ${config.imageRepository})`,
    why: trouble.message,
    fix: 'set kubernetesVersion (or imageRepository) to images this node has or can pull, then re-run: the static pods are rewritten and restarted',
  });
}
