/**
 * AES-256-GCM sealing with node:crypto: `nonce (12 bytes) ‖ ciphertext ‖ tag (16 bytes)`, a fresh
 * random nonce each time, `aad` authenticated with the content (so a sealed value moved to another
 * name or context fails like a wrong key). Used for the certificate hand-over (lib/join/certificate-key.ts)
 * and the PKI part of an etcd snapshot (lib/etcd/snapshot-pki.ts).
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/** Bytes a sealed value adds to its plaintext (nonce and tag). */
export const SEAL_OVERHEAD = 28;

/** Seals `plain` under `key` (32 bytes) with additional authenticated data `aad`. */
export function seal(key: Uint8Array, plain: Uint8Array, aad: Uint8Array): Buffer {
  const nonce = randomBytes(12);
  const c = createCipheriv('aes-256-gcm', key, nonce);
  c.setAAD(aad);
  return Buffer.concat([nonce, c.update(plain), c.final(), c.getAuthTag()]);
}

/**
 * Opens a value {@link seal} made.
 * @returns the plaintext, or undefined when it does not authenticate (wrong key, other `aad`, altered or
 *   truncated bytes): the caller throws its own typed error naming what it opened.
 */
export function unseal(key: Uint8Array, sealed: Uint8Array, aad: Uint8Array): Buffer | undefined {
  if (sealed.length < SEAL_OVERHEAD) return undefined;
  try {
    const d = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, 12));
    d.setAAD(aad);
    d.setAuthTag(sealed.subarray(sealed.length - 16));
    return Buffer.concat([d.update(sealed.subarray(12, sealed.length - 16)), d.final()]);
  } catch {
    return undefined;
  }
}
