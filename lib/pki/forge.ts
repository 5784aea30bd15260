/**
 * X.509 certificates: the one wrapper around node-forge. forge builds and parses the ASN.1; the RSA
 * private-key operation (signing) is done by OpenSSL through {@link signSha256}, ~40× faster than
 * forge's pure-JS RSA. Certificates cross this module's boundary as PEM strings, keys as
 * `KeyObject`s; no forge type leaks out.
 *
 * Limits: RSA only. forge cannot put an ECDSA public key into a certificate nor parse one, so
 * `ECDSA-P256` is refused by {@link assertSupportedAlgorithm} and an ECDSA certificate on disk is
 * reported as unreadable (`pki-bad-cert`).
 *
 * @see kubernetes/cmd/kubeadm/app/util/pkiutil/pki_helpers.go (NewSelfSignedCACert, NewSignedCert)
 */
import { createHash, randomBytes, type KeyObject } from 'node:crypto';
import forge from 'node-forge';
import { isIP, normalizeIP } from '../net/cidr.ts';
import { causeLine, PkiError } from './errors.ts';
import { publicKeyDer, signSha256 } from './keys.ts';

/** Extended key usages kubeception issues (kubeadm's `x509.ExtKeyUsageServerAuth`/`ClientAuth`). */
export type ExtKeyUsage = 'serverAuth' | 'clientAuth';

/** What to put into a certificate. */
export interface CertTemplate {
  commonName: string;
  /** Subject O entries; Kubernetes reads them as groups. Default none. */
  organizations?: readonly string[];
  /** DNS SANs (wildcards allowed). */
  dnsNames?: readonly string[];
  /** IP SANs, IPv4 or IPv6 literals. */
  ipAddresses?: readonly string[];
  /** Extended key usages of a leaf; ignored for a CA. */
  usages?: readonly ExtKeyUsage[];
  /** Lifetime from `now`, in days. `notBefore` is backdated 5 minutes against clock skew. */
  validityDays: number;
  /** Issue time; default the current time. */
  now?: Date;
}

/** A parsed certificate: the fields reconcile compares, normalised. */
export interface CertInfo {
  commonName: string;
  /** Subject O entries in certificate order. */
  organizations: string[];
  issuerCommonName: string;
  /** DNS SANs, lower-cased. */
  dnsNames: string[];
  /** IP SANs, normalised (`fd00:0::1` → `fd00::1`). */
  ipAddresses: string[];
  notBefore: Date;
  notAfter: Date;
  /** basicConstraints CA:TRUE. */
  isCA: boolean;
  /** Extended key usages, sorted (`clientAuth`, `serverAuth`, or other forge names / OIDs). */
  usages: string[];
  /** Serial number, hex. */
  serialNumber: string;
  /** SHA-256 of the SubjectPublicKeyInfo: `sha256:<hex>` (see {@link spkiSha256}). */
  publicKeySha256: string;
}

const BACKDATE_MS = 5 * 60_000;
const DAY_MS = 86_400_000;

function toForgePublicKey(key: KeyObject): forge.pki.PublicKey {
  const der = publicKeyDer(key).toString('binary');
  return forge.pki.publicKeyFromAsn1(forge.asn1.fromDer(der));
}

/** A positive 127-bit serial with a non-zero first byte, so its DER INTEGER is minimal. */
function randomSerialHex(): string {
  const b = randomBytes(16);
  b[0] = (b[0]! & 0x7f) | 0x40;
  return b.toString('hex');
}

function subjectAttrs(t: CertTemplate): forge.pki.CertificateField[] {
  return [...(t.organizations ?? []).map((value) => ({ shortName: 'O', value })), { shortName: 'CN', value: t.commonName }];
}

function altNames(t: CertTemplate): { type: number; value?: string; ip?: string }[] {
  return [
    ...(t.dnsNames ?? []).map((value) => ({ type: 2, value })),
    ...(t.ipAddresses ?? []).map((ip) => ({ type: 7, ip: normalizeIP(ip) })),
  ];
}

