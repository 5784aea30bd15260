/**
 * The steps of `kubeception run rotate-sa-key` (tasks/rotate-sa-key.ts): a new service-account
 * signing key, rolled in so that no token in use stops working — trusted first, signed with second,
 * the old public key retired only once the tokens it signed have expired (lib/pki/sa-rotation.ts has
 * the phases and why). Each writing step first waits for any roll a killed run left, writes, then rolls
 * the self-hosted control plane (the files' digest on the pod templates) and waits for it, so an
 * apiserver never meets a token signed by a key it does not trust.
 *
 * Host effects: `sa-next.key` (0600) and `sa.pub` (0644) written; `sa.key` (0600) replaced by the new
 * key (the old private key is gone from the host: etcd snapshots taken before keep it in their
 * encrypted PKI part); {@link SA_ROTATION_RECORD} (0600, key ids and a time only); the recovery copy.
 * API effects: the kube-apiserver DaemonSet and kube-controller-manager Deployment rolled; on retiring,
 * each legacy token Secret (`kubernetes.io/service-account-token`) signed by a retired key has its
 * token removed, which the controller-manager's token controller signs again with the new key.
 * Key ids (`kid`) only are ever shown; never key or token bytes.
 * @see https://kubernetes.io/docs/reference/access-authn-authz/service-accounts-admin/
 */
import { join } from 'node:path';
import type { V1Secret } from '@kubernetes/client-node';
import { HostStateError, TimeoutError } from '../../errors.ts';
import { cluster } from '../../k8s/apiserver.ts';
import type { Cluster } from '../../k8s/client.ts';
import { generatePrivateKey, loadPrivateKey } from '../../pki/keys.ts';
import { jwtKeyId, RETIRE_AFTER_MS, retired, saRotationPhase, trustNext, type SaFiles } from '../../pki/sa-rotation.ts';
import { renderRecoveryManifest } from '../recovery/recovery.ts';
import { applyComponentByComponent, controlPlaneNodeCount, selfHostedManifests } from './self-hosted.ts';
import type { Context } from '../../context.ts';
import type { SaRotationContext } from '../contexts.ts';
import type { StepOutcome } from '../../engine/dsl.ts';

/** Where the time the new key started signing is recorded (for the retirement's wait). */
export const SA_ROTATION_RECORD = '/var/lib/kubeception/sa-key-rotation.json';


const paths = (ctx: Context) => ({ key: join(ctx.config.certificatesDir, 'sa.key'), pub: join(ctx.config.certificatesDir, 'sa.pub'), next: join(ctx.config.certificatesDir, 'sa-next.key') });

async function readFiles(ctx: Context): Promise<SaFiles> {
  const p = paths(ctx);
  const [key, pub, next] = await Promise.all([ctx.files.read(p.key), ctx.files.read(p.pub), ctx.files.read(p.next)]);
  return { key, pub, next, paths: p };
}

/** Waits for any roll under way (a killed run's), then rolls to the host's files and waits. @returns the workloads rolled. */
async function roll(ctx: Context, api: Cluster): Promise<string[]> {
  const { rolled } = await applyComponentByComponent(ctx, api, await selfHostedManifests(ctx, api), { waitAll: true });
  return rolled;
}
const rolledText = (r: string[]) => (r.length ? `; rolled ${r.join(', ')}` : '');
const at = (ms: number) => new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');

/**
 * `preflight`: the phase the files are in, one control-plane node only, and when retiring is due.
 * @throws PkiError `pki-sa-rotation` (files changed by something else); HostStateError
 *   `sa-rotate-ha` (more than one control-plane node: the other nodes' apiservers would not trust the new key).
 */
