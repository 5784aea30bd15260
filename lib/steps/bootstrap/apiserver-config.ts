/**
 * The `apiserver-config` step (bootstrap, and a control-plane join): the files of kube-apiserver's
 * hardening defaults (manifests/apiserver-hardening.ts), written before any apiserver that reads them
 * starts — the bootstrap static pod, or this node's pod of the self-hosted DaemonSet.
 *
 * Host effects, each for a default that is on: `<secretsDir>/audit-policy.yaml` and
 * `<secretsDir>/admission-config.yaml` (0600, rendered from the config, rewritten when they differ);
 * `<certificatesDir>/encryption-config.yaml` (0600): created once with a new key by bootstrap, kept as
 * it is on every later run (its mode repaired); a control-plane join takes the cluster's from the
 * uploaded certificates and never creates one. Its text is never logged.
 */
import { HostStateError } from '../../errors.ts';
import { toYaml } from '../../util/yaml.ts';
import { generateEncryptionConfig, parseEncryptionConfig, renderEncryptionConfig, writeProvider } from '../../pki/encryption-config.ts';
import { admissionConfiguration, auditPolicy, hardeningFiles, hardeningPaths } from '../../../manifests/apiserver-hardening.ts';
import type { Check } from '../preflight/preflight-check.ts';
import type { Context } from '../../context.ts';
import type { StepOutcome } from '../../engine/dsl.ts';

type Ctx = Pick<Context, 'config' | 'files' | 'log'>;

/**
 * The check that `secretsEncryption` can be turned off here: no encryption config on this node
 * (Secrets in etcd may be encrypted with its key; an apiserver without it could not read them).
 * @returns the problem, or undefined.
 */
async function encryptionProblem(ctx: Pick<Context, 'config' | 'files'>): Promise<{ message: string; fix: string } | undefined> {
  const path = hardeningPaths(ctx.config).encryptionConfig;
  const text = await ctx.files.read(path);
  if (text === undefined) return undefined;
  try {
    parseEncryptionConfig(text, path);
  } catch (err) {
    const e = err as HostStateError;
    return { message: `${e.what}: ${e.why}`, fix: e.fix ?? '' };
  }
  if (ctx.config.apiServer.secretsEncryption.disabled)
    return {
      message: `apiServer.secretsEncryption.disabled is set, but ${path} exists: Secrets in etcd may be encrypted with its key, and an apiserver without --encryption-provider-config could not read them`,
      fix: 'remove apiServer.secretsEncryption.disabled (to store Secrets in plain text again, follow docs/configuration.md#encryption-at-rest: identity first in the file, then a re-run rewrites every Secret)',
    };
  return undefined;
}

/**
 * Preflight check `EncryptionConfig`: an existing encryption config is one the apiserver can use, and
 * is not being dropped by `secretsEncryption.disabled`. Not ignorable: either would lose Secrets.
 */
export const encryptionConfigCheck: Check = { id: 'EncryptionConfig', ignorable: false, run: (ctx) => encryptionProblem(ctx) };

/**
 * Writes the hardening files (see the module docstring).
 * @param create whether a missing encryption config may be created (bootstrap) or must already be
 *   there (a control-plane join: it came with the uploaded certificates).
 * @returns the paths written (created, changed or mode repaired).
 * @throws HostStateError `encryption-config-invalid` (an unusable file), `encryption-config-missing`
 *   (a join without one), `encryption-config-disabled` (turned off while the file exists).
 */
export async function writeApiServerConfig(ctx: Ctx, create: boolean): Promise<string[]> {
  const { config } = ctx;
  const p = hardeningPaths(config);
  const a = config.apiServer;
  const written: string[] = [];
  const put = async (path: string, text: string) => {
    if (await ctx.files.write(path, text, { mode: 0o600, dirMode: 0o700 })) written.push(path);
  };
  const problem = await encryptionProblem(ctx);
  if (problem) throw new HostStateError(a.secretsEncryption.disabled ? 'encryption-config-disabled' : 'encryption-config-invalid', { what: p.encryptionConfig, why: problem.message, fix: problem.fix });
  if (!a.auditLog.disabled) await put(p.auditPolicy, toYaml(auditPolicy()));
  if (!a.podSecurity.disabled) await put(p.admissionConfig, toYaml(admissionConfiguration(config)));
  if (!a.secretsEncryption.disabled) {
    const text = await ctx.files.read(p.encryptionConfig);
    if (text === undefined && !create)
      throw new HostStateError('encryption-config-missing', {
        what: p.encryptionConfig,
        why: "the cluster's encryption config did not come with the uploaded certificates (an upload by an older kubeception?): this node's apiserver could not read the cluster's Secrets",
        fix: 'run `kubeception certs upload` again on a control-plane node and join with the new certificate key (or copy the file from a control-plane node, mode 0600)',
      });
    const c = text === undefined ? generateEncryptionConfig() : parseEncryptionConfig(text, p.encryptionConfig);
    await put(p.encryptionConfig, text ?? renderEncryptionConfig(c));
    if (text === undefined) ctx.log.info(`encryption at rest: new key ${writeProvider(c)} in ${p.encryptionConfig} (kept in every etcd snapshot's PKI part)`);
  }
  return written;
}

/**
 * For a site task file copied before `apiserver-config` existed (the apiservers' pods would fail on a
 * missing hostPath): writes the files, with a warning, when one the config asks for is missing. A
 * no-op otherwise. Called by `bootstrap-control-plane` and a control-plane join's `mark-control-plane`.
 * @returns the paths written. @throws as {@link writeApiServerConfig}.
 */
export async function apiServerConfigFallback(ctx: Ctx, create: boolean): Promise<string[]> {
  const missing = [];
  for (const f of hardeningFiles(ctx.config)) if (!(await ctx.files.exists(f))) missing.push(f);
  if (missing.length === 0) return [];
  ctx.log.warn(`this task file has no apiserver-config step (a copy from an older kubeception?): writing ${missing.join(', ')} now; copy the package's task file again`);
  return writeApiServerConfig(ctx, create);
}

/** `apiserver-config` of bootstrap: writes the files, creating the encryption key on the first run. */
export async function ensureApiServerConfig(ctx: Context): Promise<StepOutcome> {
  const written = await writeApiServerConfig(ctx, true);
  return { changed: written.length > 0, detail: written.length ? `wrote ${written.join(', ')}` : 'audit policy, admission and encryption config up to date' };
}

/** `apiserver-config` of a control-plane join: writes the files; the encryption config must be the cluster's (from `control-plane-certs`). */
export async function ensureJoinedApiServerConfig(ctx: Context): Promise<StepOutcome> {
  const written = await writeApiServerConfig(ctx, false);
  return { changed: written.length > 0, detail: written.length ? `wrote ${written.join(', ')}` : 'audit policy, admission and encryption config up to date' };
}