function baseCert(t: CertTemplate, publicKey: KeyObject): forge.pki.Certificate {
  const now = (t.now ?? new Date()).getTime();
  const cert = forge.pki.createCertificate();
  cert.publicKey = toForgePublicKey(publicKey);
  cert.serialNumber = randomSerialHex();
  cert.validity.notBefore = new Date(now - BACKDATE_MS);
  cert.validity.notAfter = new Date(now + t.validityDays * DAY_MS);
  cert.setSubject(subjectAttrs(t));
  return cert;
}

/** `pki.getTBSCertificate` exists in node-forge but is missing from @types/node-forge. */
interface ForgeTbs {
  getTBSCertificate(cert: forge.pki.Certificate): forge.asn1.Asn1;
}

/** Signs with OpenSSL: forge serialises the TBSCertificate, `node:crypto` signs it. */
function signAndEncode(cert: forge.pki.Certificate, signer: KeyObject, source: string): string {
  try {
    cert.signatureOid = cert.siginfo.algorithmOid = forge.pki.oids.sha256WithRSAEncryption!;
    cert.tbsCertificate = (forge.pki as unknown as ForgeTbs).getTBSCertificate(cert);
    const tbs = Buffer.from(forge.asn1.toDer(cert.tbsCertificate).getBytes(), 'binary');
    cert.signature = signSha256(tbs, signer, source).toString('binary');
    return forge.pki.certificateToPem(cert);
  } catch (err) {
    if (err instanceof PkiError) throw err;
    throw new PkiError('pki-sign', { what: source, why: `building the certificate failed (${causeLine(err)})`, fix: 'report this as a kubeception bug', cause: err });
  }
}

/**
 * A self-signed CA certificate (basicConstraints CA:TRUE critical; keyUsage digitalSignature,
 * keyEncipherment, keyCertSign critical; subjectKeyIdentifier), SHA-256 with RSA.
 * @param source name for error messages, e.g. the certificate path.
 * @returns PEM certificate.
 * @throws PkiError `pki-sign` if building or signing fails.
 */