export async function saRotationPreflight(ctx: SaRotationContext): Promise<StepOutcome> {
  const start = saRotationPhase(await readFiles(ctx));
  const api = await cluster(ctx, 'final');
  const nodes = await controlPlaneNodeCount(api);
  if (nodes > 1)
    throw new HostStateError('sa-rotate-ha', { what: paths(ctx).key, why: `the cluster has ${nodes} control-plane nodes: a key written here would be on this node only, and the other nodes' apiservers would reject the tokens it signs`, fix: 'rotate on a single control-plane cluster, or by hand on every control-plane node in the same order (docs/operations.md#rotating-the-service-account-signing-key)' });
  const record = await ctx.files.read(SA_ROTATION_RECORD);
  let retireDueMs: number | undefined;
  if (record) {
    const r = JSON.parse(record) as { signingKeyId?: string; signingSince?: string };
    if (start.phase === 'retire' && r.signingKeyId === start.signing && r.signingSince) retireDueMs = Date.parse(r.signingSince) + RETIRE_AFTER_MS;
  }
  ctx.state.saRotation = { start, retireDueMs };
  const what =
    start.phase === 'trust-next' ? `signing with ${start.signing}: a new key will be made`
    : start.phase === 'sign-next' ? `${start.next} is trusted: signing moves to it`
    : `signing with ${start.signing}; ${start.previous.join(', ')} still trusted${retireDueMs ? ` (retiring due ${at(retireDueMs)})` : ''}`;
  return { changed: false, detail: what };
}

/** `trust-next-key`: skipped unless no rotation is under way. */
export const notStarting = (ctx: SaRotationContext): string | false =>
  ctx.state.saRotation?.start.phase !== 'trust-next' && `a rotation is under way (${ctx.state.saRotation?.start.phase}): it goes on from there`;

/** `sign-with-next-key`: skipped when the run began by retiring. */
export const retiring = (ctx: SaRotationContext): string | false => ctx.state.saRotation?.start.phase === 'retire' && 'the new key signs already';

/**
 * `retire-previous-keys`: skipped unless the run began with old keys still trusted and their tokens
 * have expired ({@link RETIRE_AFTER_MS} after the switch; `--force`: now).
 */
export function notDue(ctx: SaRotationContext): string | false {
  const s = ctx.state.saRotation;
  if (!s) return 'no preflight';
  if (s.start.phase !== 'retire') return `the previous key stays trusted until the tokens it signed have expired: run \`kubeception run rotate-sa-key\` again after ${at(Date.now() + RETIRE_AFTER_MS)} to retire it`;
  if (ctx.options.force) return false;
  if (s.retireDueMs === undefined) return `${SA_ROTATION_RECORD} does not say since when ${s.start.signing} signs: retire ${s.start.previous.join(', ')} with --force once no token they signed is in use`;
  return Date.now() < s.retireDueMs && `tokens signed by ${s.start.previous.join(', ')} may be in use until ${at(s.retireDueMs)}: run again then (or with --force)`;
}

/** `trust-next-key`: makes the new key (sa-next.key, 0600) and appends its public key to sa.pub; rolls. */
export async function trustNextKey(ctx: SaRotationContext): Promise<StepOutcome> {
  const api = await cluster(ctx, 'final');
  const pending = await roll(ctx, api);
  const f = await readFiles(ctx);
  const nextPem = f.next ?? (await generatePrivateKey(ctx.config.encryptionAlgorithm));
  if (f.next === undefined) await ctx.files.write(f.paths.next, nextPem, { mode: 0o600, dirMode: 0o755 });
  const next = loadPrivateKey(nextPem, f.paths.next, false);
  const changed = await ctx.files.write(f.paths.pub, trustNext(f.pub!, f.paths.pub, next), { mode: 0o644, dirMode: 0o755 });
  const rolled = await roll(ctx, api);
  const phase = saRotationPhase(await readFiles(ctx));
  return { changed: changed || rolled.length > 0, detail: `${f.paths.pub} trusts ${phase.phase === 'sign-next' ? phase.next : '?'} beside ${phase.signing}${rolledText([...pending, ...rolled])}` };
}

