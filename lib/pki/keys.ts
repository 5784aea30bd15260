/**
 * Private keys: generation, loading, signing and certificate checks through `node:crypto` (OpenSSL;
 * also under Deno). RSA-2048 generation takes ~100–200 ms of CPU, so it runs on libuv's thread pool
 * and several keys are generated at once; an ECDSA key takes well under a millisecond.
 *
 * Every key crossing this module's boundary is a PEM string, in the format kubeadm writes: RSA
 * private keys PKCS#1 (`RSA PRIVATE KEY`), ECDSA private keys SEC 1 (`EC PRIVATE KEY`), public keys
 * SPKI (`PUBLIC KEY`, kubeadm's `sa.pub`). Error messages name the file, never key bytes.
 * @see kubernetes/cmd/kubeadm/app/util/pkiutil/pki_helpers.go (GeneratePrivateKey)
 */
import { X509Certificate, createPrivateKey, createPublicKey, generateKeyPair, sign, type KeyObject } from 'node:crypto';
import { promisify } from 'node:util';
import type { EncryptionAlgorithm } from '../types.ts';
import { causeLine, PkiError } from './errors.ts';
import { BoundedMap } from '../util/bounded-map.ts';

const generateKeyPairAsync = promisify(generateKeyPair);

/**
 * A key pair from the thread pool: the private key as a KeyObject, the public key already encoded
 * as SPKI DER there (Node: "if a publicKeyEncoding … was specified … behaves as if keyObject.export()
 * had been called" for that part only; @types/node types only both-or-neither).
 */
async function generateWithSpki(type: 'ec' | 'rsa', options: object): Promise<{ privateKey: KeyObject; publicKey: Buffer }> {
  const gen = generateKeyPairAsync as unknown as (t: string, o: object) => Promise<{ privateKey: KeyObject; publicKey: Buffer | KeyObject }>;
  const { privateKey, publicKey } = await gen(type, { ...options, publicKeyEncoding: { type: 'spki', format: 'der' } });
  return { privateKey, publicKey: Buffer.isBuffer(publicKey) ? publicKey : (publicKey as KeyObject).export({ type: 'spki', format: 'der' }) };
}

/**
 * Parsed private keys by PEM text (a reconcile loads each CA key once per leaf) and SPKI bytes by
 * key: parsing PEM costs more than signing with an ECDSA key. Bounded; process memory only.
 */
const parsedKeys = new BoundedMap<string, KeyObject>();
const spkiOf = new WeakMap<KeyObject, Buffer>();

/** kubeadm's `encryptionAlgorithm` values; kubeception generates and signs with each. */
export const SUPPORTED_ALGORITHMS = ['RSA-2048', 'RSA-3072', 'RSA-4096', 'ECDSA-P256', 'ECDSA-P384'] as const;
export type SupportedAlgorithm = (typeof SUPPORTED_ALGORITHMS)[number];

/** OpenSSL curve names of the ECDSA algorithms, and the hash Go's crypto/x509 signs with for each. */
const CURVES = {
  prime256v1: { name: 'P256', hash: 'sha256', oid: '1.2.840.10045.4.3.2' },
  secp384r1: { name: 'P384', hash: 'sha384', oid: '1.2.840.10045.4.3.3' },
  secp521r1: { name: 'P521', hash: 'sha512', oid: '1.2.840.10045.4.3.4' },
} as const;
const SHA256_WITH_RSA = '1.2.840.113549.1.1.11';

/**
 * Asserts that keys can be generated with `algorithm` (the config schema already restricts it).
 * @throws PkiError `pki-unsupported-algorithm` for anything else.
 */
export function assertSupportedAlgorithm(algorithm: EncryptionAlgorithm): asserts algorithm is SupportedAlgorithm {
  if ((SUPPORTED_ALGORITHMS as readonly string[]).includes(algorithm)) return;
  throw new PkiError('pki-unsupported-algorithm', {
    what: `encryptionAlgorithm: ${algorithm}`,
    why: 'kubeception generates the key algorithms kubeadm offers only',
    fix: `set encryptionAlgorithm to one of ${SUPPORTED_ALGORITHMS.join(', ')}`,
  });
}

/**
 * Generates a private key with OpenSSL on libuv's thread pool (so several run in parallel).
 * @returns PKCS#1 PEM for RSA (public exponent 65537), SEC 1 PEM for ECDSA.
 * @throws PkiError `pki-unsupported-algorithm` (see {@link assertSupportedAlgorithm}).
 */