export function createCaCert(t: CertTemplate, key: KeyObject, source: string): string {
  const cert = baseCert(t, key);
  cert.setIssuer(subjectAttrs(t));
  cert.setExtensions([
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', critical: true, digitalSignature: true, keyEncipherment: true, keyCertSign: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  return signAndEncode(cert, key, source);
}

/**
 * A leaf certificate for `publicKey`, signed by the CA (basicConstraints CA:FALSE; keyUsage
 * digitalSignature, keyEncipherment; extKeyUsage from `t.usages`; SANs; subject and authority key
 * identifiers — the latter copied from the CA's subjectKeyIdentifier).
 * @param ca the CA certificate (PEM) and its private key.
 * @returns PEM certificate.
 * @throws PkiError `pki-bad-cert` if the CA PEM is unreadable, `pki-sign` if signing fails.
 */
export function createSignedCert(t: CertTemplate, publicKey: KeyObject, ca: { certPem: string; key: KeyObject }, source: string): string {
  const caCert = forgeCert(ca.certPem, `${source} (issuer)`);
  const cert = baseCert(t, publicKey);
  cert.setIssuer(caCert.subject.attributes);
  const caSki = caCert.getExtension('subjectKeyIdentifier') as { subjectKeyIdentifier?: string } | undefined;
  const keyIdentifier = caSki?.subjectKeyIdentifier
    ? forge.util.hexToBytes(caSki.subjectKeyIdentifier)
    : caCert.generateSubjectKeyIdentifier().getBytes();
  const sans = altNames(t);
  cert.setExtensions([
    { name: 'basicConstraints', cA: false, critical: true },
    { name: 'keyUsage', critical: true, digitalSignature: true, keyEncipherment: true },
    { name: 'extKeyUsage', ...Object.fromEntries((t.usages ?? []).map((u) => [u, true])) },
    ...(sans.length ? [{ name: 'subjectAltName', altNames: sans }] : []),
    { name: 'subjectKeyIdentifier' },
    { name: 'authorityKeyIdentifier', keyIdentifier },
  ]);
  return signAndEncode(cert, ca.key, source);
}

function forgeCert(pem: string, source: string): forge.pki.Certificate {
  try {
    return forge.pki.certificateFromPem(pem);
  } catch (err) {
    throw new PkiError('pki-bad-cert', {
      what: source,
      why: `not a readable PEM X.509 RSA certificate (${causeLine(err)})`,
      fix: `restore ${source} from a backup, or move it aside to have it created`,
      cause: err,
    });
  }
}

function spkiDerOf(cert: forge.pki.Certificate): Buffer {
  return Buffer.from(forge.asn1.toDer(forge.pki.publicKeyToAsn1(cert.publicKey)).getBytes(), 'binary');
}

const IGNORED_EKU_KEYS = new Set(['id', 'name', 'critical', 'value']);

/**
 * Parses the first certificate of a PEM string.
 * @throws PkiError `pki-bad-cert` naming `source` if it is not a readable RSA certificate.
 */
export function parseCert(pem: string, source: string): CertInfo {
  const cert = forgeCert(pem, source);
  const field = (attrs: forge.pki.CertificateField[], short: string) =>
    attrs.filter((a) => a.shortName === short).map((a) => String(a.value));
  const san = (cert.getExtension('subjectAltName') ?? { altNames: [] }) as { altNames: { type: number; value: string; ip?: string }[] };
  const eku = (cert.getExtension('extKeyUsage') ?? {}) as Record<string, unknown>;
  const bc = cert.getExtension('basicConstraints') as { cA?: boolean } | undefined;
  return {
    commonName: field(cert.subject.attributes, 'CN')[0] ?? '',
    organizations: field(cert.subject.attributes, 'O'),
    issuerCommonName: field(cert.issuer.attributes, 'CN')[0] ?? '',
    dnsNames: san.altNames.filter((a) => a.type === 2).map((a) => a.value.toLowerCase()),
    ipAddresses: san.altNames.filter((a) => a.type === 7 && a.ip && isIP(a.ip)).map((a) => normalizeIP(a.ip!)),
    notBefore: cert.validity.notBefore,
    notAfter: cert.validity.notAfter,
    isCA: bc?.cA === true,
    usages: Object.keys(eku).filter((k) => !IGNORED_EKU_KEYS.has(k) && eku[k] === true).sort(),
    serialNumber: cert.serialNumber,
    publicKeySha256: `sha256:${createHash('sha256').update(spkiDerOf(cert)).digest('hex')}`,
  };
}

/**
 * True if `certPem` names `caCertPem`'s subject as issuer and its signature verifies with the CA's
 * public key. False for any mismatch or unverifiable signature algorithm.
 * @throws PkiError `pki-bad-cert` if either PEM is unreadable.
 */
export function isSignedBy(certPem: string, caCertPem: string, source = 'certificate'): boolean {
  const child = forgeCert(certPem, source);
  const ca = forgeCert(caCertPem, `${source} (issuer)`);
  if (!ca.issued(child)) return false;
  try {
    return ca.verify(child);
  } catch {
    return false; // unknown signature algorithm: treat as not signed by this CA
  }
}

/** True if `key` (private or public) is the key pair of the certificate. @throws PkiError `pki-bad-cert`. */
export function certMatchesKey(certPem: string, key: KeyObject, source = 'certificate'): boolean {
  return spkiDerOf(forgeCert(certPem, source)).equals(publicKeyDer(key));
}

/**
 * SHA-256 of the certificate's SubjectPublicKeyInfo as `sha256:<hex>`: kubeadm's
 * `--discovery-token-ca-cert-hash` format for the cluster CA.
 * @throws PkiError `pki-bad-cert` naming `source`.
 * @see https://kubernetes.io/docs/reference/setup-tools/kubeadm/kubeadm-join/#token-based-discovery-with-ca-pinning
 */
export function spkiSha256(certPem: string, source = 'certificate'): string {
  return parseCert(certPem, source).publicKeySha256;
}
