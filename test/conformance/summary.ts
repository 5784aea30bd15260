/**
 * The summary of a conformance run from ginkgo's JSON report: passed / failed / skipped of the selected
 * specs, per SIG, with the wall time and each failure's first line. Pure.
 */
import { fullText, type Selection, type SpecReport } from './select.ts';

export interface SigCounts {
  passed: number;
  failed: number;
  skipped: number;
}

export interface Summary {
  version: string;
  tier: string;
  cluster: string;
  date: string;
  wallSeconds: number;
  conformanceSpecs: number;
  selected: number;
  passed: number;
  failed: number;
  /** Selected specs that skipped themselves at run time (e2eskipper), with their message. */
  skipped: number;
  /** Specs of the tier left out by skips.yaml. */
  skippedByList: number;
  /** Selected specs the report does not show as run (an interrupted or timed-out suite). */
  notRun: number;
  perSig: Record<string, SigCounts>;
  failures: { name: string; message: string }[];
  runtimeSkips: { name: string; message: string }[];
  slowest: { name: string; seconds: number }[];
}

const sigOf = (name: string) => /^\[(sig-[a-z-]+)\]/.exec(name)?.[1] ?? 'other';
const firstLine = (s: string | undefined) => (s ?? '').trim().split('\n')[0]!.slice(0, 300);

/** Builds the summary of `selection` from the run's specs. */
export function summarize(selection: Selection, specs: readonly SpecReport[], meta: { version: string; cluster: string; date: string; wallSeconds: number }): Summary {
  const byText = new Map(specs.map((s) => [fullText(s), s]));
  const perSig: Record<string, SigCounts> = {};
  const failures: Summary['failures'] = [];
  const runtimeSkips: Summary['runtimeSkips'] = [];
  let passed = 0;
  let failed = 0;
  let skipped = 0;
  let notRun = 0;
  const ran: { name: string; seconds: number }[] = [];
  for (const name of selection.run) {
    const s = byText.get(name);
    perSig[sigOf(name)] ??= { passed: 0, failed: 0, skipped: 0 };
    const sig = perSig[sigOf(name)]!;
    const state = s?.State ?? 'absent';
    if (state === 'passed') {
      passed++;
      sig.passed++;
    } else if (state === 'skipped' && s?.Failure?.Message) {
      skipped++;
      sig.skipped++;
      runtimeSkips.push({ name, message: firstLine(s.Failure.Message) });
    } else if (state === 'skipped' || state === 'pending' || state === 'absent') {
      notRun++;
      failed++;
      sig.failed++;
      failures.push({ name, message: `not run (${state}): the suite ended before it` });
    } else {
      failed++;
      sig.failed++;
      failures.push({ name, message: `${state}: ${firstLine(s?.Failure?.Message)}` });
    }
    if (s?.RunTime) ran.push({ name, seconds: s.RunTime / 1e9 });
  }
  return {
    ...meta,
    tier: selection.tier,
    conformanceSpecs: selection.conformance,
    selected: selection.run.length,
    passed,
    failed,
    skipped,
    skippedByList: selection.skipped.length,
    notRun,
    perSig: Object.fromEntries(Object.entries(perSig).sort(([a], [b]) => a.localeCompare(b))),
    failures,
    runtimeSkips,
    slowest: ran.sort((a, b) => b.seconds - a.seconds).slice(0, 10),
  };
}

/** The summary as text: totals, a row per SIG, the skips, failures and the slowest specs. */
export function formatSummary(s: Summary, selection: Selection): string {
  const lines = [
    `conformance ${s.version} tier ${s.tier} on ${s.cluster}, ${s.date}: wall ${(s.wallSeconds / 60).toFixed(1)} min`,
    `  [Conformance] specs in this release: ${s.conformanceSpecs}; selected by the tier: ${s.selected + s.skippedByList}; skipped by test/conformance/skips.yaml: ${s.skippedByList}; run: ${s.selected}`,
    `  passed ${s.passed}, failed ${s.failed}${s.notRun ? ` (${s.notRun} not run)` : ''}, skipped at run time ${s.skipped}`,
    '',
    `  ${'SIG'.padEnd(22)}${'passed'.padStart(8)}${'failed'.padStart(8)}${'skipped'.padStart(9)}`,
    ...Object.entries(s.perSig).map(([sig, c]) => `  ${sig.padEnd(22)}${String(c.passed).padStart(8)}${String(c.failed).padStart(8)}${String(c.skipped).padStart(9)}`),
  ];
  if (selection.skipped.length) lines.push('', `  skipped by the list (${selection.skipped.length}):`, ...selection.skipped.map((k) => `    - ${k.name}\n      reason: ${k.reason}`));
  if (selection.unmatched.length) lines.push('', `  smoke.txt names this release does not have (${selection.unmatched.length}):`, ...selection.unmatched.map((n) => `    - ${n}`));
  if (s.runtimeSkips.length) lines.push('', '  skipped at run time:', ...s.runtimeSkips.map((f) => `    - ${f.name}: ${f.message}`));
  if (s.failures.length) lines.push('', '  failed:', ...s.failures.map((f) => `    - ${f.name}\n      ${f.message}`));
  if (s.slowest.length) lines.push('', '  slowest:', ...s.slowest.map((x) => `    ${x.seconds.toFixed(1).padStart(7)} s  ${x.name}`));
  return `${lines.join('\n')}\n`;
}
