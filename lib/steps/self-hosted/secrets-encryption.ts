/**
 * The `secrets-encryption` step: every Secret rewritten with the encryption config's write provider
 * once the apiservers run that config — what upstream's `kubectl get secrets -A -o json | kubectl
 * replace -f -` does, through the API client. A Secret stored in plain text (written before
 * encryption was on) or with another key is read, and written back unchanged: the apiserver writes
 * it to etcd again because its storage reports such a value as stale, now with the first provider.
 *
 * Which provider the Secrets were last rewritten with is recorded in the ConfigMap
 * `kube-system/kubeception-secrets-encryption` (`writtenWith`: a provider and key *name*, e.g.
 * `secretbox/key-1`; never key bytes), so a converged re-run is one read. A Secret that changed or
 * went away between the list and its rewrite was written by an apiserver with the current config,
 * or needs nothing: either way it is done.
 *
 * API effects: a PUT of each Secret (resourceVersion-guarded), the ConfigMap applied.
 * @see https://kubernetes.io/docs/tasks/administer-cluster/encrypt-data/#ensure-all-secrets-are-encrypted
 */
import type { V1ConfigMap, V1Secret } from '@kubernetes/client-node';
import { cluster } from '../../k8s/apiserver.ts';
import { parseEncryptionConfig, writeProvider } from '../../pki/encryption-config.ts';
import { hardeningPaths } from '../../../manifests/apiserver-hardening.ts';
import { MANAGED_BY, NAMESPACE } from '../../../manifests/common.ts';
import { rolledOutDaemonSet } from '../recovery/recovery.ts';
import type { Cluster, KubernetesObject } from '../../k8s/client.ts';
import type { Context } from '../../context.ts';
import type { StepOutcome } from '../../engine/dsl.ts';

/** The ConfigMap recording the last complete rewrite. */
export const SECRETS_ENCRYPTION_RECORD = 'kubeception-secrets-encryption';

const recordRef = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: SECRETS_ENCRYPTION_RECORD, namespace: NAMESPACE } };

/**
 * Writes `s` back as read. @returns true if written, false if it changed or was deleted meanwhile.
 * @throws KubeceptionError `apiserver-request` for any other failure.
 */
async function rewrite(api: Cluster, s: V1Secret): Promise<boolean> {
  const obj = { ...s, apiVersion: 'v1', kind: 'Secret' } as KubernetesObject;
  try {
    return await api.replace(obj);
  } catch (err) {
    if (!(await api.read(obj as Parameters<Cluster['read']>[0]))) return false;
    throw err;
  }
}

/**
 * Rewrites every Secret in the cluster through `api`. @returns how many were written and how many
 * had changed or gone meanwhile (done either way).
 */
export async function rewriteAllSecrets(api: Cluster): Promise<{ written: number; skipped: number }> {
  const secrets = await api.list<V1Secret>('v1', 'Secret');
  let written = 0;
  for (const s of secrets) if (await rewrite(api, s)) written++;
  return { written, skipped: secrets.length - written };
}

/** `secrets-encryption` (see the module docstring); a no-op without an encryption config or once recorded. */
export async function ensureSecretsEncrypted(ctx: Context): Promise<StepOutcome> {
  const path = hardeningPaths(ctx.config).encryptionConfig;
  const text = await ctx.files.read(path);
  if (text === undefined) return { changed: false, detail: 'no encryption config: Secrets are stored as written' };
  const want = writeProvider(parseEncryptionConfig(text, path));
  const api = await cluster(ctx, 'final');
  const record = await api.read<V1ConfigMap>(recordRef).catch(() => undefined);
  if (record?.data?.writtenWith === want) return { changed: false, detail: `every Secret written with ${want}` };
  // Every apiserver must run the current config first: the kube-apiserver DaemonSet rolled out (its
  // pod template carries the digest of the file).
  if (!ctx.dryRun && !(await rolledOutDaemonSet(ctx, api, 180_000))) {
    ctx.log.warn('the kube-apiserver DaemonSet has not rolled out: Secrets not rewritten yet (the next `kubeception run bootstrap` does it)');
    return { changed: false, detail: 'waiting for the kube-apiserver rollout: Secrets not rewritten' };
  }
  const { written, skipped } = await rewriteAllSecrets(api);
  await api.apply([{ ...recordRef, metadata: { ...recordRef.metadata, labels: { ...MANAGED_BY } }, data: { writtenWith: want } } as KubernetesObject]);
  return { changed: true, detail: `${written} Secret(s) rewritten with ${want}${skipped ? ` (${skipped} changed or deleted meanwhile: written already)` : ''}` };
}
