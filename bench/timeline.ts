/**
 * A run's timeline from its JSON events: each step that ran, as `step start–end` in seconds from the
 * task's start (the `time` of `task-started`), in start order. Shows the critical path: which steps
 * ran back to back and which overlapped (`--concurrent`).
 */
type Event = { event: string; step?: string; time?: string; detail?: string };

/** One line per step that ran (skipped steps left out): `name  start–end s  detail` (detail cut at 100 characters). */
export function timeline(events: readonly unknown[]): string[] {
  const es = events as Event[];
  const t0 = Date.parse(es.find((e) => e.event === 'task-started')?.time ?? '');
  if (Number.isNaN(t0)) return [];
  const at = (e: Event) => ((Date.parse(e.time!) - t0) / 1000).toFixed(2);
  const lines: string[] = [];
  for (const start of es.filter((e) => e.event === 'step-started')) {
    const end = es.find((e) => (e.event === 'step-done' || e.event === 'step-failed') && e.step === start.step);
    if (end) lines.push(`${start.step!.padEnd(34)} ${at(start).padStart(6)} – ${at(end).padStart(6)}  ${(end.detail ?? '').slice(0, 100)}`);
  }
  return lines;
}
