/**
 * Bootstrap tokens in kubeadm's format (`[a-z0-9]{6}.[a-z0-9]{16}`: a public id and a secret), stored
 * as `bootstrap.kubernetes.io/token` Secrets named `bootstrap-token-<id>` in kube-system, valid for
 * authentication with the extra group kubeadm uses for node joins.
 * @see https://kubernetes.io/docs/reference/access-authn-authz/bootstrap-tokens/
 */
import { randomInt } from 'node:crypto';
import { BOOTSTRAP_TOKEN_GROUP } from '../constants.ts';
import type { KubernetesObject } from '../k8s/client.ts';

export const TOKEN_RE = /^([a-z0-9]{6})\.([a-z0-9]{16})$/;
const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';
/** Description kubeception puts on the tokens it creates during bootstrap. */
export const BOOTSTRAP_DESCRIPTION = 'kubeception bootstrap token';

/** A token's Secret as read back (no secret part). `expiration` is an ISO-8601 instant or undefined (never). */
export interface TokenInfo {
  id: string;
  secretName: string;
  description: string;
  expiration?: string;
  usages: string[];
  groups: string[];
}

const rand = (n: number) => Array.from({ length: n }, () => ALPHABET[randomInt(ALPHABET.length)]).join('');

/** A new random token `<id>.<secret>`. */
export function generateToken(): string {
  return `${rand(6)}.${rand(16)}`;
}

/** `{ id, secret }` of a well-formed token, or undefined. */
export function parseToken(token: string): { id: string; secret: string } | undefined {
  const m = TOKEN_RE.exec(token);
  return m ? { id: m[1]!, secret: m[2]! } : undefined;
}

const b64 = (s: string) => Buffer.from(s).toString('base64');
const unb64 = (s: string | undefined) => (s === undefined ? undefined : Buffer.from(s, 'base64').toString('utf8'));

/** The Secret for `token`, expiring `ttlMs` after `now`. */
export function tokenSecret(token: string, ttlMs: number, now: Date, description = BOOTSTRAP_DESCRIPTION): KubernetesObject & { data: Record<string, string> } {
  const t = parseToken(token);
  if (!t) throw new TypeError('not a bootstrap token');
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: `bootstrap-token-${t.id}`, namespace: 'kube-system', labels: { 'app.kubernetes.io/managed-by': 'kubeception' } },
    type: 'bootstrap.kubernetes.io/token',
    data: {
      description: b64(description),
      'token-id': b64(t.id),
      'token-secret': b64(t.secret),
      expiration: b64(new Date(now.getTime() + ttlMs).toISOString().replace(/\.\d{3}Z$/, 'Z')),
      'usage-bootstrap-authentication': b64('true'),
      'usage-bootstrap-signing': b64('true'),
      'auth-extra-groups': b64(BOOTSTRAP_TOKEN_GROUP),
    },
  } as KubernetesObject & { data: Record<string, string> };
}

type SecretLike = { metadata?: { name?: string }; type?: string; data?: Record<string, string> };

/** Public facts of a token Secret; undefined if it is not a bootstrap token Secret. */
export function tokenInfo(s: SecretLike): TokenInfo | undefined {
  if (s.type !== 'bootstrap.kubernetes.io/token' || !s.data) return undefined;
  const d = (k: string) => unb64(s.data?.[k]);
  const id = d('token-id');
  if (!id) return undefined;
  return {
    id,
    secretName: s.metadata?.name ?? `bootstrap-token-${id}`,
    description: d('description') ?? '',
    expiration: d('expiration'),
    usages: Object.keys(s.data).filter((k) => k.startsWith('usage-bootstrap-') && d(k) === 'true').map((k) => k.slice('usage-bootstrap-'.length)),
    groups: (d('auth-extra-groups') ?? '').split(',').filter(Boolean),
  };
}

/** The whole token `<id>.<secret>` stored in a token Secret, or undefined. Never log it. */
export function tokenFromSecret(s: SecretLike | undefined): string | undefined {
  const id = unb64(s?.data?.['token-id']);
  const secret = unb64(s?.data?.['token-secret']);
  return id && secret ? `${id}.${secret}` : undefined;
}

/** Milliseconds until `info` expires (Infinity if it never does). */
export function remainingMs(info: TokenInfo, now: Date): number {
  return info.expiration ? Date.parse(info.expiration) - now.getTime() : Number.POSITIVE_INFINITY;
}

/**
 * The longest `token create --ttl`: 8760h (a year). A longer one cannot be written as the Secret's
 * expiration for large values (JavaScript dates end in 275760), and a join token should not live
 * longer anyway (kubeadm's default is 24h).
 */
export const MAX_TOKEN_TTL_MS = 8760 * 3_600_000;

/** The longest wait a duration flag (`--discovery-timeout`, `upgrade apply --timeout`) may ask for: 24h (timers hold at most 24.8 days). */
export const MAX_WAIT_MS = 24 * 3_600_000;

/** Parses a duration like `24h`, `90m`, `30s`, `1h30m` into milliseconds; undefined if malformed. */
export function parseDuration(s: string): number | undefined {
  const m = /^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/.exec(s);
  if (!m || s === '') return undefined;
  return ((Number(m[1] ?? 0) * 60 + Number(m[2] ?? 0)) * 60 + Number(m[3] ?? 0)) * 1000;
}
