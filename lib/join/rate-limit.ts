/**
 * Per-client request limit of the join service: the one wrapper around `rate-limiter-flexible`
 * (in memory; one join-service replica). A client is keyed by its remote address.
 */
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';

/** `ok`, or refused with the seconds after which the client may retry (for `Retry-After`). */
export type Verdict = { ok: true } | { ok: false; retryAfterS: number };

/** A limiter of `points` requests per `durationS` seconds per key. */
export function rateLimiter(points: number, durationS = 1): (key: string) => Promise<Verdict> {
  const limiter = new RateLimiterMemory({ points, duration: durationS });
  return async (key) => {
    try {
      await limiter.consume(key);
      return { ok: true };
    } catch (res) {
      if (res instanceof RateLimiterRes) return { ok: false, retryAfterS: Math.max(1, Math.ceil(res.msBeforeNext / 1000)) };
      throw res;
    }
  };
}
