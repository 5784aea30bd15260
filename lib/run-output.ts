/**
 * Where a run's output goes and how it ends: the event sink (JSON lines on stdout under
 * `--output json`, always recorded for the summary), then the summary — text on stdout (stderr for a failed run, or when
 * stdout is JSON or was closed early), and one `result` event in JSON. The join command, which holds
 * the token secret, is printed only in text on the terminal's stdout, and only for a token this run
 * created.
 */
import { jsonLines, type EventSink, type Redactor, type RunEvent } from './engine/events.ts';
import { renderSummary, resultEvent, type SummaryInput } from './summary.ts';

/** Output streams as the CLI has them. */
export interface RunIO {
  stdout: (s: string) => void;
  stderr: (s: string) => void;
  /** True once stdout's reader went away (e.g. `| head`). */
  stdoutClosed?: () => boolean;
}

/** Records every event of a run and forwards them as JSON lines when `json`. */
export function recordingSink(io: RunIO, redactor: Redactor, json: boolean): { sink: EventSink; events: RunEvent[] } {
  const events: RunEvent[] = [];
  const forward = json ? jsonLines(io.stdout, redactor) : undefined;
  return {
    events,
    sink: (e) => {
      events.push(e);
      forward?.(e);
    },
  };
}

/** Prints the end of a run: the `result` event (JSON) and the summary text. */
export function printRunEnd(io: RunIO, redactor: Redactor, json: boolean, s: SummaryInput): void {
  if (json) io.stdout(`${redactor.redact(JSON.stringify({ ...resultEvent(s), time: new Date().toISOString() }))}\n`);
  const toStdout = !json && s.status === 'done' && !io.stdoutClosed?.();
  const created = s.state.joinInfo?.tokenCreated === true;
  // Deliberately not redacted: the one place the operator gets the new token.
  const text = renderSummary(s, { joinCommand: toStdout && created ? s.state.joinCommand : undefined });
  if (toStdout) io.stdout(text);
  else io.stderr(redactor.redact(text));
}
