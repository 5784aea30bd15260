/**
 * X.509 certificates and PKCS #10 requests: the one wrapper around `@peculiar/asn1-x509`,
 * `@peculiar/asn1-csr`, `@peculiar/asn1-schema` and `asn1js` (the RFC 5280 ASN.1 schemas and encoder under `@peculiar/x509`; pure JavaScript, runs
 * under Node and Deno). They
 * build and parse the certificate structure; the private-key operation and signature checks are
 * done by OpenSSL through `node:crypto` ({@link signTbs}, `X509Certificate`). Certificates cross this
 * module's boundary as PEM strings, keys as `KeyObject`s; no library type leaks out.
 *
 * The libraries are imported on first use (so `plan` and `--help` never load them): building and
 * parsing are async for that reason; the checks that OpenSSL answers alone are synchronous.
 *
 * Key types: RSA (sha256WithRSAEncryption) and ECDSA P-256 / P-384 (ecdsa-with-SHA256 / -SHA384,
 * the hash Go's crypto/x509 picks for the curve). The signature algorithm follows the *issuer's*
 * key, so an ECDSA leaf under an RSA CA (an existing cluster whose `encryptionAlgorithm` changed)
 * is signed with RSA, as kubeadm would.
 *
 * @see kubernetes/cmd/kubeadm/app/util/pkiutil/pki_helpers.go (NewSelfSignedCACert, NewSignedCert)
 * @see https://www.rfc-editor.org/rfc/rfc5280
 */
import { createHash, randomBytes, X509Certificate, type KeyObject } from 'node:crypto';
import type * as Schema from '@peculiar/asn1-schema';
import type * as Ax from '@peculiar/asn1-x509';
import { isIP, normalizeIP } from '../net/cidr.ts';
import { causeLine, PkiError } from './errors.ts';
import { BoundedMap } from '../util/bounded-map.ts';
import { opensslCerts, publicKeyDer, signatureOf, type SignatureAlgorithm } from './keys.ts';

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
  /** Extended key usages, sorted (`clientAuth`, `serverAuth`, or the OID of any other). */
  usages: string[];
  /** Serial number, hex. */
  serialNumber: string;
  /** SHA-256 of the SubjectPublicKeyInfo: `sha256:<hex>` (see {@link spkiSha256}). */
  publicKeySha256: string;
}

const BACKDATE_MS = 5 * 60_000;
const DAY_MS = 86_400_000;
const OID_CN = '2.5.4.3';
const OID_O = '2.5.4.10';
const EKU_OIDS: Record<ExtKeyUsage, string> = { serverAuth: '1.3.6.1.5.5.7.3.1', clientAuth: '1.3.6.1.5.5.7.3.2' };
const EKU_NAMES = new Map(Object.entries(EKU_OIDS).map(([name, oid]) => [oid, name]));

/** The ASN.1 libraries, loaded once on first use. */
interface Libs {
  ax: typeof Ax;
  AsnConvert: typeof Schema.AsnConvert;
  OctetString: typeof Schema.OctetString;
  /** DER SEQUENCE of already-encoded elements (asn1js writes the tag and length, the bytes as they are). */
  sequenceOf: (parts: Uint8Array[]) => Uint8Array;
  /** DER BIT STRING of whole bytes (no unused bits). */
  bitString: (bytes: Uint8Array) => Uint8Array;
  /**
   * A DER SubjectPublicKeyInfo (from OpenSSL) as an asn1-schema convertible for the TBSCertificate,
   * and its subjectPublicKey bits: read by asn1js alone (the schema mapping costs more than the rest of a certificate).
   */
  spki: (der: Uint8Array) => { convertible: Ax.SubjectPublicKeyInfo; subjectPublicKey: Uint8Array };
}
let libs: Promise<Libs> | undefined;

/**
 * A CommonJS package's exports from a dynamic import: the namespace itself under Node's and Deno's
 * loaders (named exports beside `default`); only `default` in the compiled build, whose split chunks
 * re-export a bundled CommonJS module as its default.
 */
