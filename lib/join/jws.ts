/**
 * Detached JWS over the cluster-info kubeconfig, as the controller-manager's bootstrapsigner writes
 * it (`jws-kubeconfig-<token id>` in kube-public/cluster-info): HS256 with the token's *secret* as
 * the key, `kid` = the token id, the payload removed (`<header>..<signature>`). The one wrapper
 * around `jose` (runs under Node and Deno).
 * @see kubernetes/staging/src/k8s.io/cluster-bootstrap/token/jws/jws.go (ComputeDetachedSignature, DetachedTokenIsValid)
 */
import { CompactSign, compactVerify, decodeProtectedHeader } from 'jose';

const enc = new TextEncoder();

/** `<header>..<signature>` of `content` signed with the token, as the bootstrapsigner computes it. */
export async function signDetached(content: string, tokenId: string, tokenSecret: string): Promise<string> {
  const full = await new CompactSign(enc.encode(content)).setProtectedHeader({ alg: 'HS256', kid: tokenId }).sign(enc.encode(tokenSecret));
  const [header, , signature] = full.split('.');
  return `${header}..${signature}`;
}

/**
 * True only if `detached` is an HS256 JWS of exactly `content` under `tokenSecret` with `kid` =
 * `tokenId`. Never throws: anything malformed is false.
 */
export async function verifyDetached(detached: string, content: string, tokenId: string, tokenSecret: string): Promise<boolean> {
  const parts = detached.split('.');
  if (parts.length !== 3 || parts[1] !== '') return false;
  try {
    if (decodeProtectedHeader(detached).kid !== tokenId) return false;
    const payload = Buffer.from(content, 'utf8').toString('base64url');
    await compactVerify(`${parts[0]}.${payload}.${parts[2]}`, enc.encode(tokenSecret), { algorithms: ['HS256'] });
    return true;
  } catch {
    return false;
  }
}
