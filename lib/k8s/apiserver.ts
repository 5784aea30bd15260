/**
 * The two apiservers of a bootstrap — the temporary *bootstrap* one (static pod, its own port) and
 * the *final* self-hosted one — as seen from this node through the admin kubeconfigs.
 */
import { HostStateError, TimeoutError } from '../errors.ts';
import { probeHttps, type TlsClient } from '../net/probe.ts';
import { pollUntil } from '../util/poll.ts';
import { parseKubeconfig } from './kubeconfig.ts';
import type { Cluster } from './client.ts';
import { apiserverUrls, controlPlaneUrl, kubeconfigPaths } from './endpoints.ts';
import type { Context } from '../context.ts';

/** Which apiserver. */
export type Which = 'bootstrap' | 'final';

/**
 * Where kubeception reaches `which` apiserver of this node: the bootstrap one on the advertise
 * address; the final one on loopback — the serving certificate in the self-hosted Secret is shared
 * by every control-plane node and always names `127.0.0.1`, not necessarily this node's address.
 */
export const localApiserverUrl = (config: Context['config'], which: Which) => (which === 'final' ? apiserverUrls(config).loopback : apiserverUrls(config).bootstrap);

async function adminKubeconfig(ctx: Pick<Context, 'files' | 'config'>, which: Which): Promise<{ text: string; path: string }> {
  const p = kubeconfigPaths(ctx.config);
  const path = which === 'final' ? p.admin : p.bootstrapAdmin;
  const text = await ctx.files.read(path);
  if (!text) throw new HostStateError('kubeconfig-missing', { what: path, why: 'the admin kubeconfig is missing', fix: 'run the kubeconfig step (kubeception run bootstrap)' });
  return { text, path };
}

/** TLS client material of the admin kubeconfig for `which`. Never logged. */
export async function adminTls(ctx: Pick<Context, 'files' | 'config'>, which: Which): Promise<TlsClient> {
  const { text, path } = await adminKubeconfig(ctx, which);
  const k = parseKubeconfig(text, path);
  if (!k.caPem || !k.certPem || !k.keyPem) throw new HostStateError('kubeconfig-invalid', { what: path, why: 'it lacks embedded CA or client credentials', fix: 'move it aside and run the kubeconfig step' });
  return { ca: k.caPem, cert: k.certPem, key: k.keyPem };
}

/**
 * A client for `which` apiserver *of this node* (admin credentials): the server is always the local
 * URL ({@link localApiserverUrl}), never admin.conf's, which names the controlPlaneEndpoint when one is set —
 * the steps check this node's apiserver, not whichever one a load balancer picks.
 */
export async function cluster(ctx: Pick<Context, 'files' | 'config'> & Partial<Pick<Context, 'plannedApi'>>, which: Which): Promise<Cluster> {
  const { text, path } = await adminKubeconfig(ctx, which);
  const server = localApiserverUrl(ctx.config, which);
  // Imported here, not at the top: @kubernetes/client-node is large and `plan --help` never needs it.
  const { Cluster, DryRunCluster } = await import('./client.ts');
  // Under plan/--dry-run: record writes; read only from an apiserver that answers with these credentials.
  if (ctx.plannedApi) return new DryRunCluster(text, path, ctx.plannedApi, (await probeApiserver(ctx, which)) === undefined, which, server);
  return new Cluster(text, path, server);
}

/**
 * A client from a kubeconfig file the operator named (`--kubeconfig FILE`), used as it is (its own
 * server and credentials). Reads the file only.
 * @param may what its credentials must be allowed to do, for the error's fix (e.g. "evict pods and patch Nodes").
 * @throws HostStateError `kubeconfig-missing` naming the flag when the file is absent or empty.
 */
export async function kubeconfigFileCluster(files: Pick<Context['files'], 'read'>, path: string, may: string): Promise<Cluster> {
  const text = await files.read(path);
  if (!text) throw new HostStateError('kubeconfig-missing', { what: `--kubeconfig ${path}`, why: 'the file does not exist or is empty', fix: `pass a kubeconfig allowed to ${may} (e.g. a copy of admin.conf)` });
  const { Cluster } = await import('./client.ts');
  return new Cluster(text, path);
}

/**
 * A client through the cluster's stable address — `controlPlaneEndpoint` (or this node's final
 * apiserver when none is set) — with admin credentials: for a joining control-plane node, whose own
 * apiserver starts only after it is labelled.
 */
export async function endpointCluster(ctx: Pick<Context, 'files' | 'config'>): Promise<Cluster> {
  const { text, path } = await adminKubeconfig(ctx, 'final');
  const { Cluster } = await import('./client.ts');
  return new Cluster(text, path, controlPlaneUrl(ctx.config));
}

/** One `/readyz` probe: undefined if ready, else why not. */
export async function probeApiserver(ctx: Pick<Context, 'files' | 'config'>, which: Which, timeoutMs = 3_000): Promise<string | undefined> {
  // Only a missing file means "not yet"; a corrupt one is an error the operator must see.
  const tls = await adminTls(ctx, which).catch((err) => {
    if ((err as { code?: string }).code === 'kubeconfig-missing') return undefined;
    throw err;
  });
  if (!tls) return 'no admin kubeconfig yet';
  const r = await probeHttps(`${localApiserverUrl(ctx.config, which)}/readyz`, tls, timeoutMs);
  if ('error' in r) return r.error;
  return r.status === 200 ? undefined : `HTTP ${r.status}: ${r.body.trim().split('\n').filter((l) => l.includes('failed')).slice(0, 3).join('; ') || r.body.slice(0, 120)}`;
}

/**
 * Waits until `which` answers `/readyz` 200 `inARow` times in a row, probing every `intervalMs`.
 * @throws TimeoutError `apiserver-not-ready` naming the URL and the last reason.
 */
export async function waitApiserver(
  ctx: Context,
  which: Which,
  opts: { timeoutMs: number; intervalMs?: number; inARow?: number; watch?: () => Promise<void>; explain?: () => Promise<string | undefined> },
): Promise<number> {
  const interval = opts.intervalMs ?? 1_000;
  const need = opts.inARow ?? 1;
  let streak = 0;
  let probes = 0;
  let last = 'not probed';
  const done = await pollUntil(async () => {
    probes++;
    const why = await probeApiserver(ctx, which);
    if (why === undefined) return ++streak >= need ? probes : undefined;
    if (streak > 0) ctx.log.info(`${which} apiserver: streak of ${streak} broken (${why})`);
    streak = 0;
    last = why;
    if (probes % 3 === 0) await opts.watch?.(); // may throw: a cause that waiting will not fix
    return undefined;
  }, { timeoutMs: opts.timeoutMs, intervalMs: interval, signal: ctx.signal });
  if (done !== undefined) return done;
  const explained = await opts.explain?.().catch(() => undefined);
  throw new TimeoutError('apiserver-not-ready', {
    what: `${which} kube-apiserver at ${localApiserverUrl(ctx.config, which)}`,
    why: `not ready ${need > 1 ? `${need} times in a row ` : ''}within ${opts.timeoutMs} ms (last: ${last})${explained ? `; ${explained}` : ''}`,
    fix: `check the kube-apiserver pod: crictl/ctr logs, \`journalctl -u ${ctx.config.distro.units.kubelet}\``,
  });
}
