/**
 * The control plane's side of joining: the `bootstrap-token` step (kubeadm's TLS-bootstrap RBAC and
 * a valid bootstrap token) and the `join-service` step (kubeception itself in kube-system behind
 * NodePort 30000, serving HTTPS with a certificate from the cluster CA).
 *
 * Host effects: `<certificatesDir>/kubeception-join.crt` (0644) and `.key` (0600); objects applied
 * through the final apiserver.
 */
import { join } from 'node:path';
import { LEAF_VALIDITY_DAYS, type LeafSpec } from '../pki/certs.ts';
import { reconcileLeaf } from '../pki/reconcile.ts';
import { pollUntil } from '../util/poll.ts';
import { KubeceptionError, TimeoutError } from '../errors.ts';
import { cluster } from '../k8s/apiserver.ts';
import { BOOTSTRAP_DESCRIPTION, remainingMs, tokenFromSecret } from '../join/token.ts';
import type { KubernetesObject } from '../k8s/client.ts';
import { caCertHash, createToken, deleteStaleTokens, joinCommand, listTokens } from '../join/tokens-api.ts';
import { bootstrapTokenRbac } from '../../manifests/bootstrap-token-rbac.ts';
import { joinServiceObjects } from '../../manifests/join-service.ts';
import { renewalWindowDays } from './certs.ts';
import { rollAndWait } from '../k8s/rollout.ts';
import type { Context } from '../context.ts';
import type { StepOutcome } from '../dsl.ts';
import type { ResolvedConfig } from '../types.ts';

/** Lifetime of the token bootstrap creates; a token with less than `MIN_LEFT_MS` left is replaced. */
const TOKEN_TTL_MS = 24 * 3_600_000;
const MIN_LEFT_MS = 3_600_000;

/** `bootstrap-token`: RBAC for TLS bootstrapping, and a bootstrap token valid for at least an hour. */
export async function ensureBootstrapToken(ctx: Context): Promise<StepOutcome> {
  const api = await cluster(ctx, 'final');
  const rbac = await api.apply(bootstrapTokenRbac());
  const removed = await deleteStaleTokens(api, 24 * 3_600_000, BOOTSTRAP_DESCRIPTION);
  if (removed.length) ctx.log.info(`deleted tokens expired over a day ago: ${removed.join(', ')}`);
  const now = new Date();
  const tokens = await listTokens(api);
  const usable = tokens.find((t) => t.description === BOOTSTRAP_DESCRIPTION && remainingMs(t, now) > MIN_LEFT_MS);
  let token: string | undefined;
  let created = false;
  if (usable)
    token = tokenFromSecret(await api.read<{ data?: Record<string, string> } & KubernetesObject>({ apiVersion: 'v1', kind: 'Secret', metadata: { name: usable.secretName, namespace: 'kube-system' } }));
  if (!token) {
    token = await createToken(api, TOKEN_TTL_MS, BOOTSTRAP_DESCRIPTION);
    created = true;
  }
  ctx.options.addSecret(token);
  ctx.state.joinCommand = joinCommand(ctx.config, token, await caCertHash(ctx.config, ctx.files));
  return { changed: created || rbac.length > 0 || removed.length > 0, detail: created ? `token ${token.slice(0, 6)} created (24h)` : `token ${usable!.id} still valid` };
}

/** The join service's serving certificate: signed by the cluster CA, for the node's address and the Service names. */
export function joinServiceCertSpec(config: ResolvedConfig): LeafSpec {
  const dnsNames = [config.nodeName, 'kubeception-join', 'kubeception-join.kube-system', 'kubeception-join.kube-system.svc', `kubeception-join.kube-system.svc.${config.networking.dnsDomain}`];
  return {
    kind: 'leaf', name: 'kubeception-join', longName: 'join service serving certificate', caName: 'ca', commonName: 'kubeception-join', organizations: [], usages: ['serverAuth'],
    altNames: { dnsNames, ipAddresses: [config.localAPIEndpoint.advertiseAddress] }, validityDays: config.certificateValidityDays ?? LEAF_VALIDITY_DAYS,
    certPath: join(config.certificatesDir, 'kubeception-join.crt'), keyPath: join(config.certificatesDir, 'kubeception-join.key'),
  };
}

