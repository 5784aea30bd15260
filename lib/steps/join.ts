/**
 * The worker's join steps: preflight (including the token and hash formats), discovery (pinned CA,
 * token exchange), the kubelet's files with a bootstrap kubeconfig, and waiting for TLS
 * bootstrapping to give the kubelet its client certificate (the CSR is approved by the cluster's
 * standard RBAC for bootstrap tokens; no key leaves the worker).
 *
 * Host effects: `<certificatesDir>/ca.crt` (0644), `<kubeletConfigDir>/bootstrap-kubeconfig` (0600,
 * holds the token), the kubelet's config.yaml and drop-in; the kubelet unit enabled and started.
 */
import { join } from 'node:path';
import { TimeoutError } from '../errors.ts';
import { pollUntil } from '../util/poll.ts';
import { certSignedBy } from '../pki/keys.ts';
import { parseKubeconfig, renderKubeconfig } from '../k8s/kubeconfig.ts';
import { fetchCa, requestJoin, verifyCaHash } from '../join/client.ts';
import { TOKEN_RE } from '../join/token.ts';
import { bootstrapKubeletKubeconfig, writeKubeletFiles } from './kubelet.ts';
import { kubeconfigPaths } from '../k8s/endpoints.ts';
import type { Check } from './preflight.ts';
import type { Context } from '../context.ts';
import type { StepOutcome } from '../dsl.ts';

const HASH_RE = /^sha256:[0-9a-f]{64}$/i;

/** Preflight checks of the join flags: `JoinToken`, `CaCertHash`, `JoinUrl`. */
export const joinFlagChecks: Check[] = [
  {
    id: 'JoinToken',
    async run(ctx) {
      const t = ctx.options.token;
      if (t !== undefined && TOKEN_RE.test(t)) return undefined;
      return { message: t === undefined ? '--token is missing' : '--token is not of the form [a-z0-9]{6}.[a-z0-9]{16}', fix: 'pass the token printed by `kubeception token create --print-join-command` on the control plane' };
    },
  },
  {
    id: 'CaCertHash',
    async run(ctx) {
      const h = ctx.options.caCertHash;
      if (h !== undefined && HASH_RE.test(h)) return undefined;
      return { message: h === undefined ? '--ca-cert-hash is missing' : '--ca-cert-hash is not sha256:<64 hex digits>', fix: 'pass the hash printed with the join command' };
    },
  },
  {
    id: 'JoinUrl',
    async run(ctx) {
      try {
        if (new URL(ctx.options.joinUrl ?? '').protocol === 'https:') return undefined;
      } catch {
        /* reported below */
      }
      return { message: `--url ${ctx.options.joinUrl ?? ''} is not an https URL`, fix: 'pass https://<control-plane address>:30000' };
    },
  },
];

const caPath = (ctx: Pick<Context, 'config'>) => join(ctx.config.certificatesDir, 'ca.crt');

/** Preflight check `NotControlPlane`: a host holding the cluster CA key is a control-plane node, not a worker. */
export const notControlPlaneCheck: Check = {
  id: 'NotControlPlane',
  async run(ctx) {
    const key = join(ctx.config.certificatesDir, 'ca.key');
    if (!(await ctx.files.exists(key))) return undefined;
    return { message: `${key} exists: this host is a control-plane node (kubeception bootstrap ran here); join is for workers`, fix: 'run join on a worker host; on this node use `kubeception run bootstrap`' };
  },
};

/** Why this worker counts as joined (kubelet client certificate from this cluster's CA), or false. */
export async function alreadyJoined(ctx: Context): Promise<string | false> {
  const [ca, kubeconfig] = await Promise.all([ctx.files.read(caPath(ctx)), ctx.files.read(kubeconfigPaths(ctx.config).kubelet)]);
  if (!ca || !kubeconfig) return false;
  const k = parseKubeconfig(kubeconfig, kubeconfigPaths(ctx.config).kubelet);
  const cert = k.certPem ?? (k.certFile ? await ctx.files.read(k.certFile) : undefined);
  if (!cert) return false;
  return certSignedBy(cert, ca) ? 'already joined: the kubelet has a client certificate from this cluster' : false;
}

/** `discovery`: pins the CA by hash, sends the token, keeps the answer in `ctx.state.join`. */
export async function discover(ctx: Context): Promise<StepOutcome> {
  const base = ctx.options.joinUrl!;
  const caPem = await fetchCa(base, ctx.options.discoveryTimeoutMs ?? 60_000, ctx.signal);
  verifyCaHash(caPem, ctx.options.caCertHash!, base);
  ctx.log.info(`CA pinned (${ctx.options.caCertHash})`);
  ctx.state.join = await requestJoin(base, ctx.options.token!, caPem);
  return { changed: false, detail: `token accepted; apiserver ${ctx.state.join.apiserver}` };
}

/** `kubelet-config` (worker): CA, bootstrap kubeconfig (only before the first join), config.yaml, drop-in. */
export async function writeWorkerKubelet(ctx: Context): Promise<StepOutcome> {
  const changed: string[] = [];
  const j = ctx.state.join;
  if (j) {
    if (await ctx.files.write(caPath(ctx), j.caPem, { mode: 0o644 })) changed.push('ca.crt');
    const text = renderKubeconfig({ server: j.apiserver, caPem: j.caPem, user: 'kubelet-bootstrap', token: ctx.options.token! });
    if (await ctx.files.write(bootstrapKubeletKubeconfig(ctx.config), text, { mode: 0o600 })) changed.push('bootstrap-kubeconfig');
  }
  changed.push(...(await writeKubeletFiles(ctx, { bootstrap: true })));
  if (changed.length) ctx.state.kubeletRestart = true;
  return { changed: changed.length > 0, detail: changed.join(', ') || 'up to date' };
}

/** `wait-kubelet-bootstrap`: the kubelet got its client certificate (CSR approved) and wrote its kubeconfig. */
export async function waitKubeletBootstrap(ctx: Context): Promise<StepOutcome> {
  if (await pollUntil(async () => (await alreadyJoined(ctx)) || undefined, { timeoutMs: 180_000, signal: ctx.signal }))
    return { changed: false, detail: 'kubelet client certificate issued' };
  throw new TimeoutError('join-tls-bootstrap', {
    what: `kubelet on ${ctx.config.nodeName}`,
    why: 'no client certificate within 180 s: its CSR was not approved or the kubelet cannot reach the apiserver',
    fix: `check \`kubectl get csr\` on the control plane and \`journalctl -u ${ctx.config.distro.units.kubelet}\` here`,
  });
}
