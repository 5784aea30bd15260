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
import { nextRotationPhase, parseEncryptionConfig, renderEncryptionConfig, rotated, writeProvider, type RotationPhase } from '../../pki/encryption-config.ts';
import { HostStateError } from '../../errors.ts';
import { applyComponentByComponent, controlPlaneNodeCount, selfHostedManifests } from './self-hosted.ts';
import { hardeningPaths } from '../../../manifests/apiserver-hardening.ts';
import { MANAGED_BY, NAMESPACE } from '../../../manifests/common.ts';
import { renderRecoveryManifest, rolledOutDaemonSet } from '../recovery/recovery.ts';
import type { Cluster, KubernetesObject } from '../../k8s/client.ts';
import type { Context } from '../../context.ts';
import type { StepOutcome } from '../../engine/dsl.ts';

/** The ConfigMap recording the last complete rewrite. */
export const SECRETS_ENCRYPTION_RECORD = 'kubeception-secrets-encryption';

const recordRef = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: SECRETS_ENCRYPTION_RECORD, namespace: NAMESPACE } };

/** Records that every Secret was rewritten with `writtenWith`. */
const record = (api: Cluster, writtenWith: string) =>
  api.apply([{ ...recordRef, metadata: { ...recordRef.metadata, labels: { ...MANAGED_BY } }, data: { writtenWith } } as KubernetesObject]);

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
  const recorded = await api.read<V1ConfigMap>(recordRef).catch(() => undefined);
  if (recorded?.data?.writtenWith === want) return { changed: false, detail: `every Secret written with ${want}` };
  // Every apiserver must run the current config first: the kube-apiserver DaemonSet rolled out (its
  // pod template carries the digest of the file).
  if (!ctx.dryRun && !(await rolledOutDaemonSet(ctx, api, 180_000))) {
    ctx.log.warn('the kube-apiserver DaemonSet has not rolled out: Secrets not rewritten yet (the next `kubeception run bootstrap` does it)');
    return { changed: false, detail: 'waiting for the kube-apiserver rollout: Secrets not rewritten' };
  }
  const { written, skipped } = await rewriteAllSecrets(api);
  await record(api, want);
  return { changed: true, detail: `${written} Secret(s) rewritten with ${want}${skipped ? ` (${skipped} changed or deleted meanwhile: written already)` : ''}` };
}

/** One line per phase of {@link rotateEncryptionKey}: what was done, in ms. */
export interface RotationLine {
  phase: RotationPhase | 'resume';
  detail: string;
  ms: number;
}

/**
 * `kubeception secrets rotate-key`: a new key for Secrets, in upstream's order — add it second, roll
 * the apiservers; make it first, roll; rewrite every Secret; drop the old key, roll — so no
 * apiserver ever meets a value it cannot decrypt, and each roll is a surge (the new pod serves beside
 * the old one). A killed run is resumed by the next one from the file and the record (see
 * `nextRotationPhase`). Key names only are shown.
 * Host effects: the encryption config (0600) written up to three times; the recovery copy refreshed.
 * API effects: the kube-apiserver DaemonSet rolled (the file's digest), every Secret rewritten, the record.
 * @param line called after each phase.
 * @throws HostStateError `encryption-rotate-ha` (more than one control-plane node: the new key would
 *   be on this node only), `encryption-config-missing`, `encryption-rotate-*`; TimeoutError from a roll.
 */
export async function rotateEncryptionKey(ctx: Context, line: (l: RotationLine) => void = () => {}): Promise<string> {
  const path = hardeningPaths(ctx.config).encryptionConfig;
  const text = await ctx.files.read(path);
  if (text === undefined)
    throw new HostStateError('encryption-config-missing', { what: path, why: 'there is no encryption config on this node: nothing to rotate', fix: 'turn apiServer.secretsEncryption on and run `kubeception run bootstrap`' });
  let c = parseEncryptionConfig(text, path);
  const api = await cluster(ctx, 'final');
  const nodes = await controlPlaneNodeCount(api);
  if (nodes > 1)
    throw new HostStateError('encryption-rotate-ha', { what: path, why: `the cluster has ${nodes} control-plane nodes: a new key written here would be on this node only, and the other apiservers could not read what it encrypts`, fix: 'rotate by hand on every control-plane node (docs/configuration.md#encryption-at-rest)' });
  const writtenWith = async () => (await api.read<V1ConfigMap>(recordRef))?.data?.writtenWith;
  const roll = async () => {
    const { rolled } = await applyComponentByComponent(ctx, api, await selfHostedManifests(ctx, api), { waitAll: true });
    return rolled.length ? `rolled ${rolled.join(', ')}` : 'no roll needed';
  };
  const timed = async (phase: RotationLine['phase'], fn: () => Promise<string>) => {
    const t = Date.now();
    const detail = await fn();
    line({ phase, detail, ms: Date.now() - t });
  };
  // A run killed mid-roll left a file the apiservers may not all have yet.
  await timed('resume', roll);
  let phase = nextRotationPhase(c, await writtenWith(), path, true);
  while (phase) {
    const p: RotationPhase = phase;
    if (p === 'rewrite') {
      await timed(p, async () => {
        const { written } = await rewriteAllSecrets(api);
        await record(api, writeProvider(c));
        return `${written} Secret(s) rewritten with ${writeProvider(c)}`;
      });
    } else {
      c = rotated(c, p);
      await ctx.files.write(path, renderEncryptionConfig(c), { mode: 0o600, dirMode: 0o700 });
      await timed(p, async () => `${path}: ${(c.providers[0] as { keys: { name: string }[] }).keys.map((k) => k.name).join(', ')}; ${await roll()}`);
    }
    phase = p === 'drop' ? undefined : nextRotationPhase(c, await writtenWith(), path, false);
  }
  await renderRecoveryManifest(ctx);
  return writeProvider(c);
}
