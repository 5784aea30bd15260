/**
 * Private keys: generation, loading and RSA signing through `node:crypto` (OpenSSL). Keys are
 * generated here rather than by node-forge because OpenSSL is ~7× faster for RSA-2048 and ~25× for
 * RSA-3072 than forge's pure-JS key generation, and signs ~40× faster (measured on a 2-CPU dev VM).
 *
 * Every key crossing this module's boundary is a PEM string: private keys PKCS#1
 * (`RSA PRIVATE KEY`, what kubeadm writes), public keys SPKI (`PUBLIC KEY`, kubeadm's `sa.pub`).
 * Error messages name the file, never key bytes.
 */
import { X509Certificate, createPrivateKey, createPublicKey, generateKeyPair, sign, type KeyObject } from 'node:crypto';
import { promisify } from 'node:util';
import type { EncryptionAlgorithm } from '../types.ts';
import { causeLine, PkiError } from './errors.ts';

const generateKeyPairAsync = promisify(generateKeyPair);

/** The `encryptionAlgorithm` values kubeception can sign with. */
export const SUPPORTED_ALGORITHMS = ['RSA-2048', 'RSA-3072', 'RSA-4096'] as const;
export type SupportedAlgorithm = (typeof SUPPORTED_ALGORITHMS)[number];

/**
 * Asserts that certificates can be issued with `algorithm`.
 * @throws PkiError `pki-unsupported-algorithm` for `ECDSA-P256`: node-forge builds and parses only
 * RSA certificates, so an ECDSA public key cannot be put into a certificate.
 */
export function assertSupportedAlgorithm(algorithm: EncryptionAlgorithm): asserts algorithm is SupportedAlgorithm {
  if ((SUPPORTED_ALGORITHMS as readonly string[]).includes(algorithm)) return;
  throw new PkiError('pki-unsupported-algorithm', {
    what: `encryptionAlgorithm: ${algorithm}`,
    why: 'kubeception builds certificates with node-forge, which handles RSA keys only',
    fix: `set encryptionAlgorithm to one of ${SUPPORTED_ALGORITHMS.join(', ')}`,
  });
}

/**
 * Generates a private key with OpenSSL on libuv's thread pool (so several run in parallel).
 * @returns PKCS#1 PEM (`-----BEGIN RSA PRIVATE KEY-----`), public exponent 65537.
 * @throws PkiError `pki-unsupported-algorithm` (see {@link assertSupportedAlgorithm}).
 */
export async function generatePrivateKey(algorithm: EncryptionAlgorithm): Promise<string> {
  assertSupportedAlgorithm(algorithm);
  const modulusLength = Number(algorithm.slice('RSA-'.length));
  const { privateKey } = await generateKeyPairAsync('rsa', { modulusLength, publicExponent: 0x10001 });
  return privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
}

/**
 * Parses an unencrypted PEM private key (PKCS#1 or PKCS#8).
 * @param source the file the PEM came from, for error messages.
 * @param rsaOnly also reject non-RSA keys (keys that must go into a certificate); default true.
 * @throws PkiError `pki-bad-key` if unreadable, encrypted, or (with `rsaOnly`) not RSA.
 */
export function loadPrivateKey(pem: string, source: string, rsaOnly = true): KeyObject {
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: pem, format: 'pem' });
  } catch (err) {
    throw new PkiError('pki-bad-key', {
      what: source,
      why: `not a readable, unencrypted PEM private key (${causeLine(err)})`,
      fix: `restore ${source} from a backup, or decrypt it (\`openssl pkey -in ${source} -out ${source}\`)`,
      cause: err,
    });
  }
  if (rsaOnly && key.asymmetricKeyType !== 'rsa') {
    throw new PkiError('pki-bad-key', {
      what: source,
      why: `is a ${key.asymmetricKeyType ?? 'unknown'} key; kubeception issues certificates for RSA keys only`,
      fix: `move ${source} and its certificate aside to have an RSA pair created, or issue this certificate by hand`,
    });
  }
  return key;
}

/** The DER SubjectPublicKeyInfo of a private or public key, for comparing keys with certificates. */
export function publicKeyDer(key: KeyObject): Buffer {
  const pub = key.type === 'public' ? key : createPublicKey(key);
  return pub.export({ type: 'spki', format: 'der' });
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

/** A short description of a key for report reasons: `RSA-2048`. Never key bytes. */
export function describeKey(key: KeyObject): string {
  const bits = key.asymmetricKeyDetails?.modulusLength;
  return key.asymmetricKeyType === 'rsa' && bits ? `RSA-${bits}` : (key.asymmetricKeyType ?? 'unknown');
}

/**
 * RSASSA-PKCS1-v1_5 with SHA-256 over `data` (the DER TBSCertificate).
 * @returns the signature bytes.
 * @throws PkiError `pki-sign` naming `source` if OpenSSL refuses.
 */
export function signSha256(data: Uint8Array, key: KeyObject, source: string): Buffer {
  try {
    return sign('sha256', data, key);
  } catch (err) {
    throw new PkiError('pki-sign', {
      what: source,
      why: `signing with this key failed (${causeLine(err)})`,
      fix: `check ${source} with \`openssl pkey -in ${source} -noout -check\``,
      cause: err,
    });
  }
}

/**
 * True if the first certificate in `pem` (which may also hold a key, as the kubelet's
 * `kubelet-client-current.pem` does) is signed by `caPem`'s key. Uses OpenSSL, so any key type of
 * the leaf works (the kubelet's own client keys are ECDSA, which node-forge cannot parse).
 */
export function certSignedBy(pem: string, caPem: string): boolean {
  const block = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/.exec(pem)?.[0];
  if (!block) return false;
  try {
    const ca = new X509Certificate(caPem);
    const cert = new X509Certificate(block);
    return cert.checkIssued(ca) && cert.verify(ca.publicKey);
  } catch {
    return false;
  }
}
