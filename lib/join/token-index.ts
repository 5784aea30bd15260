/**
 * The public token index: a ConfigMap (kube-system/{@link TOKEN_INDEX_NAME}) of bootstrap token
 * *ids* and their expirations, which kubeception writes whenever it creates, deletes or lists tokens.
 * The join service reads only this and cluster-info — never a token Secret — and still tells a
 * worker "unknown id" from "expired" at once.
 *
 * An entry: `<id>: {"expires":"<RFC 3339>"|null,"forgetAfter":"<RFC 3339>"|null}`. After `expires`
 * the token is answered "expired" until `forgetAfter` (expiry + the grace: as long as the token was
 * valid, at most {@link MAX_GRACE_MS}); then "unknown". The Secret itself is deleted at expiry by the
 * controller-manager's tokencleaner (kubeadm's default), so the grace costs no live credential.
 */
import type { TokenInfo } from './token.ts';

/** Name of the index ConfigMap in kube-system. */
export const TOKEN_INDEX_NAME = 'kubeception-bootstrap-token-index';
/** The longest an expired token is still answered "expired". */
export const MAX_GRACE_MS = 24 * 3_600_000;

/** One entry; instants as epoch milliseconds, undefined = never. */
export interface IndexEntry {
  expires?: number;
  forgetAfter?: number;
}
export type TokenIndex = Map<string, IndexEntry>;

const ID_RE = /^[a-z0-9]{6}$/;
const iso = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z'));
const ms = (v: unknown) => (typeof v === 'string' && !Number.isNaN(Date.parse(v)) ? Date.parse(v) : undefined);

/** Parses the ConfigMap's `data`; malformed entries are dropped. */
export function parseIndex(data: Record<string, string> | undefined): TokenIndex {
  const out: TokenIndex = new Map();
  for (const [id, text] of Object.entries(data ?? {})) {
    if (!ID_RE.test(id)) continue;
    try {
      const v = JSON.parse(text) as { expires?: unknown; forgetAfter?: unknown };
      const [expires, forgetAfter] = [ms(v.expires), ms(v.forgetAfter)];
      out.set(id, { ...(expires !== undefined && { expires }), ...(forgetAfter !== undefined && { forgetAfter }) });
    } catch {
      /* dropped */
    }
  }
  return out;
}

/** The ConfigMap `data` of an index. */
export function renderIndex(index: TokenIndex): Record<string, string> {
  return Object.fromEntries([...index.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([id, e]) => [id, JSON.stringify({ expires: iso(e.expires), forgetAfter: iso(e.forgetAfter) })]));
}

/** The entry for a token that expires at `expires`, `ttlMs` after creation (grace = min(ttl, 24 h)). */
export function entryFor(expires: number | undefined, ttlMs = MAX_GRACE_MS): IndexEntry {
  return expires === undefined ? {} : { expires, forgetAfter: expires + Math.min(Math.max(ttlMs, 0), MAX_GRACE_MS) };
}

/**
 * The next index: every current token (keeping a known entry's grace), plus entries of tokens that
 * are gone but still within their grace; entries past `forgetAfter` are pruned.
 */
export function nextIndex(previous: TokenIndex, tokens: readonly TokenInfo[], now: number): TokenIndex {
  const out: TokenIndex = new Map();
  for (const t of tokens) {
    const expires = t.expiration ? Date.parse(t.expiration) : undefined;
    const prev = previous.get(t.id);
    out.set(t.id, prev && prev.expires === expires ? prev : entryFor(expires));
  }
  for (const [id, e] of previous) if (!out.has(id) && e.forgetAfter !== undefined && e.forgetAfter > now) out.set(id, e);
  return out;
}

/** What the join service answers for a token id. */
export type Verdict = 'signed' | 'unknown' | 'expired' | 'not-signed-yet';

/**
 * The answer for `id`: `expired` from the index (within its grace); else `signed` if cluster-info
 * holds a JWS for it (this covers tokens kubeadm or kubectl made); else `not-signed-yet` for an
 * indexed live token (the bootstrapsigner has not run yet: retry); else `unknown`.
 */
export function verdict(id: string, index: TokenIndex, jws: Record<string, string>, now: number): Verdict {
  const e = index.get(id);
  if (e?.expires !== undefined && e.expires <= now) return e.forgetAfter !== undefined && e.forgetAfter > now ? 'expired' : 'unknown';
  if (jws[id]) return 'signed';
  return e ? 'not-signed-yet' : 'unknown';
}
