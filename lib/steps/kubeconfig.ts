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
import { HostStateError } from '../errors.ts';
import { kubeconfigClientSpecs } from '../pki/certs.ts';
import { reconcileLeaf } from '../pki/reconcile.ts';
import { parseKubeconfig, renderKubeconfig } from '../k8s/kubeconfig.ts';
import { apiserverUrls, kubeconfigPaths } from '../k8s/endpoints.ts';
import { renewalWindowDays } from './certs.ts';
import type { Context } from '../context.ts';
import type { StepOutcome } from '../dsl.ts';

/** The `kubeconfig` step body. */
export async function ensureKubeconfigs(ctx: Context): Promise<StepOutcome> {
  const { config, files } = ctx;
  const caPath = join(config.certificatesDir, 'ca.crt');
  const [caPem, caKeyPem] = await Promise.all([files.read(caPath), files.read(join(config.certificatesDir, 'ca.key'))]);
  if (!caPem || !caKeyPem) throw new HostStateError('pki-missing', { what: caPath, why: 'the cluster CA is missing', fix: 'run the certs step first' });
  const urls = apiserverUrls(config);
  const paths = kubeconfigPaths(config);
  const targets: Record<string, [string, string][]> = {
    admin: [[paths.admin, urls.final], [paths.bootstrapAdmin, urls.bootstrap]],
    'controller-manager': [[paths.controllerManager, urls.final], [paths.bootstrapControllerManager, urls.bootstrap]],
    scheduler: [[paths.scheduler, urls.final], [paths.bootstrapScheduler, urls.bootstrap]],
    kubelet: [[paths.kubelet, '']],
  };
  const done: string[] = [];
  for (const spec of kubeconfigClientSpecs(config)) {
    const [primary] = targets[spec.name]!;
    const existingText = await files.read(primary![0]);
    const existing = existingText ? parseKubeconfig(existingText, primary![0]) : {};
    const leaf = await reconcileLeaf(spec, { certPem: existing.certPem, keyPem: existing.keyPem }, { certPem: caPem, keyPem: caKeyPem }, config, { renewBeforeDays: renewalWindowDays(config) });
    if (leaf.action !== 'kept') ctx.log.info(`${spec.name}: client certificate ${leaf.action} (${leaf.reason})`);
    for (const [path, server] of targets[spec.name]!) {
      const current = path === primary![0] ? existing.server : undefined;
      const chosen = server || (current === urls.final || current === urls.bootstrap ? current : urls.bootstrap);
      const text = renderKubeconfig({ server: chosen, caPem, user: spec.commonName, certPem: leaf.certPem, keyPem: leaf.keyPem });
      if (await files.write(path, text, { mode: 0o600, dirMode: 0o755 })) done.push(path);
    }
  }
  return { changed: done.length > 0, detail: done.length ? `${done.length} written` : 'all up to date' };
}
