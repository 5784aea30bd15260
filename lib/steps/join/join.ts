/**
 * The worker's join steps: preflight (including the token and hash formats), discovery (kubeadm's
 * token discovery: token-signed cluster-info, CA pins; then the node-name check against the verified
 * apiserver), the kubelet's files, the kubelet's client certificate by CSR before the kubelet
 * starts (lib/join/kubelet-csr.ts: approved by kubeception's CSR approver; no key leaves the
 * worker), and the kubelet started once, with it.
 *
 * Host effects: the node record (`/var/lib/kubeception/node.json`, 0600, directory 0700: this node's
 * distro), `<certificatesDir>/ca.crt` (0644, the verified CA data), the kubelet's config.yaml
 * and drop-in, `<kubeletConfigDir>/pki/kubelet-client-<stamp>.pem` (0600) with its
 * `kubelet-client-current.pem` symlink, the kubelet kubeconfig naming it (0600); the kubelet unit
 * enabled and started. Nothing is written before discovery has verified the signature and the pin;
 * the token is never written (a bootstrap kubeconfig an older join left is removed).
 */
import { join } from 'node:path';
import { KubeceptionError, TimeoutError } from '../../errors.ts';
import { pollUntil } from '../../util/poll.ts';
import { certSignedBy, firstCertificatePem } from '../../pki/keys.ts';
import { anyCertFacts } from '../../pki/any-cert.ts';
import { parseKubeconfig, renderKubeconfig } from '../../k8s/kubeconfig.ts';
import { discover as discoverClusterInfo } from '../../join/client.ts';
import { checkNodeName } from '../../join/node-name.ts';
import { TOKEN_RE } from '../../join/token.ts';
import { bootstrapKubeletKubeconfig, restartKubelet, writeKubeletFiles } from '../bootstrap/kubelet.ts';
import { kubeletClientCurrent, writeKubeletClient } from '../bootstrap/kubelet-client.ts';
import { requestKubeletClientCert } from '../../join/kubelet-csr.ts';
import { holdJoiningName, signKubeletClient } from './control-plane-identity.ts';
import { kubeconfigPaths } from '../../k8s/endpoints.ts';
import { writeNodeRecord } from '../../host/node-record.ts';
import type { Check } from '../preflight/preflight-check.ts';
import type { Context } from '../../context.ts';
import type { JoinContext, JoinOptions } from '../contexts.ts';
import type { StepOutcome } from '../../engine/dsl.ts';

const HASH_RE = /^sha256:[0-9a-f]{64}$/i;

