/**
 * Rotating the service-account signing key without breaking a token in use — the pure part: which
 * phase a node's files are in and what the next files are. kubeadm has no rotation; upstream's order
 * (kube-apiserver: "--service-account-key-file … can be specified multiple times", a file "can
 * contain multiple keys") is followed:
 *
 * 1. `trust-next`: a new key is made (`sa-next.key`, 0600) and its public key appended to `sa.pub`;
 *    the apiservers roll and accept tokens of both keys, still signing with the old one.
 * 2. `sign-next`: `sa.key` becomes the new key (the controller-manager's legacy tokens and the
 *    apiservers' TokenRequests are signed with it); `sa.pub` still holds both, so every token issued
 *    before keeps working. The old private key is gone from the host (its public key stays).
 * 3. `retire`: once every token the old key signed has expired (the kubelet's projected tokens live
 *    {@link RETIRE_AFTER_MS} at most: `--service-account-extend-token-expiration=false`), `sa.pub`
 *    is the new public key only.
 *
 * Files: `sa.key` (private, 0600), `sa.pub` (one or more SPKI PEM blocks, 0644), `sa-next.key` (the
 * new private key between phases 1 and 2). A key's id is the `kid` the apiserver writes into the
 * tokens it signs: base64url(SHA-256(SPKI DER)).
 * @see kubernetes/pkg/serviceaccount/jwt.go (keyIDFromPublicKey)
 * @see https://kubernetes.io/docs/reference/command-line-tools-reference/kube-apiserver/ (--service-account-key-file)
 */
import { createHash, type KeyObject } from 'node:crypto';
import { loadPrivateKey, loadPublicKey, publicKeyDer, publicKeyPem } from './keys.ts';
import { PkiError } from './errors.ts';

/** How long after `sign-next` the old public key is kept: the lifetime of a kubelet's projected token (1 h), plus 5 min. */
export const RETIRE_AFTER_MS = 65 * 60_000;

/** The `kid` of tokens signed by `key` (a private or public key): base64url SHA-256 of its SPKI DER, as the apiserver computes it. */
export function keyId(key: KeyObject): string {
  return createHash('sha256').update(publicKeyDer(key)).digest('base64url');
}

/** Each `-----BEGIN … PUBLIC KEY-----` block of a PEM bundle (sa.pub), parsed. @throws PkiError `pki-bad-key` naming `source`. */
export function publicKeys(bundle: string, source: string): KeyObject[] {
  const blocks = bundle.match(/-----BEGIN (?:RSA )?PUBLIC KEY-----[\s\S]*?-----END (?:RSA )?PUBLIC KEY-----/g) ?? [];
  if (!blocks.length) loadPublicKey(bundle, source); // throws the parse error, naming the file
  return blocks.map((b) => loadPublicKey(b, source));
}

/** The text of an sa.pub holding `keys`, in order, one SPKI PEM block each. */
export const publicKeyBundle = (keys: KeyObject[]): string => keys.map((k) => (k.type === 'public' ? k.export({ type: 'spki', format: 'pem' }).toString() : publicKeyPem(k))).join('');

/** What a node's service-account files are, for a rotation. */
export interface SaFiles {
  /** PEM text of sa.key, sa.pub and sa-next.key (undefined: absent). */
  key: string | undefined;
  pub: string | undefined;
  next: string | undefined;
  /** Paths, for error messages. */
  paths: { key: string; pub: string; next: string };
}

/** The next phase of a rotation, with what it acts on. */
export type SaRotationPhase =
  | { phase: 'trust-next'; signing: string }
  | { phase: 'sign-next'; signing: string; next: string }
  | { phase: 'retire'; signing: string; previous: string[] };

/**
 * Where a node's files stand: `trust-next` (no rotation under way: start one), `sign-next` (the new
 * key is trusted: sign with it) or `retire` (signing with the new key, older keys still trusted).
 * A run killed between writing sa.key and removing sa-next.key (both the same key) is `sign-next`;
 * one killed between writing sa-next.key and sa.pub is `trust-next` (with that key).
 * Key ids only in the result; never key bytes.
 * @throws PkiError `pki-sa-rotation` when a file is missing, or sa.pub does not hold the public key of
 *   sa.key (or of sa-next.key while one exists): the files were changed by something else.
 */
export function saRotationPhase(f: SaFiles): SaRotationPhase {
  const refuse = (why: string, fix: string) => new PkiError('pki-sa-rotation', { what: `${f.paths.key}, ${f.paths.pub}`, why, fix });
  if (f.key === undefined || f.pub === undefined)
    throw refuse(`${f.key === undefined ? f.paths.key : f.paths.pub} is missing: this is not a control-plane node kubeception made, or its PKI is incomplete`, 'run `kubeception run bootstrap` on this node first');
  const signing = keyId(loadPrivateKey(f.key, f.paths.key, false));
  const trusted = publicKeys(f.pub, f.paths.pub).map(keyId);
  if (!trusted.includes(signing))
    throw refuse(`${f.paths.pub} does not hold the public key of ${f.paths.key}: the apiserver would reject every token signed now`, `put the public key of ${f.paths.key} back into ${f.paths.pub} (or restore both from a snapshot's PKI part)`);
  if (f.next !== undefined) {
    const next = keyId(loadPrivateKey(f.next, f.paths.next, false));
    if (next === signing) return { phase: 'sign-next', signing, next };
    // Made, not yet trusted: a run killed between writing sa-next.key and sa.pub goes on with that key.
    return trusted.includes(next) ? { phase: 'sign-next', signing, next } : { phase: 'trust-next', signing };
  }
  const previous = trusted.filter((k) => k !== signing);
  return previous.length ? { phase: 'retire', signing, previous } : { phase: 'trust-next', signing };
}

/** sa.pub with `nextPub` appended (phase `trust-next`): every key trusted now stays trusted. */
export function trustNext(pub: string, source: string, next: KeyObject): string {
  const keys = publicKeys(pub, source);
  return publicKeyBundle(keys.some((k) => keyId(k) === keyId(next)) ? keys : [...keys, next]);
}

/** sa.pub with only the signing key's public key (phase `retire`). */
export const retired = (keyPem: string, source: string): string => publicKeyBundle([loadPrivateKey(keyPem, source, false)]);

/** The `kid` in a JWT's header, or undefined when `jwt` is not one. Reads the header only: never prints or checks the token. */
export function jwtKeyId(jwt: string): string | undefined {
  try {
    const header = JSON.parse(Buffer.from(jwt.split('.')[0] ?? '', 'base64url').toString('utf8')) as { kid?: unknown };
    return typeof header.kid === 'string' ? header.kid : undefined;
  } catch {
    return undefined;
  }
}
