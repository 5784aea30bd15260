/**
 * Which failed request is worth retrying, for the API client (lib/k8s/client.ts) and the join's
 * own requests (lib/join/kubelet-csr.ts) alike. No imports: the worker's join loads no API client.
 */

const TRANSIENT_CODES = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT', 'EAI_AGAIN']);

/**
 * A failure worth retrying: the connection was reset/refused, or HTTP 429/500/502/503/504 (an
 * error whose numeric `code` is the status). A TLS verification failure is not transient.
 */
export function isTransient(err: unknown): boolean {
  const e = err as { code?: unknown; message?: string; cause?: { code?: unknown } };
  if (typeof e?.code === 'number') return [429, 500, 502, 503, 504].includes(e.code);
  if (typeof e?.code === 'string' && TRANSIENT_CODES.has(e.code)) return true;
  if (typeof e?.cause?.code === 'string' && TRANSIENT_CODES.has(e.cause.code)) return true;
  return /socket hang up|ECONNRESET|ECONNREFUSED|EPIPE/.test(e?.message ?? '');
}
