/**
 * Run events: what the runner reports about each step. `--output json` prints one event per line;
 * tests assert on them. Secret values registered with {@link Redactor} never leave in an event.
 */

/** One event. `time` is an ISO-8601 timestamp; durations are milliseconds. */
export type RunEvent =
  | { event: 'task-started'; task: string; steps: string[]; dryRun: boolean }
  | { event: 'step-started'; step: string }
  | { event: 'step-skipped'; step: string; reason: string }
  | { event: 'step-done'; step: string; durationMs: number; changed: boolean | null; detail?: string }
  | { event: 'step-failed'; step: string; durationMs: number; code: string; message: string }
  | { event: 'step-retry'; step: string; attempt: number; message: string }
  | { event: 'log'; step: string; level: 'info' | 'warn'; message: string }
  | { event: 'task-done'; task: string; durationMs: number; status: 'done' | 'failed'; failedStep?: string };

/** Where events go. */
export type EventSink = (e: RunEvent & { time: string }) => void;

/** Replaces registered secret values (tokens, key material) with `[redacted]`. */
export class Redactor {
  private readonly secrets = new Set<string>();
  /** Registers a value that must never appear in output. Ignores values shorter than 6 characters. */
  add(secret: string | undefined): void {
    if (secret && secret.length >= 6) this.secrets.add(secret);
  }
  /** `text` with every registered secret replaced. */
  redact(text: string): string {
    let out = text;
    for (const s of this.secrets) out = out.split(s).join('[redacted]');
    return out;
  }
}

/** An {@link EventSink} writing one JSON object per line to `write`. */
export function jsonLines(write: (line: string) => void, redactor: Redactor): EventSink {
  return (e) => write(`${redactor.redact(JSON.stringify(e))}\n`);
}
