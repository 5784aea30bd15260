/**
 * The control plane's side of joining, kubeadm's `bootstrap-token` phase plus kubeception's join
 * service: the `bootstrap-token` step (TLS-bootstrap RBAC, the kube-public cluster-info ConfigMap
 * the bootstrapsigner signs, a valid bootstrap token and the public token index) and the
 * `join-service` step (the discovery service behind NodePort 30000 and the CSR approver), then
 * `wait-join-service` (both Deployments available).
 *
 * Host effects: `<certificatesDir>/kubeception-join.crt` (0644) and `.key` (0600), the transport
 * certificate (not from the cluster CA); objects applied through the active apiserver (the bootstrap
 * one while it runs: they go in while the self-hosted one starts; see `activeApiserver`).
 */
import { join } from 'node:path';
import { pollUntil } from '../../util/poll.ts';
import { firstLine } from '../../util/text.ts';
import { KubeceptionError, TimeoutError } from '../../errors.ts';
import { cluster } from '../../k8s/apiserver.ts';
import { controlPlaneUrl } from '../../k8s/endpoints.ts';
import { BOOTSTRAP_DESCRIPTION, remainingMs, tokenFromSecret } from '../../join/token.ts';
import { clusterInfoConfigMap } from '../../join/cluster-info.ts';
import { reconcileTransportCert } from '../../join/transport-cert.ts';
import type { KubernetesObject } from '../../k8s/client.ts';
import { caCertHash, createToken, deleteExpiredTokens, joinCommand, joinUrl, syncTokenIndex } from '../../join/tokens-api.ts';
import { holdControlPlaneNames, NODE_IDENTITIES, readIdentities } from '../../join/node-identities.ts';
import { bootstrapTokenRbac, REMOVED_BOOTSTRAP_BINDINGS } from '../../../manifests/bootstrap-token-rbac.ts';
import { joinServiceObjects, JOIN_SERVICE_NAME, LEGACY_TOKEN_READER_ROLE } from '../../../manifests/join-service.ts';
import { csrApproverObjects, CSR_APPROVER_NAME } from '../../../manifests/csr-approver.ts';
import { apiServerSharedSans } from '../../pki/certs.ts';
import type { Context } from '../../context.ts';
import type { BootstrapTokenState } from '../contexts.ts';
import type { StepOutcome } from '../../engine/dsl.ts';
import { crashPoint } from '../../engine/crash.ts';
import { activeApiserver } from '../bootstrap/control-plane.ts';

/** Lifetime of the token bootstrap creates; a token with less than `MIN_LEFT_MS` left is replaced. */
const TOKEN_TTL_MS = 24 * 3_600_000;
const MIN_LEFT_MS = 3_600_000;

/**
 * `bootstrap-token`: RBAC, cluster-info, the node identity record holding this node's name (the CSR
 * approver refuses it to every token), a bootstrap token valid for at least an hour that has not bought
 * its node yet (reused while it has not), the token index.
 */
export async function ensureBootstrapToken(ctx: Context<object, BootstrapTokenState>): Promise<StepOutcome> {
  const api = await cluster(ctx, await activeApiserver(ctx));
  const caPem = await ctx.files.read(join(ctx.config.certificatesDir, 'ca.crt'));
  const changed = await api.apply([...bootstrapTokenRbac(), clusterInfoConfigMap(controlPlaneUrl(ctx.config), caPem ?? '')]);
  for (const name of REMOVED_BOOTSTRAP_BINDINGS)
    if (await api.delete({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name } })) changed.push(`deleted ClusterRoleBinding/${name}`);
  const held = await holdControlPlaneNames(api, [ctx.config.nodeName]);
  if (held) changed.push(`ConfigMap/kube-system/${NODE_IDENTITIES}`);
  const removed = await deleteExpiredTokens(api);
  if (removed.length) ctx.log.info(`deleted expired tokens: ${removed.join(', ')}`);
  const now = new Date();
  const tokens = await syncTokenIndex(api);
  const used = (await readIdentities(api)).tokens;
  const usable = tokens.find((t) => t.description === BOOTSTRAP_DESCRIPTION && remainingMs(t, now) > MIN_LEFT_MS && !used.has(t.id));
  let token: string | undefined;
  if (usable)
    token = tokenFromSecret(await api.read<{ data?: Record<string, string> } & KubernetesObject>({ apiVersion: 'v1', kind: 'Secret', metadata: { name: usable.secretName, namespace: 'kube-system' } }));
  const created = !token;
  token ??= await createToken(api, TOKEN_TTL_MS, BOOTSTRAP_DESCRIPTION);
  ctx.options.addSecret(token);
  const hash = await caCertHash(ctx.config, ctx.files);
  ctx.state.joinCommand = joinCommand(ctx.config, token, hash);
  ctx.state.joinInfo = { url: joinUrl(ctx.config), caCertHash: hash, tokenId: token.split('.')[0]!, tokenCreated: created };
  return { changed: created || changed.length > 0 || removed.length > 0, detail: created ? `token ${token.slice(0, 6)} created (24h)` : `token ${usable!.id} still valid` };
}

