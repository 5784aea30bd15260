/**
 * Reconciling one leaf certificate against its spec: keep it if valid, re-issue it if not, and never
 * replace an existing key (a re-issued certificate reuses it, so key files stay byte-identical).
 * Pure: takes and returns PEM strings; the caller reads and writes files.
 */
import type { KeyObject } from 'node:crypto';
import type { ResolvedConfig } from '../types.ts';
import type { CaName, LeafSpec } from './certs.ts';
import { PkiError } from './errors.ts';
import { certMatchesKey, createSignedCert, isSignedBy, parseCert, type CertInfo } from './x509.ts';
import { describeKey, generatePrivateKey, keyAlgorithmNote, loadPrivateKey } from './keys.ts';
import { diffAltNames } from './san.ts';

/** What reconcile did to a certificate or key pair. */
export type PkiAction = 'kept' | 'created' | 'reissued';

/** A CA's certificate and key, PEM. */
export interface CaMaterial {
  certPem: string;
  keyPem: string;
}

/** Options of {@link reconcileLeaf} and `reconcilePki`. */
export interface ReconcileOptions {
  /** The current time; default `new Date()`. */
  now?: Date;
  /** Re-issue leaves that expire within this many days. Default 30. */
  renewBeforeDays?: number;
}

/** A reconciled leaf: PEM certificate and key (the key unchanged unless it was missing). */
export interface LeafResult {
  certPem: string;
  keyPem: string;
  action: PkiAction;
  /** Why, for the user: `valid until 2027-03-01`, `SANs missing: IP:10.0.0.9`. Never key material. */
  reason: string;
}

export const DEFAULT_RENEW_BEFORE_DAYS = 30;
const DAY_MS = 86_400_000;
const day = (d: Date) => d.toISOString().slice(0, 10);
const list = (xs: readonly string[]) => `[${xs.join(', ')}]`;
const sameSet = (a: readonly string[], b: readonly string[]) => list([...a].sort()) === list([...b].sort());

/** Loads a CA pair and checks the key is the certificate's. @throws PkiError `pki-bad-*`, `pki-ca-key-mismatch`. */
export function loadCa(ca: CaMaterial, name: CaName, certPath = `${name} CA certificate`, keyPath = `${name} CA key`): KeyObject {
  const key = loadPrivateKey(ca.keyPem, keyPath);
  if (!certMatchesKey(ca.certPem, key, certPath)) {
    throw new PkiError('pki-ca-key-mismatch', {
      what: `${keyPath}, ${certPath}`,
      why: `${keyPath} is not the key of the ${name} CA certificate: nothing can be signed for this CA`,
      fix: `restore the matching key from a backup; or, if nothing trusts this CA yet, move ${certPath} aside to have it re-created`,
    });
  }
  return key;
}

/** Every way `info` differs from `spec`, as short phrases. Empty if the certificate is good. */
function leafProblems(spec: LeafSpec, info: CertInfo, certPem: string, ca: CaMaterial, key: KeyObject, opts: Required<ReconcileOptions>): string[] {
  const p: string[] = [];
  const src = spec.certPath ?? spec.name;
  if (info.isCA) p.push('is a CA certificate');
  if (info.commonName !== spec.commonName) p.push(`CN is "${info.commonName}", want "${spec.commonName}"`);
  if (!sameSet(info.organizations, spec.organizations)) p.push(`O is ${list(info.organizations)}, want ${list(spec.organizations)}`);
  if (!sameSet(info.usages, spec.usages)) p.push(`extended key usages are ${list(info.usages)}, want ${list(spec.usages)}`);
  const { missing, unexpected } = diffAltNames(info, spec.altNames);
  if (missing.length) p.push(`SANs missing: ${missing.join(', ')}`);
  if (unexpected.length) p.push(`unexpected SANs: ${unexpected.join(', ')}`);
  if (!isSignedBy(certPem, ca.certPem, src)) p.push(`not signed by the current ${spec.caName} CA`);
  if (!certMatchesKey(certPem, key, src)) p.push('does not match its key');
  const daysLeft = (info.notAfter.getTime() - opts.now.getTime()) / DAY_MS;
  if (daysLeft <= 0) p.push(`expired on ${day(info.notAfter)}`);
  else if (daysLeft < opts.renewBeforeDays)
    p.push(`expires in ${Math.floor(daysLeft)} days (${day(info.notAfter)}), within the ${opts.renewBeforeDays}-day renewal window`);
  return p;
}

/**
 * Reconciles one leaf certificate: keeps `existing.certPem` if it matches `spec` (CN, O, extended
 * key usages, SANs), chains to `ca`, matches the key and is valid for more than `renewBeforeDays`;
 * otherwise issues a new one (validity `spec.validityDays`). An existing key is always reused; a
 * missing key is generated with `config.encryptionAlgorithm` (an existing key of another algorithm is
 * kept, and the reason says so). The kubeconfig code calls this for
 * the client certificates embedded in kubeconfig files.
 * @returns PEM certificate and key, the action and its reason.
 * @throws PkiError `pki-bad-key` if `existing.keyPem` is unreadable, encrypted or neither RSA nor ECDSA (a key is never replaced);
 * `pki-bad-key`/`pki-bad-cert`/`pki-ca-key-mismatch` for an unusable `ca`; `pki-unsupported-algorithm`.
 */
export async function reconcileLeaf(
  spec: LeafSpec,
  existing: { certPem?: string; keyPem?: string },
  ca: CaMaterial,
  config: Pick<ResolvedConfig, 'encryptionAlgorithm'>,
  opts: ReconcileOptions = {},
): Promise<LeafResult> {
  const o = { now: opts.now ?? new Date(), renewBeforeDays: opts.renewBeforeDays ?? DEFAULT_RENEW_BEFORE_DAYS };
  const caKey = loadCa(ca, spec.caName);
  const keyPem = existing.keyPem ?? (await generatePrivateKey(config.encryptionAlgorithm));
  const key = loadPrivateKey(keyPem, spec.keyPath ?? `${spec.name} key`);
  const issue = async (action: PkiAction, reason: string): Promise<LeafResult> => {
    const template = { ...spec.altNames, commonName: spec.commonName, organizations: spec.organizations, usages: spec.usages, validityDays: spec.validityDays, now: o.now };
    const certPem = await createSignedCert(template, key, { certPem: ca.certPem, key: caKey }, spec.certPath ?? spec.name);
    return { certPem, keyPem, action, reason };
  };
  if (existing.certPem === undefined)
    return issue('created', existing.keyPem === undefined ? 'no certificate or key' : `no certificate; issued for the existing ${describeKey(key)} key`);
  if (existing.keyPem === undefined) return issue('reissued', 'key missing; issued for a new key');
  let info: CertInfo;
  try {
    info = await parseCert(existing.certPem, spec.certPath ?? spec.name);
  } catch (err) {
    if (err instanceof PkiError && err.code === 'pki-bad-cert') return issue('reissued', `certificate unreadable: ${err.why}`);
    throw err;
  }
  const problems = leafProblems(spec, info, existing.certPem, ca, key, o);
  if (problems.length) return issue('reissued', problems.join('; '));
  return { certPem: existing.certPem, keyPem, action: 'kept', reason: `valid until ${day(info.notAfter)}${keyAlgorithmNote(key, config.encryptionAlgorithm)}` };
}
