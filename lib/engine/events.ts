/**
 * Run events: what the runner reports about each step. `--output json` prints one event per line;
 * tests assert on them. Secret values registered with {@link Redactor} never leave in an event, a
 * log line, the text renderer or an error message (see {@link redactingLogger}).
 */
import type { Logger } from '../context.ts';

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

const TOKEN_RE = /^[a-z0-9]{6}\.([a-z0-9]{16})$/;
const PRIVATE_KEY_RE = /-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY-----[\s\S]*?(?:-----END \1PRIVATE KEY-----|$)/g;

/**
 * Replaces registered secret values (tokens, key material) with `[redacted]`, and any PEM private
 * key block whatever was registered. A bootstrap token's secret part is redacted on its own too.
 */
export class Redactor {
  private readonly secrets = new Set<string>();
  /** Registers a value that must never appear in output. Ignores values shorter than 6 characters. */
  add(secret: string | undefined): void {
    if (!secret || secret.length < 6) return;
    this.secrets.add(secret);
    const part = TOKEN_RE.exec(secret)?.[1];
    if (part) this.secrets.add(part);
  }
  /** `text` with every registered secret (longest first) and every private key block replaced. */
  redact(text: string): string {
    let out = text.replace(PRIVATE_KEY_RE, '[redacted private key]');
    for (const s of [...this.secrets].sort((a, b) => b.length - a.length)) out = out.split(s).join('[redacted]');
    return out;
  }
}

/** An {@link EventSink} writing one JSON object per line to `write`. */
export function jsonLines(write: (line: string) => void, redactor: Redactor): EventSink {
  return (e) => write(`${redactor.redact(JSON.stringify(e))}\n`);
}

/** `log` with every message redacted first: what the text renderer and the events both receive. */
export function redactingLogger(log: Logger, redactor: Redactor): Logger {
  return { info: (m) => log.info(redactor.redact(m)), warn: (m) => log.warn(redactor.redact(m)) };
}
