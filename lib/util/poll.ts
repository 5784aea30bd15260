/**
 * Waiting for a condition: calls `check` every `intervalMs` until it returns a value (not
 * undefined), `timeoutMs` passes, or `signal` aborts. The caller throws its own typed TimeoutError,
 * which names what it waited for.
 */

/** @returns `check`'s first defined value, or undefined on timeout/abort. */
export async function pollUntil<T>(
  check: () => Promise<T | undefined>,
  opts: { timeoutMs: number; intervalMs?: number; signal?: AbortSignal },
): Promise<T | undefined> {
  const deadline = Date.now() + opts.timeoutMs;
  while (Date.now() < deadline && !opts.signal?.aborted) {
    const v = await check();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 1_000));
  }
  return undefined;
}
