/**
 * Standard output that survives its reader going away. A bootstrap must never stop halfway because
 * `| head` closed the pipe: after EPIPE (or any write error) on stdout, further stdout writes are
 * dropped and the run goes on; {@link GuardedStdout.closed} tells the CLI to put the end-of-run summary
 * on stderr instead. Covers listr2's renderer too, which writes to `process.stdout` directly.
 */
import process from 'node:process';

/** A stdout writer that never throws and never crashes the process. */
export interface GuardedStdout {
  write(s: string): void;
  /** True once a write failed (the reader closed the pipe). */
  readonly closed: boolean;
}

/**
 * Guards `stream` (default `process.stdout`): an `error` listener swallows EPIPE (without one, Node
 * turns the asynchronous EPIPE into an uncaught exception), and synchronous write errors (Deno's
 * BrokenPipe) are caught.
 */
export function guardStdout(stream: NodeJS.WritableStream = process.stdout): GuardedStdout {
  const state = { closed: false };
  stream.on('error', () => {
    state.closed = true;
  });
  return {
    write(s: string) {
      if (state.closed) return;
      try {
        stream.write(s);
      } catch {
        state.closed = true;
      }
    },
    get closed() {
      return state.closed;
    },
  };
}