function cjsExports<T>(ns: T): T {
  const d = (ns as { default?: unknown }).default;
  return d && typeof d === 'object' && Object.keys(ns as object).length === 1 ? (d as T) : ns;
}
function load(): Promise<Libs> {
  libs ??= Promise.all([import('@peculiar/asn1-x509'), import('@peculiar/asn1-schema'), import('asn1js')]).then((mods) => [cjsExports(mods[0]), cjsExports(mods[1]), cjsExports(mods[2])] as const).then(([ax, schema, asn1]) => ({
    ax, AsnConvert: schema.AsnConvert, OctetString: schema.OctetString,
    sequenceOf: (parts) => {
      // A universal SEQUENCE whose content is the parts' bytes (asn1js's Primitive forces
      // "primitive"; the constructed bit is set after) — the signed TBSCertificate is written as it
      // was signed, not parsed and encoded again.
      const block = new asn1.Primitive({ idBlock: { tagClass: 1, tagNumber: 16 }, valueHex: Buffer.concat(parts) });
      block.idBlock.isConstructed = true;
      return new Uint8Array(block.toBER());
    },
    bitString: (bytes) => new Uint8Array(new asn1.BitString({ valueHex: bytes }).toBER()),
    spki: (der) => {
      const block = asn1.fromBER(der).result;
      const bits = block instanceof asn1.Sequence ? block.valueBlock.value[1] : undefined;
      if (!(bits instanceof asn1.BitString)) throw new Error('not a SubjectPublicKeyInfo');
      const convertible = { toASN: () => block, fromASN: () => { throw new Error('write-only'); } };
      return { convertible: convertible as unknown as Ax.SubjectPublicKeyInfo, subjectPublicKey: bits.valueBlock.valueHexView };
    },
  }));
  return libs;
}

/** A positive 127-bit serial with a non-zero first byte, so its DER INTEGER is minimal. */
function randomSerial(): Buffer {
  const b = randomBytes(16);
  b[0] = (b[0]! & 0x7f) | 0x40;
  return b;
}

const rdn = ({ ax }: Libs, type: string, value: string) => new ax.RelativeDistinguishedName([new ax.AttributeTypeAndValue({ type, value: new ax.AttributeValue({ utf8String: value }) })]);
const subjectName = (L: Libs, t: CertTemplate) => new L.ax.Name([...(t.organizations ?? []).map((o) => rdn(L, OID_O, o)), rdn(L, OID_CN, t.commonName)]);
const ext = (L: Libs, extnID: string, critical: boolean, value: unknown) => new L.ax.Extension({ extnID, critical, extnValue: new L.OctetString(L.AsnConvert.serialize(value)) });

/** Go's subjectKeyIdentifier: SHA-1 of the subjectPublicKey BIT STRING (RFC 5280 4.2.1.2 method 1). */
function keyIdentifier(subjectPublicKey: ArrayBuffer | Uint8Array): Buffer {
  return createHash('sha1').update(new Uint8Array(subjectPublicKey)).digest();
}

/** kubeadm's key usages: digitalSignature, keyCertSign for a CA, keyEncipherment only for an RSA key. */
function keyUsage({ ax }: Libs, key: KeyObject, isCa: boolean): number {
  const F = ax.KeyUsageFlags;
  return F.digitalSignature | (isCa ? F.keyCertSign : 0) | (key.asymmetricKeyType === 'rsa' ? F.keyEncipherment : 0);
}

function sanExtension(L: Libs, t: CertTemplate): Ax.Extension[] {
  const { ax } = L;
  const names = [
    ...(t.dnsNames ?? []).map((dNSName) => new ax.GeneralName({ dNSName })),
    ...(t.ipAddresses ?? []).map((ip) => new ax.GeneralName({ iPAddress: normalizeIP(ip) })),
  ];
  return names.length ? [ext(L, ax.id_ce_subjectAltName, false, new ax.SubjectAlternativeName(names))] : [];
}

interface Issuer {
  name: Ax.Name;
  key: KeyObject;
  keyId: Buffer;
}

/** A CA's subject and key identifier by certificate PEM: from the CA just created, or parsed once. Bounded. */
const issuers = new BoundedMap<string, Omit<Issuer, 'key'>>();