/** `sign-with-next-key`: sa.key becomes sa-next.key's key (the time recorded), sa-next.key removed; rolls. */
export async function signWithNextKey(ctx: SaRotationContext): Promise<StepOutcome> {
  const api = await cluster(ctx, 'final');
  const pending = await roll(ctx, api);
  const f = await readFiles(ctx);
  const phase = saRotationPhase(f);
  if (phase.phase !== 'sign-next') return { changed: pending.length > 0, detail: `nothing to switch (${phase.phase})${rolledText(pending)}` };
  await ctx.files.write(f.paths.key, f.next!, { mode: 0o600, dirMode: 0o755 });
  await ctx.files.write(SA_ROTATION_RECORD, `${JSON.stringify({ signingKeyId: phase.next, signingSince: new Date().toISOString(), previousKeyIds: [phase.signing] })}\n`, { mode: 0o600, dirMode: 0o755 });
  await ctx.files.remove(f.paths.next);
  const rolled = await roll(ctx, api);
  return { changed: true, detail: `signing with ${phase.next}; ${phase.signing} still trusted${rolledText([...pending, ...rolled])}` };
}

/**
 * Legacy token Secrets (`kubernetes.io/service-account-token`) whose token a key of `kids` signed:
 * their token is removed, so that the token controller signs a new one. @returns their `namespace/name`.
 */
async function resignLegacyTokens(api: Cluster, kids: string[]): Promise<string[]> {
  const done: string[] = [];
  for (const s of await api.list<V1Secret>('v1', 'Secret')) {
    const token = s.type === 'kubernetes.io/service-account-token' ? s.data?.token : undefined;
    const kid = token ? jwtKeyId(Buffer.from(token, 'base64').toString('utf8')) : undefined;
    if (!kid || !kids.includes(kid)) continue;
    await api.patch({ apiVersion: 'v1', kind: 'Secret', metadata: { name: s.metadata!.name!, namespace: s.metadata!.namespace! } }, { data: { token: null } });
    done.push(`${s.metadata!.namespace}/${s.metadata!.name}`);
  }
  return done;
}

/** `retire-previous-keys`: sa.pub holds the signing key's public key only; legacy tokens of the retired keys re-signed; rolls. */
export async function retirePreviousKeys(ctx: SaRotationContext): Promise<StepOutcome> {
  const api = await cluster(ctx, 'final');
  const pending = await roll(ctx, api);
  const f = await readFiles(ctx);
  const phase = saRotationPhase(f);
  if (phase.phase !== 'retire') return { changed: pending.length > 0, detail: `nothing to retire (${phase.phase})${rolledText(pending)}` };
  await ctx.files.write(f.paths.pub, retired(f.key!, f.paths.key), { mode: 0o644, dirMode: 0o755 });
  const rolled = await roll(ctx, api);
  const resigned = ctx.dryRun ? [] : await resignLegacyTokens(api, phase.previous);
  return { changed: true, detail: `${phase.previous.join(', ')} retired: only ${phase.signing} is trusted${rolledText([...pending, ...rolled])}${resigned.length ? `; legacy token Secrets signed again: ${resigned.join(', ')}` : ''}` };
}

/** `apiserver-recovery`: the last-known-good copy follows the rolled kube-apiserver. */
export async function refreshRecoveryCopy(ctx: Context): Promise<StepOutcome> {
  const changed = await renderRecoveryManifest(ctx);
  if (changed === undefined) throw new TimeoutError('recovery-not-rolled-out', { what: 'DaemonSet kube-system/kube-apiserver', why: 'its rollout did not complete within 120 s: the recovery copy was not refreshed', fix: 'check the kube-apiserver pods, then run `kubeception run rotate-sa-key` again' });
  return { changed: changed.length > 0, detail: changed.length ? `${changed.length} file(s) of the recovery copy refreshed` : 'recovery copy current' };
}