export async function generatePrivateKey(algorithm: EncryptionAlgorithm): Promise<string> {
  assertSupportedAlgorithm(algorithm);
  const ec = algorithm.startsWith('ECDSA-');
  // The SPKI DER is encoded on the thread pool with the key (every certificate needs it).
  const { privateKey, publicKey } = ec
    ? await generateWithSpki('ec', { namedCurve: algorithm === 'ECDSA-P256' ? 'prime256v1' : 'secp384r1' })
    : await generateWithSpki('rsa', { modulusLength: Number(algorithm.slice('RSA-'.length)), publicExponent: 0x10001 });
  spkiOf.set(privateKey, publicKey);
  const pem = privateKey.export({ type: ec ? 'sec1' : 'pkcs1', format: 'pem' }).toString();
  parsedKeys.remember(pem, privateKey);
  return pem;
}

/**
 * Parses an unencrypted PEM private key (PKCS#1 or PKCS#8).
 * @param source the file the PEM came from, for error messages.
 * @param certKey also reject keys kubeception cannot issue or sign certificates with (anything but
 * RSA and ECDSA P-256/P-384/P-521); default true.
 * @throws PkiError `pki-bad-key` if unreadable, encrypted, or (with `certKey`) of another type.
 */
export function loadPrivateKey(pem: string, source: string, certKey = true): KeyObject {
  let key = parsedKeys.get(pem);
  try {
    key ??= parsedKeys.remember(pem, createPrivateKey({ key: pem, format: 'pem' }));
  } catch (err) {
    throw new PkiError('pki-bad-key', {
      what: source,
      why: `not a readable, unencrypted PEM private key (${causeLine(err)})`,
      fix: `restore ${source} from a backup, or decrypt it (\`openssl pkey -in ${source} -out ${source}\`)`,
      cause: err,
    });
  }
  if (certKey && !isCertKey(key)) {
    throw new PkiError('pki-bad-key', {
      what: source,
      why: `is a ${describeKey(key)} key; kubeception issues certificates for RSA and ECDSA (P-256, P-384, P-521) keys only`,
      fix: `move ${source} and its certificate aside to have a new pair created, or issue this certificate by hand`,
    });
  }
  return key;
}

/** The DER SubjectPublicKeyInfo of a private or public key, for comparing keys with certificates. Cached per key. */
export function publicKeyDer(key: KeyObject): Buffer {
  let der = spkiOf.get(key);
  if (!der) {
    der = (key.type === 'public' ? key : createPublicKey(key)).export({ type: 'spki', format: 'der' });
    spkiOf.set(key, der);
  }
  return der;
}

/** The SPKI PEM (`-----BEGIN PUBLIC KEY-----`) of a private key: the content of kubeadm's `sa.pub`. */
export function publicKeyPem(key: KeyObject): string {
  return createPublicKey(key).export({ type: 'spki', format: 'pem' }).toString();
}

/**
 * Parses a PEM public key (SPKI or PKCS#1 `RSA PUBLIC KEY`).
 * @throws PkiError `pki-bad-key` naming `source` if unreadable.
 */
export function loadPublicKey(pem: string, source: string): KeyObject {
  try {
    return createPublicKey({ key: pem, format: 'pem' });
  } catch (err) {
    throw new PkiError('pki-bad-key', {
      what: source,
      why: `not a readable PEM public key (${causeLine(err)})`,
      fix: `remove ${source}; it is re-derived from its private key`,
      cause: err,
    });
  }
}

const curveOf = (key: KeyObject) => CURVES[key.asymmetricKeyDetails?.namedCurve as keyof typeof CURVES] as (typeof CURVES)[keyof typeof CURVES] | undefined;
const isCertKey = (key: KeyObject) => key.asymmetricKeyType === 'rsa' || (key.asymmetricKeyType === 'ec' && curveOf(key) !== undefined);

/** A short description of a key for report reasons, in `encryptionAlgorithm` terms: `RSA-2048`, `ECDSA-P256`. Never key bytes. */
export function describeKey(key: KeyObject): string {
  const bits = key.asymmetricKeyDetails?.modulusLength;
  if (key.asymmetricKeyType === 'rsa' && bits) return `RSA-${bits}`;
  const curve = key.asymmetricKeyType === 'ec' ? curveOf(key) : undefined;
  if (curve) return `ECDSA-${curve.name}`;
  return key.asymmetricKeyType === 'ec' ? `ECDSA ${key.asymmetricKeyDetails?.namedCurve ?? ''}`.trim() : (key.asymmetricKeyType ?? 'unknown');
}