/** The issuer fields of a CA certificate: its subject, and its subjectKeyIdentifier (or Go's method-1 id). @throws PkiError `pki-bad-cert`. */
function issuerOf(L: Libs, caPem: string, source: string): Omit<Issuer, 'key'> {
  const hit = issuers.get(caPem);
  if (hit) return hit;
  const caCert = parsed(L, caPem, `${source} (issuer)`);
  const caSki = extension(L, caCert, L.ax.id_ce_subjectKeyIdentifier, L.ax.SubjectKeyIdentifier);
  return issuers.remember(caPem, { name: caCert.tbsCertificate.subject, keyId: caSki ? Buffer.from(caSki.buffer) : keyIdentifier(caCert.tbsCertificate.subjectPublicKeyInfo.subjectPublicKey) });
}

/** Builds the TBSCertificate, signs it with the issuer's key and returns the PEM certificate. */
function issue(L: Libs, t: CertTemplate, publicKey: KeyObject, issuer: Issuer | 'self', extensions: (ownKeyId: Buffer, issuerKeyId: Buffer) => Ax.Extension[], signer: KeyObject, source: string): string {
  const { ax, AsnConvert } = L;
  try {
    const now = (t.now ?? new Date()).getTime();
    const spki = L.spki(publicKeyDer(publicKey));
    const subject = subjectName(L, t);
    const own = keyIdentifier(spki.subjectPublicKey);
    const alg: SignatureAlgorithm = signatureOf(signer);
    const signature = new ax.AlgorithmIdentifier({ algorithm: alg.oid, ...(alg.nullParams && { parameters: null }) });
    const tbs = new ax.TBSCertificate({
      version: ax.Version.v3,
      serialNumber: new Uint8Array(randomSerial()).buffer,
      signature,
      issuer: issuer === 'self' ? subject : issuer.name,
      validity: new ax.Validity({ notBefore: new Date(now - BACKDATE_MS), notAfter: new Date(now + t.validityDays * DAY_MS) }),
      subject,
      subjectPublicKeyInfo: spki.convertible,
      extensions: new ax.Extensions(extensions(own, issuer === 'self' ? own : issuer.keyId)),
    });
    const tbsDer = new Uint8Array(AsnConvert.serialize(tbs));
    // Certificate ::= SEQUENCE { tbsCertificate, signatureAlgorithm, signatureValue BIT STRING }
    const pem = toPem(Buffer.from(L.sequenceOf([tbsDer, new Uint8Array(AsnConvert.serialize(signature)), L.bitString(alg.sign(tbsDer))])));
    if (issuer === 'self') issuers.remember(pem, { name: subject, keyId: own });
    spkiByPem.remember(pem, publicKeyDer(publicKey));
    return pem;
  } catch (err) {
    if (err instanceof PkiError) throw err;
    throw new PkiError('pki-sign', { what: source, why: `building the certificate failed (${causeLine(err)})`, fix: 'report this as a kubeception bug', cause: err });
  }
}

function toPem(der: Buffer, label = 'CERTIFICATE'): string {
  const b64 = der.toString('base64');
  const lines: string[] = [];
  for (let i = 0; i < b64.length; i += 64) lines.push(b64.slice(i, i + 64));
  return `-----BEGIN ${label}-----\n${lines.join('\n')}\n-----END ${label}-----\n`;
}

/**
 * A self-signed CA certificate: basicConstraints CA:TRUE (critical); keyUsage digitalSignature,
 * keyCertSign and, for an RSA key, keyEncipherment (critical); subjectKeyIdentifier.
 * @param source name for error messages, e.g. the certificate path.
 * @returns PEM certificate.
 * @throws PkiError `pki-bad-key` for a key type that cannot sign certificates, `pki-sign` if building fails.
 */
export async function createCaCert(t: CertTemplate, key: KeyObject, source: string): Promise<string> {
  const L = await load();
  const { ax } = L;
  return issue(L, t, key, 'self', (_own, keyId) => [
    ext(L, ax.id_ce_basicConstraints, true, new ax.BasicConstraints({ cA: true })),
    ext(L, ax.id_ce_keyUsage, true, new ax.KeyUsage(keyUsage(L, key, true))),
    ext(L, ax.id_ce_subjectKeyIdentifier, false, new ax.SubjectKeyIdentifier(new Uint8Array(keyId))),
  ], key, source);
}

