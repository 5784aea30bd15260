/** Retries with backoff: the one wrapper around `p-retry`. */
import pRetry, { AbortError } from 'p-retry';
import { isBadInput, RolledBackError } from '../errors.ts';
import type { RetryPolicy } from '../engine/dsl.ts';

/**
 * Calls `fn` until it resolves, at most `policy.tries` times, waiting `delayMs × backoff^(n-1)`
 * between attempts (at most `maxDelayMs`), giving up once `maxRetryTimeMs` has passed. Bad-input errors
 * (exit code 2), a change already rolled back ({@link RolledBackError}), an aborted `signal`, and errors
 * `opts.retryIf` rejects are not retried.
 * @returns what `fn` resolves to; rethrows the last error.
 */
export async function withRetry<T>(
  fn: (attempt: number) => Promise<T>,
  policy: RetryPolicy,
  opts: { signal?: AbortSignal; onRetry?: (err: unknown, attempt: number) => void; maxRetryTimeMs?: number; maxDelayMs?: number; retryIf?: (err: unknown) => boolean } = {},
): Promise<T> {
  if (policy.tries <= 1) return fn(1);
  return pRetry(
    async (attempt) => {
      try {
        return await fn(attempt);
      } catch (err) {
        if (isBadInput(err) || err instanceof RolledBackError || opts.signal?.aborted || (opts.retryIf && !opts.retryIf(err))) throw new AbortError(err as Error);
        throw err;
      }
    },
    {
      retries: policy.tries - 1,
      minTimeout: policy.delayMs,
      maxTimeout: opts.maxDelayMs ?? Number.POSITIVE_INFINITY,
      maxRetryTime: opts.maxRetryTimeMs ?? Number.POSITIVE_INFINITY,
      factor: policy.backoff ?? 1,
      randomize: false,
      signal: opts.signal,
      onFailedAttempt: (e) => opts.onRetry?.(e, e.attemptNumber),
    },
  );
}