/** Preflight checks of the join flags: `JoinToken`, `CaCertHash`, `JoinUrl`. A malformed flag is fixed, not ignored: not ignorable. */
export const joinFlagChecks: Check<Context<Pick<JoinOptions, 'token' | 'caCertHash' | 'joinUrl'>>>[] = [
  {
    id: 'JoinToken',
    ignorable: false,
    async run(ctx) {
      const t = ctx.options.token;
      if (t !== undefined && TOKEN_RE.test(t)) return undefined;
      return { message: t === undefined ? 'no token: --token, --token-file and KUBECEPTION_TOKEN are all unset' : 'the token is not of the form [a-z0-9]{6}.[a-z0-9]{16}', fix: 'pass the token printed by `kubeception token create --print-join-command` on the control plane' };
    },
  },
  {
    id: 'CaCertHash',
    ignorable: false,
    async run(ctx) {
      const h = ctx.options.caCertHash;
      const bad = h?.split(',').find((p) => !HASH_RE.test(p));
      if (h !== undefined && bad === undefined) return undefined;
      return { message: h === undefined ? '--ca-cert-hash is missing' : `--ca-cert-hash ${bad} is not sha256:<64 hex digits>`, fix: 'pass the hash printed with the join command (the flag may be repeated)' };
    },
  },
  {
    id: 'JoinUrl',
    ignorable: false,
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

/**
 * Why this worker counts as joined (a kubelet client certificate from this cluster's CA that has
 * not expired), or false. An expired one does not count: the kubelet cannot start with it, and a
 * re-run with a token requests a new one.
 */
export async function alreadyJoined(ctx: JoinContext): Promise<string | false> {
  const [ca, kubeconfig] = await Promise.all([ctx.files.read(caPath(ctx)), ctx.files.read(kubeconfigPaths(ctx.config).kubelet)]);
  if (!ca || !kubeconfig) return false;
  const k = parseKubeconfig(kubeconfig, kubeconfigPaths(ctx.config).kubelet);
  const cert = k.certPem ?? (k.certFile ? await ctx.files.read(k.certFile) : undefined);
  const leaf = cert && firstCertificatePem(cert);
  if (!leaf || !certSignedBy(leaf, ca)) return false;
  return anyCertFacts(leaf, k.certFile ?? kubeconfigPaths(ctx.config).kubelet).notAfter.getTime() > Date.now() ? 'already joined: the kubelet has a client certificate from this cluster' : false;
}

/**
 * `discovery`: verifies the token-signed cluster-info and the CA pins, then (token → verified
 * apiserver only) that this node's name is not taken; keeps the result in `ctx.state.join`.
 */
export async function discover(ctx: JoinContext): Promise<StepOutcome> {
  const base = ctx.options.joinUrl!;
  const pins = ctx.options.caCertHash!.split(',');
  const d = await discoverClusterInfo(base, ctx.options.token!, pins, ctx.options.discoveryTimeoutMs ?? 60_000, ctx.signal, ctx.config.nodeName);
  ctx.log.info(`cluster-info signed with the token; CA pinned; apiserver ${d.server}`);
  await checkNodeName(d.server, d.caPem, ctx.options.token!, ctx.config.nodeName);
  ctx.state.join = { apiserver: d.server, caPem: d.caPem };
  return { changed: false, detail: `verified; apiserver ${d.server}; node name ${ctx.config.nodeName} free` };
}

/**
 * `kubelet-config` (join): the node record (lib/host/node-record.ts: this node's distro), then the
 * verified CA (after discovery), config.yaml, drop-in. The record is the join's first write on a
 * worker (a control-plane join's `etcd-join` wrote it already: nothing changes here), so from then on
 * the preflight check `NodeConfiguration` refuses another distro; it owes the kubelet no restart.
 */
export async function writeWorkerKubelet(ctx: JoinContext): Promise<StepOutcome> {
  const recorded = await writeNodeRecord(ctx.files, ctx.config);
  const changed: string[] = [];
  const j = ctx.state.join;
  if (j && (await ctx.files.write(caPath(ctx), j.caPem, { mode: 0o644 }))) changed.push('ca.crt');
  changed.push(...(await writeKubeletFiles(ctx, { bootstrap: true })));
  if (changed.length) ctx.state.kubeletRestart = true;
  const detail = [...(recorded ? ['node record'] : []), ...changed];
  return { changed: detail.length > 0, detail: detail.join(', ') || 'up to date' };
}

/**
 * `kubelet-client-cert`: the kubelet's client certificate, requested by CSR with the bootstrap
 * token before the kubelet starts (lib/join/kubelet-csr.ts) — on a control-plane join signed here
 * with the cluster CA instead — written where the kubelet's own certificate store keeps it
 * (`kubelet-client-current.pem`, 0600), and the kubelet kubeconfig naming it (0600). Skipped once
 * this host has a client certificate from the cluster's CA.
 * @throws what {@link requestKubeletClientCert} throws.
 */
export async function kubeletClientCert(ctx: JoinContext): Promise<StepOutcome> {
  const j = ctx.state.join;
  if (!j) throw new KubeceptionError('join-state', { what: 'kubelet-client-cert', why: 'discovery left no verified cluster-info', fix: 'report this as a kubeception bug' });
  const node = `system:node:${ctx.config.nodeName}`;
  const path = kubeconfigPaths(ctx.config).kubelet;
  if (ctx.options.controlPlane) return signControlPlaneKubelet(ctx, j.apiserver, path);
  if (ctx.dryRun) return { changed: true, detail: `would request a client certificate for ${node} (CSR with the bootstrap token) and write the kubelet kubeconfig` };
  const issued = await requestKubeletClientCert({ server: j.apiserver, caPem: j.caPem, token: ctx.options.token!, nodeName: ctx.config.nodeName, signal: ctx.signal });
  await writeKubeletClient(ctx, issued.certPem, issued.keyPem);
  await ctx.files.write(path, renderKubeconfig({ server: j.apiserver, caPem: j.caPem, user: node, certFile: kubeletClientCurrent(ctx.config) }), { mode: 0o600 });
  return { changed: true, detail: `CSR ${issued.csrName} posted in ${issued.postedMs} ms, approved and signed ${issued.signedMs} ms later; ${path} names ${kubeletClientCurrent(ctx.config)}` };
}

/**
 * `kubelet-client-cert` of a control-plane join: the name held for a control-plane node (again: a
 * no-op after `control-plane-certs`), then the certificate signed with the cluster CA on this host.
 */
async function signControlPlaneKubelet(ctx: JoinContext, server: string, path: string): Promise<StepOutcome> {
  if (ctx.dryRun) return { changed: true, detail: `would sign a client certificate for system:node:${ctx.config.nodeName} with the cluster CA and write the kubelet kubeconfig` };
  const [certPem, keyPem] = await Promise.all(['ca.crt', 'ca.key'].map((f) => ctx.files.read(join(ctx.config.certificatesDir, f))));
  if (!certPem || !keyPem) throw new KubeceptionError('join-state', { what: 'kubelet-client-cert', why: `the cluster CA is not in ${ctx.config.certificatesDir} (control-plane-certs writes it)`, fix: 'run the whole join task (not --only/--skip control-plane-certs)' });
  await holdJoiningName(ctx, server, { certPem, keyPem });
  const signed = await signKubeletClient(ctx, { certPem, keyPem }, server, kubeletClientCurrent(ctx.config));
  await writeKubeletClient(ctx, signed.certPem, signed.keyPem);
  await ctx.files.write(path, signed.kubeconfig, { mode: 0o600 });
  return { changed: true, detail: `signed with the cluster CA on this host (a control-plane node asks no bootstrap token); ${path} names ${kubeletClientCurrent(ctx.config)}` };
}

/**
 * `wait-kubelet-bootstrap`: the kubelet runs with a client certificate from this cluster's CA — at
 * once after `kubelet-client-cert`; a kubelet an older join left bootstrapping on its own is waited
 * for. A bootstrap kubeconfig such a join left (it holds a token) is then removed and the kubelet
 * restarted with its certificate (it would notice it only at its next 10-second check, as
 * `system:anonymous` until then).
 */
export async function waitKubeletBootstrap(ctx: JoinContext): Promise<StepOutcome> {
  if (ctx.dryRun) return { changed: (await ctx.files.exists(bootstrapKubeletKubeconfig(ctx.config))) && (await ctx.files.remove(bootstrapKubeletKubeconfig(ctx.config))), detail: 'would wait for the kubelet client certificate, then remove the bootstrap kubeconfig' };
  if (await pollUntil(async () => (await alreadyJoined(ctx)) || undefined, { timeoutMs: 180_000, intervalMs: 200, signal: ctx.signal })) {
    const removed = await ctx.files.remove(bootstrapKubeletKubeconfig(ctx.config));
    // A kubelet that bootstrapped in the background ran as system:anonymous until now: it notices
    // its certificate at its next 10-second check, and its informers are in back-off from the
    // refused lists. Restarted with the certificate, it registers the Node and lists at once.
    if (removed) await restartKubelet(ctx, { restart: true });
    return { changed: removed, detail: `the kubelet has its client certificate${removed ? '; bootstrap kubeconfig removed; kubelet restarted with its certificate' : ''}` };
  }
  throw new TimeoutError('join-tls-bootstrap', {
    what: `kubelet on ${ctx.config.nodeName}`,
    why: 'no client certificate within 180 s: its CSR was not approved or the kubelet cannot reach the apiserver',
    fix: `check \`kubectl get csr\` on the control plane and \`journalctl -u ${ctx.config.distro.units.kubelet}\` here`,
  });
}
