/**
 * The `certs` step (kubeadm's `certs` phase) and its preflight check. The PKI rules live in
 * lib/pki/reconcile.ts; this file connects them to the step context.
 */
import { reconcilePki } from '../../pki/reconcile.ts';
import { certSpecs } from '../../pki/certs.ts';
import { loadCa } from '../../pki/leaf.ts';
import type { KubeceptionError } from '../../errors.ts';
import { DEFAULT_RENEWAL_WINDOW_DAYS } from '../../constants.ts';
import type { ResolvedConfig } from '../../types.ts';

/** Leaves expiring within this many days are re-issued by `run bootstrap` (`certificateRenewalWindow`). */
export const renewalWindowDays = (config: ResolvedConfig) => config.certificateRenewBeforeDays ?? DEFAULT_RENEWAL_WINDOW_DAYS;
import type { Context } from '../../context.ts';
import type { PkiState } from '../contexts.ts';
import type { StepOutcome } from '../../engine/dsl.ts';
import type { Check } from '../preflight/preflight-check.ts';

/**
 * Preflight check `Certificates`: every existing CA certificate has its key and they match, so the
 * certs step cannot be refused halfway. Reads only.
 */
export const pkiPreflightCheck: Check = {
  id: 'Certificates',
  async run(ctx) {
    for (const spec of certSpecs(ctx.config)) {
      if (spec.kind !== 'ca') continue;
      const [certPem, keyPem] = await Promise.all([ctx.files.read(spec.certPath), ctx.files.read(spec.keyPath)]);
      if (certPem === undefined) continue;
      if (keyPem === undefined)
        return { message: `${spec.certPath} exists but its key ${spec.keyPath} is missing; kubeception never replaces a CA`, fix: `restore ${spec.keyPath} from a backup, or move ${spec.certPath} aside to create a new ${spec.name} CA (every certificate it signed is then re-issued)` };
      try {
        loadCa({ certPem, keyPem }, spec.name, spec.certPath, spec.keyPath);
      } catch (err) {
        const e = err as KubeceptionError;
        return { message: e.what && e.why ? `${e.what}: ${e.why}` : (e.why ?? e.message), fix: e.fix ?? `restore the matching ${spec.keyPath}` };
      }
    }
    return undefined;
  },
};

/** The `certs` step body: reconcile the PKI and report what changed. */
export async function reconcileCerts(ctx: Context<object, PkiState>): Promise<StepOutcome> {
  const report = await reconcilePki(ctx.config, ctx.files, { renewBeforeDays: renewalWindowDays(ctx.config) });
  ctx.state.pki = report.entries;
  for (const e of report.entries) if (e.action !== 'kept') ctx.log.info(`${e.name}: ${e.action} (${e.reason})`);
  const count = (a: string) => report.entries.filter((e) => e.action === a).length;
  return {
    changed: report.written.length > 0,
    detail: `${count('created')} created, ${count('reissued')} re-issued, ${count('kept')} kept`,
  };
}