/**
 * A leaf certificate for `publicKey`, signed by the CA: basicConstraints CA:FALSE (critical);
 * keyUsage digitalSignature and, for an RSA leaf key, keyEncipherment (critical, as kubeadm);
 * extKeyUsage from `t.usages`; SANs; subject and authority key identifiers (the latter the CA's).
 * @param ca the CA certificate (PEM) and its private key.
 * @returns PEM certificate.
 * @throws PkiError `pki-bad-cert` if the CA PEM is unreadable, `pki-sign` if signing fails.
 */
export async function createSignedCert(t: CertTemplate, publicKey: KeyObject, ca: { certPem: string; key: KeyObject }, source: string): Promise<string> {
  const L = await load();
  const { ax } = L;
  const issuer: Issuer = { ...issuerOf(L, ca.certPem, source), key: ca.key };
  return issue(L, t, publicKey, issuer, (own, issuerKeyId) => [
    ext(L, ax.id_ce_basicConstraints, true, new ax.BasicConstraints({ cA: false })),
    ext(L, ax.id_ce_keyUsage, true, new ax.KeyUsage(keyUsage(L, publicKey, false))),
    ext(L, ax.id_ce_extKeyUsage, false, new ax.ExtendedKeyUsage((t.usages ?? []).map((u) => EKU_OIDS[u]))),
    ...sanExtension(L, t),
    ext(L, ax.id_ce_subjectKeyIdentifier, false, new ax.SubjectKeyIdentifier(new Uint8Array(own))),
    ext(L, ax.id_ce_authorityKeyIdentifier, false, new ax.AuthorityKeyIdentifier({ keyIdentifier: new ax.KeyIdentifier(new Uint8Array(issuerKeyId)) })),
  ], ca.key, source);
}

const PEM_CERT = /-----BEGIN CERTIFICATE-----([A-Za-z0-9+/=\s]+)-----END CERTIFICATE-----/;
/** Parsed certificates by PEM text: reconcile reads each CA once per leaf. Bounded. */
const cache = new BoundedMap<string, Ax.Certificate>();

function pemBody(pem: string): Buffer {
  const b64 = PEM_CERT.exec(pem)?.[1];
  if (!b64) throw new Error('no BEGIN CERTIFICATE block');
  return Buffer.from(b64.replace(/\s+/g, ''), 'base64');
}

function badCert(source: string, err: unknown): PkiError {
  return new PkiError('pki-bad-cert', {
    what: source,
    why: `not a readable PEM X.509 certificate (${causeLine(err)})`,
    fix: `restore ${source} from a backup, or move it aside to have it created`,
    cause: err,
  });
}

function parsed({ ax, AsnConvert }: Libs, pem: string, source: string): Ax.Certificate {
  const hit = cache.get(pem);
  if (hit) return hit;
  try {
    return cache.remember(pem, AsnConvert.parse(pemBody(pem), ax.Certificate));
  } catch (err) {
    throw badCert(source, err);
  }
}

function extension<T>({ AsnConvert }: Libs, cert: Ax.Certificate, oid: string, type: new () => T): T | undefined {
  const e = cert.tbsCertificate.extensions?.find((x) => x.extnID === oid);
  return e ? AsnConvert.parse(e.extnValue, type) : undefined;
}

function nameValues(name: Ax.Name, oid: string): string[] {
  return [...name].flatMap((r) => [...r].filter((a) => a.type === oid).map((a) => a.value.toString()));
}

/**
 * Parses the first certificate of a PEM string.
 * @throws PkiError `pki-bad-cert` naming `source` if it is not a readable certificate.
 */
