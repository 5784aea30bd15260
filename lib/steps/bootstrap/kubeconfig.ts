/**
 * The `kubeconfig` step (kubeadm's `kubeconfig` phase): admin, controller-manager and scheduler
 * kubeconfigs for the final apiserver and for the bootstrap apiserver, and the kubelet's kubeconfig.
 * Client certificates are reconciled like every leaf (kept if valid, re-issued for the same key if
 * not), embedded in the files, never written elsewhere.
 *
 * Host effects: files mode 0600 under the distro's `secretsDir` (`admin.conf`,
 * `controller-manager.conf`, `scheduler.conf`, and `bootstrap-*.conf`) and `kubeletConfigDir/kubeconfig`.
 * The kubelet's kubeconfig keeps its server if it already names the bootstrap or final apiserver
 * (the pivot steps move it); otherwise it points at the bootstrap apiserver.
 */
import { join } from 'node:path';
import { HostStateError } from '../../errors.ts';
import { kubeconfigClientSpecs, type LeafSpec } from '../../pki/certs.ts';
import { anyCertFacts } from '../../pki/any-cert.ts';
import { certSignedBy } from '../../pki/keys.ts';
import type { PkiError } from '../../pki/errors.ts';
import { kubeletClientCurrent, readKubeletClient, writeKubeletClient } from './kubelet-client.ts';
import { reconcileLeaf } from '../../pki/reconcile.ts';
import { parseKubeconfig, renderKubeconfig } from '../../k8s/kubeconfig.ts';
import { apiserverUrls, controlPlaneUrl, kubeconfigPaths } from '../../k8s/endpoints.ts';
import { renewalWindowDays } from './certs.ts';
import type { Context } from '../../context.ts';
import type { KubeletState } from '../contexts.ts';
import type { StepOutcome } from '../../engine/dsl.ts';
import { crashPoint } from '../../engine/crash.ts';
import { writeThenPending } from '../../host/pending.ts';
import { kubeletRestart } from './kubelet.ts';

/** The error for a kubeconfig kubeception would rewrite but cannot parse. */
export function unreadableKubeconfig(path: string, why: string): HostStateError {
  return new HostStateError('kubeconfig-unreadable', {
    what: path,
    why: `it is not a readable kubeconfig (${why}); rewriting it would replace its client key`,
    fix: `restore it from a backup, or move it aside (mv ${path} ${path}.bad) so kubeception issues a new key and certificate`,
  });
}

/** The `kubeconfig` step body. */
export const ensureKubeconfigs = (ctx: Context<object, KubeletState>): Promise<StepOutcome> => writeKubeconfigs(ctx, { kubelet: true });

/**
 * The `kubeconfig` step of a control-plane join: admin.conf and the controllers' kubeconfigs; the
 * kubelet gets its client certificate by TLS bootstrapping, as a worker's does.
 */
export const ensureJoinedKubeconfigs = (ctx: Context<object, KubeletState>): Promise<StepOutcome> => writeKubeconfigs(ctx, { kubelet: false });