/**
 * A note for a kept key whose algorithm is not `encryptionAlgorithm`: `''` when it is. kubeadm
 * applies `encryptionAlgorithm` to keys it creates and keeps existing ones, and so does kubeception:
 * a key is never replaced (every certificate, kubeconfig and token it backs would break).
 */
export function keyAlgorithmNote(key: KeyObject, algorithm: EncryptionAlgorithm): string {
  const have = describeKey(key);
  return have === algorithm ? '' : `; keeps its ${have} key (encryptionAlgorithm ${algorithm} applies to new keys; to change it, move the key and certificate aside)`;
}

/** How a key signs a certificate: the AlgorithmIdentifier OID, whether it carries NULL parameters, and the signer. */
export interface SignatureAlgorithm {
  oid: string;
  nullParams: boolean;
  /** Signs `data` (the DER TBSCertificate). @throws PkiError `pki-sign` if OpenSSL refuses. */
  sign(data: Uint8Array): Buffer;
}

/**
 * The certificate signature algorithm for an issuer key, as Go's crypto/x509 picks it:
 * sha256WithRSAEncryption for RSA; ecdsa-with-SHA256/384/512 for P-256/P-384/P-521.
 * @throws PkiError `pki-bad-key` for any other key type.
 */
export function signatureOf(key: KeyObject): SignatureAlgorithm {
  const curve = key.asymmetricKeyType === 'ec' ? curveOf(key) : undefined;
  if (key.asymmetricKeyType !== 'rsa' && !curve)
    throw new PkiError('pki-bad-key', { what: 'issuer key', why: `a ${describeKey(key)} key cannot sign certificates here`, fix: 'use an RSA or ECDSA (P-256, P-384) CA key' });
  const hash = curve?.hash ?? 'sha256';
  return {
    oid: curve?.oid ?? SHA256_WITH_RSA,
    nullParams: !curve,
    sign: (data) => {
      try {
        return sign(hash, data, key);
      } catch (err) {
        throw new PkiError('pki-sign', { what: 'certificate', why: `signing with this key failed (${causeLine(err)})`, fix: 'check the key with `openssl pkey -noout -check -in FILE`', cause: err });
      }
    },
  };
}

/** OpenSSL's parsed certificates by PEM text: a reconcile checks each CA once per leaf. Bounded; process memory only. */
const parsedCerts = new BoundedMap<string, X509Certificate>();

/** OpenSSL's parse of one PEM certificate, cached by text. @throws what `new X509Certificate` throws. */
export function opensslCert(pem: string): X509Certificate {
  return parsedCerts.get(pem) ?? parsedCerts.remember(pem, new X509Certificate(pem));
}

/**
 * OpenSSL's view of PEM certificates (for signature checks).
 * @throws PkiError `pki-bad-cert` naming `source` if one is unreadable.
 */
export function opensslCerts(pems: string[], source: string): X509Certificate[] {
  return pems.map((pem, i) => {
    try {
      return opensslCert(pem);
    } catch (err) {
      const what = i === 0 ? source : `${source} (issuer)`;
      throw new PkiError('pki-bad-cert', { what, why: `not a readable PEM X.509 certificate (${causeLine(err)})`, fix: `restore ${what} from a backup, or move it aside to have it created`, cause: err });
    }
  });
}

/**
 * The first `CERTIFICATE` block of a PEM text that may hold more (a chain, or a key after it, as the
 * kubelet's `kubelet-client-current.pem` does), ending in a newline; undefined if there is none.
 */
export function firstCertificatePem(pem: string): string | undefined {
  const block = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/.exec(pem)?.[0];
  return block && `${block}\n`;
}

/**
 * True if the first certificate in `pem` (which may also hold a key, as the kubelet's
 * `kubelet-client-current.pem` does) is signed by `caPem`'s key. Uses OpenSSL, so any key type of
 * the leaf works (the kubelet makes its own client keys).
 */
export function certSignedBy(pem: string, caPem: string): boolean {
  const block = firstCertificatePem(pem);
  if (!block) return false;
  try {
    const ca = opensslCert(caPem);
    const cert = opensslCert(block);
    return cert.checkIssued(ca) && cert.verify(ca.publicKey);
  } catch {
    return false;
  }
}