/** `join-service`: the serving certificate, the objects, and the Deployment available. */
export async function ensureJoinService(ctx: Context): Promise<StepOutcome> {
  const { config, files } = ctx;
  const spec = joinServiceCertSpec(config);
  const [caPem, caKeyPem, certPem, keyPem] = await Promise.all([join(config.certificatesDir, 'ca.crt'), join(config.certificatesDir, 'ca.key'), spec.certPath!, spec.keyPath!].map((p) => files.read(p)));
  const leaf = await reconcileLeaf(spec, { certPem, keyPem }, { certPem: caPem!, keyPem: caKeyPem! }, config, { renewBeforeDays: renewalWindowDays(config) });
  const wrote = [await files.write(spec.keyPath!, leaf.keyPem, { mode: 0o600 }), await files.write(spec.certPath!, leaf.certPem, { mode: 0o644 })].some(Boolean);
  const api = await cluster(ctx, 'final');
  const tokenSecretNames = (await listTokens(api)).map((t) => t.secretName);
  const changed = await api.apply(joinServiceObjects(config, { image: config.joinService.image, tls: { certPem: leaf.certPem, keyPem: leaf.keyPem, caPem: caPem! }, tokenSecretNames }));
  for (const ref of changed) ctx.log.info(`applied ${ref}`);
  // The service reads its TLS files once: a renewed certificate needs new pods.
  if (leaf.action === 'reissued' && !changed.some((r) => r.startsWith('Deployment/'))) await rollAndWait(ctx, api, [['Deployment', 'kubeception-join']]);
  await waitDeploymentAvailable(ctx, 'kubeception-join', 180_000);
  return { changed: wrote || changed.length > 0, detail: `${changed.length} object(s) changed; serving on NodePort 30000` };
}

async function waitDeploymentAvailable(ctx: Context, name: string, timeoutMs: number): Promise<void> {
  const api = await cluster(ctx, 'final');
  const available = await pollUntil(async () => {
    const d = await api.read<{ status?: { availableReplicas?: number } } & KubernetesObject>({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name, namespace: 'kube-system' } });
    if ((d?.status?.availableReplicas ?? 0) > 0) return true;
    const pods = await api.list<{ status?: { containerStatuses?: { state?: { waiting?: { reason?: string; message?: string } } }[] } } & KubernetesObject>('v1', 'Pod', 'kube-system', `app.kubernetes.io/name=${name}`);
    const waiting = pods.flatMap((p) => p.status?.containerStatuses ?? []).map((c) => c.state?.waiting).find((w) => w?.reason && /ErrImagePull|ImagePullBackOff|ErrImageNeverPull|InvalidImageName/.test(w.reason));
    if (waiting)
      throw new KubeceptionError('join-service-image', {
        what: `Deployment kube-system/${name}: image ${ctx.config.joinService.image}`,
        why: `the node cannot get the image (${waiting.reason}${waiting.message ? `: ${(waiting.message.split('\n')[0] ?? '').slice(0, 160)}` : ''})`,
        fix: 'build the image from Containerfile and make it available to the control-plane node (push it to a registry it can pull from, or import it into containerd), or set joinService.image',
      });
    return undefined;
  }, { timeoutMs, signal: ctx.signal });
  if (available) return;
  throw new TimeoutError('join-service-unavailable', {
    what: `Deployment kube-system/${name}`,
    why: `no available replica within ${timeoutMs / 1000} s`,
    fix: `check its pod (kubectl -n kube-system describe pod -l app.kubernetes.io/name=${name}); the image ${ctx.config.joinService.image} must be available to the node`,
  });
}
