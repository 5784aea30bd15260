/**
 * The kubelet's serving certificate on a control-plane node (`serverTLSBootstrap: true`): signed
 * here with the cluster CA, before the kubelet starts, into the kubelet's own certificate store
 * (`<kubeletConfigDir>/pki/kubelet-server-<stamp>.pem`, certificate then key, 0600, and the symlink
 * `kubelet-server-current.pem`). The bootstrap node's kubelet serves with it from its first second,
 * so `kubectl logs`/`exec` work through the bootstrap apiserver (which verifies it,
 * `--kubelet-certificate-authority`) before kubeception's CSR approver runs. Its SANs are what the
 * kubelet's own request would carry — the Node's addresses: `nodeName` (the Hostname address,
 * `--hostname-override`) and `advertiseAddress` (the InternalIP, `--node-ip`) — so the kubelet's
 * certificate manager finds its template satisfied and keeps it; it renews it by CSR (decided by the
 * approver, lib/join/serving-csr.ts) at 70–90 % of its lifetime. Workers have no CA key: their
 * kubelet asks by CSR once its Node is registered (`wait-kubelet-serving-cert` waits for it).
 *
 * Reconciled like every leaf: a valid certificate (kubeception's or one the kubelet rotated) is kept.
 * @see kubernetes/pkg/kubelet/certificate/kubelet.go (NewKubeletServerCertificateManager)
 * @see k8s.io/client-go/util/certificate/certificate_manager.go (certSatisfiesTemplate)
 */
import { join } from 'node:path';
import { NODES_GROUP, nodeUser } from '../../constants.ts';
import { TimeoutError } from '../../errors.ts';
import { anyCertFacts } from '../../pki/any-cert.ts';
import { certSignedBy, firstCertificatePem } from '../../pki/keys.ts';
import { pollUntil } from '../../util/poll.ts';
import type { StepOutcome } from '../../engine/dsl.ts';
import { serverTLSBootstrap } from '../../config/kubelet-defaults.ts';
import { LEAF_VALIDITY_DAYS, type LeafSpec } from '../../pki/certs.ts';
import type { PkiError } from '../../pki/errors.ts';
import { reconcileLeaf } from '../../pki/reconcile.ts';
import { classifySANs } from '../../pki/san.ts';
import type { Context } from '../../context.ts';
import type { KubeletState } from '../contexts.ts';
import type { ResolvedConfig } from '../../types.ts';
import { renewalWindowDays } from './certs.ts';
import { splitPem, writeKubeletStorePair } from './kubelet-client.ts';

/** The symlink the kubelet's serving certificate manager reads (`--cert-dir` is `<kubeletConfigDir>/pki`). */
export const kubeletServingCurrent = (config: ResolvedConfig) => join(config.distro.paths.kubeletConfigDir, 'pki', 'kubelet-server-current.pem');

/** The serving certificate's spec: CN `system:node:<nodeName>`, O `system:nodes`, server auth, SANs the Node's addresses. */
export function kubeletServingSpec(config: ResolvedConfig): LeafSpec {
  return {
    kind: 'leaf', name: 'kubelet-server', longName: "the kubelet's serving certificate", caName: 'ca',
    commonName: nodeUser(config.nodeName), organizations: [NODES_GROUP], usages: ['serverAuth'],
    altNames: classifySANs([config.nodeName, config.localAPIEndpoint.advertiseAddress], 'nodeName/localAPIEndpoint.advertiseAddress'),
    validityDays: config.certificateValidityDays ?? LEAF_VALIDITY_DAYS,
  };
}

/**
 * Keeps or (re-)issues the serving certificate, when `serverTLSBootstrap` is on and this host holds
 * the cluster CA key (a control-plane node); otherwise does nothing.
 * @returns what changed, for the step's detail (empty if nothing).
 * @throws PkiError `pki-ca-key-mismatch` / `pki-bad-*` for an unusable cluster CA.
 */