async function writeKubeconfigs(ctx: Context<object, KubeletState>, opts: { kubelet: boolean }): Promise<StepOutcome> {
  const { config, files } = ctx;
  const caPath = join(config.certificatesDir, 'ca.crt');
  const [caPem, caKeyPem] = await Promise.all([files.read(caPath), files.read(join(config.certificatesDir, 'ca.key'))]);
  if (!caPem || !caKeyPem) throw new HostStateError('pki-missing', { what: caPath, why: 'the cluster CA is missing', fix: 'run the certs step first' });
  const urls = apiserverUrls(config);
  const paths = kubeconfigPaths(config);
  const targets: Record<string, [string, string][]> = {
    // admin.conf is the operator's: on the controlPlaneEndpoint when set (kubeadm's admin.conf); the
    // controllers and this node's kubelet talk to the local apiserver (kubeadm's
    // ControlPlaneKubeletLocalMode), and kubeception's own client does too (lib/k8s/apiserver.ts).
    admin: [[paths.admin, controlPlaneUrl(config)], [paths.bootstrapAdmin, urls.bootstrap]],
    // The self-hosted controllers' kubeconfigs go into Secrets shared by a replica on every
    // control-plane node: loopback, i.e. each replica's own node's apiserver.
    'controller-manager': [[paths.controllerManager, urls.loopback], [paths.bootstrapControllerManager, urls.bootstrap]],
    scheduler: [[paths.scheduler, urls.loopback], [paths.bootstrapScheduler, urls.bootstrap]],
  };
  const done: string[] = [];
  for (const spec of kubeconfigClientSpecs(config)) {
    if (spec.name === 'kubelet') {
      if (!opts.kubelet) continue;
      if (await ensureKubeletKubeconfig(ctx, spec, caPem, caKeyPem)) done.push(paths.kubelet);
      continue;
    }
    const [primary] = targets[spec.name]!;
    const existingText = await files.read(primary![0]);
    const existing = existingText ? parseKubeconfig(existingText, primary![0]) : {};
    // An unreadable file may still hold the only copy of a key: refuse rather than issue a new one.
    if (existing.error) throw unreadableKubeconfig(primary![0], existing.error);
    const leaf = await reconcileLeaf(spec, { certPem: existing.certPem, keyPem: existing.keyPem }, { certPem: caPem, keyPem: caKeyPem }, config, { renewBeforeDays: renewalWindowDays(config) });
    if (leaf.action !== 'kept') ctx.log.info(`${spec.name}: client certificate ${leaf.action} (${leaf.reason})`);
    for (const [path, server] of targets[spec.name]!) {
      const current = path === primary![0] ? existing.server : undefined;
      const chosen = server || (current === urls.final || current === urls.bootstrap ? current : urls.bootstrap);
      const text = renderKubeconfig({ server: chosen, caPem, user: spec.commonName, certPem: leaf.certPem, keyPem: leaf.keyPem });
      // The running kubelet reads its kubeconfig only at start: a change owes it a restart.
      const restarts = path === paths.kubelet ? [kubeletRestart(ctx)] : [];
      if (await writeThenPending(ctx, path, text, { mode: 0o600, dirMode: 0o755 }, restarts)) done.push(path);
    }
  }
  crashPoint('kubelet-kubeconfig-written');
  return { changed: done.length > 0, detail: done.length ? `${done.length} written` : 'all up to date' };
}

/**
 * The kubelet's kubeconfig: names the rotating client certificate file (lib/steps/bootstrap/kubelet-client.ts),
 * whose certificate is reconciled like any leaf (a valid one the kubelet rotated itself is kept).
 * Keeps its server if it names the bootstrap or final apiserver, else the bootstrap one.
 * @returns true if the kubeconfig or the certificate changed.
 */
async function ensureKubeletKubeconfig(ctx: Context<object, KubeletState>, spec: LeafSpec, caPem: string, caKeyPem: string): Promise<boolean> {
  const { config } = ctx;
  const urls = apiserverUrls(config);
  const existing = await readKubeletClient(ctx);
  const ca = { certPem: caPem, keyPem: caKeyPem };
  const opts = { renewBeforeDays: renewalWindowDays(config) };
  const leaf = await reconcileLeaf(spec, { certPem: existing.certPem, keyPem: existing.keyPem }, ca, config, opts).catch(async (err) => {
    // A certificate the kubelet rotated itself has a key of its choice (ECDSA): keep it while it is
    // valid beyond the window (the kubelet renews it by CSR); otherwise issue one for a new key.
    if (!['pki-bad-key', 'pki-bad-cert'].includes((err as PkiError).code) || !existing.certPem) throw err;
    const info = anyCertFacts(existing.certPem, kubeletClientCurrent(config));
    const fresh = info.commonName === spec.commonName && certSignedBy(existing.certPem, caPem) && info.notAfter.getTime() - Date.now() > opts.renewBeforeDays * 86_400_000;
    return fresh ? { certPem: existing.certPem, keyPem: existing.keyPem!, action: 'kept' as const, reason: 'rotated by the kubelet' } : reconcileLeaf(spec, {}, ca, config, opts);
  });
  if (leaf.action !== 'kept') ctx.log.info(`kubelet: client certificate ${leaf.action} (${leaf.reason})`);
  const certChanged = await writeKubeletClient(ctx, leaf.certPem, leaf.keyPem);
  const server = existing.server === urls.final || existing.server === urls.bootstrap ? existing.server : urls.bootstrap;
  const text = renderKubeconfig({ server, caPem, user: spec.commonName, certFile: kubeletClientCurrent(config) });
  // The running kubelet reads its kubeconfig only at start: a change owes it a restart (persisted).
  const wrote = await writeThenPending(ctx, kubeconfigPaths(config).kubelet, text, { mode: 0o600, dirMode: 0o755 }, [kubeletRestart(ctx)]);
  return wrote || certChanged;
}
