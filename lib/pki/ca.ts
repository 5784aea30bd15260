/**
 * Reconciling a CA and the `sa` key pair. Neither is ever replaced: an existing CA certificate or
 * key, or `sa.key`/`sa.pub`, is kept or the run is refused with a typed error. Pure: PEM in, PEM out.
 */
import type { ResolvedConfig } from '../types.ts';
import type { CaSpec, KeyPairSpec } from './certs.ts';
import { PkiError } from './errors.ts';
import { createCaCert, parseCert } from './x509.ts';
import { describeKey, generatePrivateKey, keyAlgorithmNote, loadPrivateKey, publicKeyDer, publicKeyPem } from './keys.ts';
import { publicKeys } from './sa-rotation.ts';
import { DEFAULT_RENEW_BEFORE_DAYS, loadCa, type CaMaterial, type PkiAction, type ReconcileOptions } from './leaf.ts';

/** A reconciled CA or key pair. */
export interface RootResult {
  action: PkiAction;
  reason: string;
}

const DAY_MS = 86_400_000;
const day = (d: Date) => d.toISOString().slice(0, 10);

/**
 * Reconciles a CA: keeps an existing certificate whose key is present and matches; creates a
 * self-signed CA (validity `spec.validityDays`) if the certificate is missing, reusing an existing
 * key. An expired or expiring CA is kept and the reason says so: renewing a CA is an operator's act.
 * @throws PkiError `pki-ca-key-missing` if the certificate exists without its key;
 * `pki-ca-key-mismatch`, `pki-not-a-ca`, `pki-bad-key`, `pki-bad-cert` for unusable files.
 */
export async function reconcileCa(
  spec: CaSpec,
  existing: { certPem?: string; keyPem?: string },
  config: Pick<ResolvedConfig, 'encryptionAlgorithm'>,
  opts: ReconcileOptions = {},
): Promise<CaMaterial & RootResult> {
  const now = opts.now ?? new Date();
  const { certPem, keyPem } = existing;
  if (certPem === undefined) {
    const pem = keyPem ?? (await generatePrivateKey(config.encryptionAlgorithm));
    const key = loadPrivateKey(pem, spec.keyPath);
    const cert = await createCaCert({ commonName: spec.commonName, validityDays: spec.validityDays, now }, key, spec.certPath);
    const reason = keyPem === undefined ? 'no certificate or key' : `no certificate; self-signed with the existing ${describeKey(key)} key`;
    return { certPem: cert, keyPem: pem, action: 'created', reason };
  }
  if (keyPem === undefined) {
    throw new PkiError('pki-ca-key-missing', {
      what: spec.keyPath,
      why: `the ${spec.name} CA certificate ${spec.certPath} exists but its key does not: kubeception cannot sign ${spec.name} certificates, and replacing the CA would invalidate every credential it issued`,
      fix: `restore ${spec.keyPath} from a backup; or, if nothing trusts this CA yet, move ${spec.certPath} aside to have a new CA created`,
    });
  }
  const info = await parseCert(certPem, spec.certPath);
  if (!info.isCA) {
    throw new PkiError('pki-not-a-ca', {
      what: spec.certPath,
      why: `"${info.commonName}" is not a CA certificate (basicConstraints CA:FALSE), so it cannot be the ${spec.name} CA`,
      fix: `move ${spec.certPath} and ${spec.keyPath} aside to have a ${spec.name} CA created, or put the real CA there`,
    });
  }
  const key = loadCa({ certPem, keyPem }, spec.name, spec.certPath, spec.keyPath);
  const daysLeft = (info.notAfter.getTime() - now.getTime()) / DAY_MS;
  const renew = opts.renewBeforeDays ?? DEFAULT_RENEW_BEFORE_DAYS;
  const reason =
    daysLeft <= 0
      ? `EXPIRED on ${day(info.notAfter)}; a CA is never replaced automatically — renew it by hand (kubeadm certs renew does not renew CAs either)`
      : daysLeft < renew
        ? `expires in ${Math.floor(daysLeft)} days (${day(info.notAfter)}); a CA is never replaced automatically — plan its rotation`
        : `valid until ${day(info.notAfter)}`;
  return { certPem, keyPem, action: 'kept', reason: reason + keyAlgorithmNote(key, config.encryptionAlgorithm) };
}

/**
 * Reconciles the service-account key pair: keeps `sa.key` (any key type the apiserver accepts),
 * derives `sa.pub` from it if missing, creates both if both are missing.
 * @returns the PEM key and public key (`sa.pub` text unchanged when kept).
 * @throws PkiError `pki-sa-mismatch` if `sa.pub` exists without `sa.key` or does not hold its public key
 * (it may hold others: a key rotation's);
 * `pki-bad-key` if either is unreadable.
 * @see kubernetes/cmd/kubeadm/app/phases/certs/certs.go (CreateServiceAccountKeyAndPublicKeyFiles)
 */
export async function reconcileSa(
  spec: KeyPairSpec,
  existing: { keyPem?: string; publicKeyPem?: string },
  config: Pick<ResolvedConfig, 'encryptionAlgorithm'>,
): Promise<{ keyPem: string; publicKeyPem: string } & RootResult> {
  const { keyPem, publicKeyPem: pubPem } = existing;
  if (keyPem === undefined) {
    if (pubPem !== undefined) {
      throw new PkiError('pki-sa-mismatch', {
        what: spec.publicKeyPath,
        why: `${spec.publicKeyPath} exists without ${spec.keyPath}: service-account tokens in use were signed by a key kubeception does not have, and a new pair would invalidate them`,
        fix: `restore ${spec.keyPath} from a backup, or remove ${spec.publicKeyPath} to have a new pair created`,
      });
    }
    const pem = await generatePrivateKey(config.encryptionAlgorithm);
    return { keyPem: pem, publicKeyPem: publicKeyPem(loadPrivateKey(pem, spec.keyPath)), action: 'created', reason: 'no key pair' };
  }
  const key = loadPrivateKey(keyPem, spec.keyPath, false);
  if (pubPem === undefined) return { keyPem, publicKeyPem: publicKeyPem(key), action: 'kept', reason: `kept ${describeKey(key)} key; ${spec.publicKeyPath} re-derived from it` };
  // sa.pub may hold more than one key during a key rotation (lib/pki/sa-rotation.ts): sa.key's must be one of them.
  if (!publicKeys(pubPem, spec.publicKeyPath).some((k) => publicKeyDer(k).equals(publicKeyDer(key)))) {
    throw new PkiError('pki-sa-mismatch', {
      what: `${spec.keyPath}, ${spec.publicKeyPath}`,
      why: `${spec.publicKeyPath} is not the public key of ${spec.keyPath}: the apiserver would reject the tokens the controller-manager signs`,
      fix: `remove ${spec.publicKeyPath} to have it re-derived from ${spec.keyPath} (or restore the matching ${spec.keyPath})`,
    });
  }
  return { keyPem, publicKeyPem: pubPem, action: 'kept', reason: `${describeKey(key)} key pair${keyAlgorithmNote(key, config.encryptionAlgorithm)}` };
}