export async function parseCert(pem: string, source: string): Promise<CertInfo> {
  const L = await load();
  const { ax, AsnConvert } = L;
  const cert = parsed(L, pem, source);
  const tbs = cert.tbsCertificate;
  const sans = [...(extension(L, cert, ax.id_ce_subjectAltName, ax.SubjectAlternativeName) ?? [])];
  const eku = [...(extension(L, cert, ax.id_ce_extKeyUsage, ax.ExtendedKeyUsage) ?? [])];
  const spkiDer = Buffer.from(AsnConvert.serialize(tbs.subjectPublicKeyInfo));
  return {
    commonName: nameValues(tbs.subject, OID_CN)[0] ?? '',
    organizations: nameValues(tbs.subject, OID_O),
    issuerCommonName: nameValues(tbs.issuer, OID_CN)[0] ?? '',
    dnsNames: sans.flatMap((n) => (n.dNSName === undefined ? [] : [n.dNSName.toLowerCase()])),
    ipAddresses: sans.flatMap((n) => (n.iPAddress !== undefined && isIP(n.iPAddress) ? [normalizeIP(n.iPAddress)] : [])),
    notBefore: tbs.validity.notBefore.getTime(),
    notAfter: tbs.validity.notAfter.getTime(),
    isCA: extension(L, cert, ax.id_ce_basicConstraints, ax.BasicConstraints)?.cA === true,
    usages: eku.map((oid) => EKU_NAMES.get(oid) ?? oid).sort(),
    serialNumber: Buffer.from(tbs.serialNumber).toString('hex'),
    publicKeySha256: `sha256:${createHash('sha256').update(spkiDer).digest('hex')}`,
  };
}

/**
 * True if `certPem` names `caCertPem`'s subject as issuer and its signature verifies with the CA's
 * public key (OpenSSL). False for any mismatch or unverifiable signature.
 * @throws PkiError `pki-bad-cert` if either PEM is unreadable.
 */
export function isSignedBy(certPem: string, caCertPem: string, source = 'certificate'): boolean {
  const [child, ca] = opensslCerts([certPem, caCertPem], source);
  try {
    return child!.checkIssued(ca!) && child!.verify(ca!.publicKey);
  } catch {
    return false; // unknown signature algorithm: treat as not signed by this CA
  }
}

/** True if `key` (private or public) is the key pair of the certificate. @throws PkiError `pki-bad-cert`. */
export function certMatchesKey(certPem: string, key: KeyObject, source = 'certificate'): boolean {
  return certSpki(certPem, source).equals(publicKeyDer(key));
}

/** SPKI DER by certificate PEM: a reconcile compares each CA with its key once per leaf. Bounded. */
const spkiByPem = new BoundedMap<string, Buffer>();

/** The certificate's SubjectPublicKeyInfo DER, read by OpenSSL. @throws PkiError `pki-bad-cert`. */
function certSpki(pem: string, source: string): Buffer {
  let der = spkiByPem.get(pem);
  if (der) return der;
  try {
    der = publicKeyDer(new X509Certificate(pemBody(pem)).publicKey);
  } catch (err) {
    throw badCert(source, err);
  }
  return spkiByPem.remember(pem, der);
}

/**
 * SHA-256 of the certificate's SubjectPublicKeyInfo as `sha256:<hex>`: kubeadm's
 * `--discovery-token-ca-cert-hash` format for the cluster CA.
 * @throws PkiError `pki-bad-cert` naming `source`.
 * @see https://kubernetes.io/docs/reference/setup-tools/kubeadm/kubeadm-join/#token-based-discovery-with-ca-pinning
 */
export function spkiSha256(certPem: string, source = 'certificate'): string {
  return `sha256:${createHash('sha256').update(certSpki(certPem, source)).digest('hex')}`;
}

/**
 * A PKCS #10 certificate request for `key`'s public key, signed with it (ecdsa-with-SHA256 for a
 * P-256 key, as the kubelet's own requests): subject `O=<organizations>…, CN=<commonName>`, no
 * attributes (the signer sets usages and extensions from the CertificateSigningRequest object).
 * @returns PEM `CERTIFICATE REQUEST`.
 * @throws PkiError `pki-bad-key` for a key type that cannot sign, `pki-sign` if building fails.
 * @see https://www.rfc-editor.org/rfc/rfc2986
 * @see k8s.io/client-go/util/cert/csr.go (MakeCSR: what the kubelet's TLS bootstrap posts)
 */