export async function ensureKubeletServingCert(ctx: Context<object, KubeletState>): Promise<string[]> {
  const { config, files } = ctx;
  if (!serverTLSBootstrap(config)) return [];
  const [caPem, caKeyPem] = await Promise.all(['ca.crt', 'ca.key'].map((f) => files.read(join(config.certificatesDir, f))));
  if (!caPem || !caKeyPem) return [];
  const spec = kubeletServingSpec(config);
  const ca = { certPem: caPem, keyPem: caKeyPem };
  const opts = { renewBeforeDays: renewalWindowDays(config) };
  const existing = splitPem((await files.read(kubeletServingCurrent(config))) ?? '');
  const leaf = await reconcileLeaf(spec, existing, ca, config, opts).catch((err: PkiError) => {
    // A key the kubelet chose and kubeception cannot read: start over with a new pair (the kubelet would).
    if (err.code !== 'pki-bad-key') throw err;
    return reconcileLeaf(spec, {}, ca, config, opts);
  });
  if (leaf.action === 'kept') return [];
  ctx.log.info(`kubelet: serving certificate ${leaf.action} (${leaf.reason})`);
  return (await writeKubeletStorePair(ctx, 'server', leaf.certPem, leaf.keyPem)) ? [`serving certificate ${leaf.action}`] : [];
}

/** skipIf of `wait-kubelet-serving-cert`: the reason when `serverTLSBootstrap` is off. */
export function noServingBootstrap(ctx: Pick<Context, 'config'>): string | false {
  return serverTLSBootstrap(ctx.config) ? false : 'kubelet.extraConfig.serverTLSBootstrap is false: the kubelet serves with a self-signed certificate';
}

/** How long `wait-kubelet-serving-cert` waits, ms. */
export const SERVING_CERT_TIMEOUT_MS = 120_000;

/**
 * `wait-kubelet-serving-cert` (join): the kubelet serves with a certificate from the cluster CA —
 * on a worker once its Node is registered, its serving CSR approved by kubeception's approver and
 * signed (a few seconds); on a control-plane node at once (signed here). Until then the apiserver
 * cannot reach it for `kubectl logs`/`exec`: the join ends when they work.
 * @throws TimeoutError `kubelet-serving-cert` after {@link SERVING_CERT_TIMEOUT_MS}.
 */
export async function waitKubeletServingCert(ctx: Context): Promise<StepOutcome> {
  const { config, files } = ctx;
  const path = kubeletServingCurrent(config);
  if (ctx.dryRun) return { changed: false, detail: `would wait for ${path} (a certificate of the cluster CA)` };
  const t0 = Date.now();
  const issued = async () => {
    const [caPem, pem] = await Promise.all([files.read(join(config.certificatesDir, 'ca.crt')), files.read(path)]);
    const certPem = pem && firstCertificatePem(pem);
    return caPem && certPem && certSignedBy(certPem, caPem) && anyCertFacts(certPem, path).commonName === nodeUser(config.nodeName) ? true : undefined;
  };
  if (await pollUntil(issued, { timeoutMs: SERVING_CERT_TIMEOUT_MS, intervalMs: 250, ...(ctx.signal && { signal: ctx.signal }) }))
    return { changed: false, detail: `${path} is from the cluster CA (after ${((Date.now() - t0) / 1000).toFixed(1)} s)` };
  throw new TimeoutError('kubelet-serving-cert', {
    what: `kubelet on ${config.nodeName}: ${path}`,
    why: `no serving certificate from the cluster CA within ${SERVING_CERT_TIMEOUT_MS / 1000} s: its CSR (signer kubernetes.io/kubelet-serving) was not approved, was denied, or the kubelet did not ask`,
    fix: `see \`kubectl get csr\` on the control plane (a Denied one says why) and \`journalctl -u ${config.distro.units.kubelet}\` here; or set kubelet.extraConfig.serverTLSBootstrap: false on every node`,
  });
}
