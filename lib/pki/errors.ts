/**
 * The PKI's error type. Every problem with certificates or keys is a {@link PkiError} with a stable
 * `pki-*` code. Messages name files and certificates, never key bytes.
 */
import { KubeceptionError, type ErrorDetails } from '../errors.ts';

/** Stable codes of {@link PkiError}. */
export type PkiErrorCode =
  /** `encryptionAlgorithm` is not one of kubeadm's values. Bad input (the config schema refuses it first). */
  | 'pki-unsupported-algorithm'
  /** A key on disk is unreadable, encrypted, or neither RSA nor ECDSA. Bad input (host state). */
  | 'pki-bad-key'
  /** A certificate that must be kept (a CA) is unreadable. Bad input (host state). */
  | 'pki-bad-cert'
  /** A CA certificate exists but its key does not. Bad input (host state). */
  | 'pki-ca-key-missing'
  /** A CA certificate exists but its key belongs to another certificate. Bad input (host state). */
  | 'pki-ca-key-mismatch'
  /** A file at a CA path is not a CA certificate (basicConstraints CA:FALSE). Bad input (host state). */
  | 'pki-not-a-ca'
  /** `sa.pub` exists without `sa.key`, or does not match it. Bad input (host state). */
  | 'pki-sa-mismatch'
  /** The service-account files are not in a state a key rotation can go on from (lib/pki/sa-rotation.ts). Bad input (host state). */
  | 'pki-sa-rotation'
  /** A SAN (`apiServer.extraSANs`, `controlPlaneEndpoint`) is neither an IP nor a DNS name. Bad input. */
  | 'pki-invalid-san'
  /** Building or signing a certificate failed inside the crypto library. A failed action. */
  | 'pki-sign';

/**
 * A PKI error: `what` names the certificate or file, `why` says what is wrong in kubeadm's terms,
 * `fix` is one instruction. Host-state and config problems are bad input (exit 2, host unchanged);
 * `pki-sign` is a failed action (exit 1).
 */
export class PkiError extends KubeceptionError {
  override readonly badInput: boolean;
  declare readonly code: PkiErrorCode;

  constructor(code: PkiErrorCode, details: ErrorDetails) {
    super(code, details);
    this.badInput = code !== 'pki-sign';
  }
}

/** First line of a foreign error's message, for `why`; never includes key material. */
export function causeLine(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err);
  return msg.split('\n')[0] ?? '';
}