export async function createCsr(t: Pick<CertTemplate, 'commonName' | 'organizations'>, key: KeyObject, source: string): Promise<string> {
  const L = await load();
  const { ax, AsnConvert } = L;
  const csrLib = cjsExports(await import('@peculiar/asn1-csr'));
  const alg = signatureOf(key);
  try {
    const info = new csrLib.CertificationRequestInfo({ version: 0, subject: subjectName(L, { ...t, validityDays: 0 }), subjectPKInfo: L.spki(publicKeyDer(key)).convertible, attributes: new csrLib.Attributes() });
    const infoDer = new Uint8Array(AsnConvert.serialize(info));
    const signature = new ax.AlgorithmIdentifier({ algorithm: alg.oid, ...(alg.nullParams && { parameters: null }) });
    const der = Buffer.from(L.sequenceOf([infoDer, new Uint8Array(AsnConvert.serialize(signature)), L.bitString(alg.sign(infoDer))]));
    return toPem(der, 'CERTIFICATE REQUEST');
  } catch (err) {
    throw new PkiError('pki-sign', { what: source, why: `building the certificate request failed (${causeLine(err)})`, fix: 'report this as a kubeception bug', cause: err });
  }
}

/** Subject and requested SANs of a certificate request (from its extensionRequest attribute). */
export interface CsrSubject {
  commonName?: string;
  organizations: string[];
  /** DNS SANs as requested (not lower-cased). */
  dnsNames: string[];
  /** IP SANs, normalised; an IP SAN that is neither 4 nor 16 bytes counts in `otherSans`. */
  ipAddresses: string[];
  /** Every other SAN (email, URI, directory name, other name, registered id), as `type:value`. */
  otherSans: string[];
}

const OID_EXTENSION_REQUEST = '1.2.840.113549.1.9.14';

/** Loads the CSR parser ahead of the first {@link csrSubject} (a long-running approver: its first CSR, a joining node's, then waits for no module load). */
export async function preloadCsrParser(): Promise<void> {
  await Promise.all([load(), import('@peculiar/asn1-csr')]);
}

/**
 * The subject and requested SANs of a PEM `CERTIFICATE REQUEST` (any key type: the kubelet's CSRs
 * carry ECDSA P-256 keys). The signature is not checked (the apiserver did, on create).
 * @throws Error if the text is not one well-formed CSR.
 * @see https://www.rfc-editor.org/rfc/rfc2986
 */
export async function csrSubject(pem: string): Promise<CsrSubject> {
  const m = /-----BEGIN (?:NEW )?CERTIFICATE REQUEST-----([\s\S]+?)-----END (?:NEW )?CERTIFICATE REQUEST-----/.exec(pem);
  if (!m) throw new Error('not a PEM certificate request');
  const [{ AsnConvert }, { CertificationRequest }] = await Promise.all([load(), import('@peculiar/asn1-csr').then(cjsExports)]);
  const csr = AsnConvert.parse(Buffer.from(m[1]!.replace(/\s+/g, ''), 'base64'), CertificationRequest);
  const out: CsrSubject = { organizations: [], dnsNames: [], ipAddresses: [], otherSans: [] };
  for (const rdn of csr.certificationRequestInfo.subject)
    for (const attr of rdn) {
      if (attr.type === OID_CN) out.commonName = attr.value.toString();
      if (attr.type === OID_O) out.organizations.push(attr.value.toString());
    }
  const L = await load();
  for (const attr of csr.certificationRequestInfo.attributes ?? []) {
    if (attr.type !== OID_EXTENSION_REQUEST) continue;
    for (const value of attr.values)
      for (const e of AsnConvert.parse(value, L.ax.Extensions)) {
        if (e.extnID !== L.ax.id_ce_subjectAltName) continue;
        for (const n of AsnConvert.parse(e.extnValue, L.ax.SubjectAlternativeName)) {
          if (n.dNSName !== undefined) out.dnsNames.push(n.dNSName);
          else if (n.iPAddress !== undefined && isIP(n.iPAddress)) out.ipAddresses.push(normalizeIP(n.iPAddress));
          else out.otherSans.push(n.rfc822Name !== undefined ? `email:${n.rfc822Name}` : n.uniformResourceIdentifier !== undefined ? `URI:${n.uniformResourceIdentifier}` : n.iPAddress !== undefined ? `IP:${n.iPAddress}` : `other:${Object.keys(n).join(',')}`);
        }
      }
  }
  return out;
}