/**
 * `join-service`: the transport certificate, the join service and CSR approver objects. It does not
 * wait for their pods (their first try needs the self-hosted apiserver): `wait-join-service` does.
 */
export async function ensureJoinService(ctx: Context): Promise<StepOutcome> {
  const { config, files } = ctx;
  const certPath = join(config.certificatesDir, 'kubeception-join.crt');
  const keyPath = join(config.certificatesDir, 'kubeception-join.key');
  const [caPem, certPem, keyPem] = await Promise.all([join(config.certificatesDir, 'ca.crt'), certPath, keyPath].map((p) => files.read(p)));
  const tls = await reconcileTransportCert({ certPem, keyPem }, caPem ?? '');
  const wrote = [await files.write(keyPath, tls.keyPem, { mode: 0o600 }), await files.write(certPath, tls.certPem, { mode: 0o644 })].some(Boolean);
  const api = await cluster(ctx, await activeApiserver(ctx));
  const changed = await api.apply([...joinServiceObjects(config, { image: config.joinService.image, tls: { certPem: tls.certPem, keyPem: tls.keyPem } }), ...csrApproverObjects(config.joinService.image, config.localAPIEndpoint.bindPort, apiServerSharedSans(config))]);
  for (const kind of ['RoleBinding', 'Role'])
    if (await api.delete({ apiVersion: 'rbac.authorization.k8s.io/v1', kind, metadata: { name: LEGACY_TOKEN_READER_ROLE, namespace: 'kube-system' } })) changed.push(`deleted ${kind}/${LEGACY_TOKEN_READER_ROLE}`);
  for (const ref of changed) ctx.log.info(`applied ${ref}`);
  crashPoint('objects-applied');
  return { changed: wrote || changed.length > 0, detail: `${changed.length} object(s) changed` };
}

/**
 * `wait-join-service`: the join service and the CSR approver each have an available replica.
 * @throws KubeceptionError `join-service-image` at once if a pod cannot get its image;
 *   TimeoutError `join-service-unavailable` after 180 s.
 */
export async function waitJoinService(ctx: Context): Promise<StepOutcome> {
  await Promise.all([JOIN_SERVICE_NAME, CSR_APPROVER_NAME].map((name) => waitDeploymentAvailable(ctx, name, 180_000)));
  return { changed: false, detail: 'serving on NodePort 30000; CSR approver running' };
}

async function waitDeploymentAvailable(ctx: Context, name: string, timeoutMs: number): Promise<void> {
  if (ctx.dryRun) return;
  const api = await cluster(ctx, await activeApiserver(ctx));
  const available = await pollUntil(async () => {
    const d = await api.read<{ status?: { availableReplicas?: number } } & KubernetesObject>({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name, namespace: 'kube-system' } });
    if ((d?.status?.availableReplicas ?? 0) > 0) return true;
    const pods = await api.list<{ status?: { containerStatuses?: { state?: { waiting?: { reason?: string; message?: string } } }[] } } & KubernetesObject>('v1', 'Pod', 'kube-system', `app.kubernetes.io/name=${name}`);
    const waiting = pods.flatMap((p) => p.status?.containerStatuses ?? []).map((c) => c.state?.waiting).find((w) => w?.reason && /ErrImagePull|ImagePullBackOff|ErrImageNeverPull|InvalidImageName/.test(w.reason));
    if (waiting)
      throw new KubeceptionError('join-service-image', {
        what: `Deployment kube-system/${name}: image ${ctx.config.joinService.image}`,
        why: `the node cannot get the image (${waiting.reason}${waiting.message ? `: ${firstLine(waiting.message)}` : ''})`,
        fix: 'build the image from Containerfile and make it available to the control-plane node (push it to a registry it can pull from, or import it into containerd), or set joinService.image',
      });
    return undefined;
  }, { timeoutMs, intervalMs: 250, signal: ctx.signal });
  if (available) return;
  throw new TimeoutError('join-service-unavailable', {
    what: `Deployment kube-system/${name}`,
    why: `no available replica within ${timeoutMs / 1000} s`,
    fix: `check its pod (kubectl -n kube-system describe pod -l app.kubernetes.io/name=${name}); the image ${ctx.config.joinService.image} must be available to the node`,
  });
}
