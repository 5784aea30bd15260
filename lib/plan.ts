/**
 * `kubeception plan <task>` and `run --dry-run`: each step in execution order, and what it would
 * change. Skip predicates and step bodies run against the dry-run backends (lib/runtime.ts
 * `dryRunBackends`): files are read from the host and written to an in-memory overlay, unit actions
 * and commands are recorded, and API writes go to a {@link DryRunCluster} (server-side dry run when
 * the apiserver answers). Waits return at once. So a plan lists, per step, the files it would create
 * or change (line counts, never content), the units it would enable/start/restart, the commands it
 * would run and the API objects it would create or update — and "no changes" on a converged host.
 * Nothing on the host changes (the e2e compares a tree snapshot before and after).
 *
 * Limits, as for kubeadm's `--dry-run`: on a fresh host nothing serves yet, so objects are listed as
 * `apply` (not compared), and a step whose effect depends on what a real earlier step would have
 * started (a pod, a Node) is simulated as if that wait succeeded.
 */
import { order } from './engine/graph.ts';
import { checkOutcome, evaluateSkip, selectionReason, type RunnerOptions } from './engine/runner.ts';
import { KubeceptionError, isBadInput } from './errors.ts';
import type { Task } from './engine/dsl.ts';
import type { PlannedWrite } from './host/files.ts';
import type { PlannedUnitAction } from './host/systemd-dry-run.ts';
import type { PlannedApiAction } from './k8s/planned.ts';
import { fieldChangeLine, type FieldChange } from './k8s/object-diff.ts';

/** What one step would change. */
export interface PlannedChanges {
  files: PlannedWrite[];
  units: PlannedUnitAction[];
  commands: string[][];
  objects: PlannedApiAction[];
}

/** One line of a plan. */
export interface PlanEntry {
  id: string;
  title: string;
  needs: string[];
  /** Why the step would be skipped, or null if it would run. */
  skip: string | null;
  /** Set when a skip predicate could not be evaluated (e.g. systemd unreachable). */
  unknown?: string;
  /** What the step's body reported in the simulation (its `detail`). */
  detail?: string;
  /** The changes it would make (absent when skipped or not simulated). */
  changes?: PlannedChanges;
  /** The error the simulation stopped at (later steps are not simulated). */
  error?: { code?: string; message: string; badInput: boolean };
}

/** The recording backends' lists, read before and after each step to attribute changes to it. */
export interface PlanRecorder {
  files: { planned: PlannedWrite[] };
  systemd: { planned: PlannedUnitAction[] };
  sh: { planned: string[][] };
  plannedApi: PlannedApiAction[];
}

const counts = (r: PlanRecorder) => [r.files.planned.length, r.systemd.planned.length, r.sh.planned.length, r.plannedApi.length] as const;
const isEmpty = (c: PlannedChanges) => !c.files.length && !c.units.length && !c.commands.length && !c.objects.length;

/** How long one step body may take in a simulation (it should only read). */
const STEP_SIMULATION_MS = 60_000;

/**
 * Simulates the task. `makeCtx(step, signal)` must build contexts on the dry-run backends that
 * `recorder` reads. Simulation stops at the first step that throws (its error is in the entry).
 * @throws TaskDefinitionError for a cycle or an unknown need.
 */
export async function planTask<C>(task: Task<C>, makeCtx: (step: string, signal: AbortSignal) => C, opts: Pick<RunnerOptions, 'only' | 'skip'>, recorder: PlanRecorder): Promise<PlanEntry[]> {
  const out: PlanEntry[] = [];
  let stopped: string | undefined;
  for (const spec of order(task)) {
    const entry: PlanEntry = { id: spec.id, title: spec.title, needs: [...spec.needs], skip: selectionReason(spec.id, opts) ?? null };
    out.push(entry);
    if (entry.skip !== null) continue;
    if (stopped) {
      entry.skip = `not simulated: step ${stopped} failed`;
      continue;
    }
    const ac = new AbortController();
    const timer = setTimeout(() => ac.abort(), STEP_SIMULATION_MS);
    try {
      const ctx = makeCtx(spec.id, ac.signal);
      const reason = await evaluateSkip(spec, ctx).catch((err: unknown) => {
        entry.unknown = (err as Error).message.split('\n')[0];
        return false as const;
      });
      if (reason) {
        entry.skip = reason;
        continue;
      }
      const [f0, u0, c0, o0] = counts(recorder);
      const outcome = checkOutcome(spec.id, await spec.run?.(ctx));
      entry.detail = outcome.detail;
      entry.changes = { files: recorder.files.planned.slice(f0), units: recorder.systemd.planned.slice(u0), commands: recorder.sh.planned.slice(c0), objects: recorder.plannedApi.slice(o0) };
    } catch (err) {
      const e = err as Error;
      entry.error = { code: err instanceof KubeceptionError ? err.code : undefined, message: err instanceof KubeceptionError ? err.render() : e.message ?? String(err), badInput: isBadInput(err) };
      stopped = spec.id;
    } finally {
      clearTimeout(timer);
    }
  }
  return out;
}

/** `plan --order-only`: the steps in execution order with their needs and the --only/--skip selection; reads nothing on the host. */
export function orderOnly<C>(task: Task<C>, opts: Pick<RunnerOptions, 'only' | 'skip'>): PlanEntry[] {
  return order(task).map((spec) => ({ id: spec.id, title: spec.title, needs: [...spec.needs], skip: selectionReason(spec.id, opts) ?? null }));
}

/** Totals over a plan: steps that would change something, and the counts of each kind of change. */
export function planTotals(entries: readonly PlanEntry[]) {
  const changing = entries.filter((e) => e.changes && !isEmpty(e.changes));
  const sum = (k: keyof PlannedChanges) => changing.reduce((n, e) => n + e.changes![k].length, 0);
  return { steps: changing.length, files: sum('files'), units: sum('units'), commands: sum('commands'), objects: sum('objects') };
}

const mode = (m?: number) => (m === undefined ? '' : `0${m.toString(8)}`);

function fileLine(w: PlannedWrite): string {
  if (w.op === 'mkdir') return `mkdir   ${w.path} (${mode(w.mode)})`;
  if (w.op === 'remove') return `remove  ${w.path}`;
  if (w.change === 'create') return `create  ${w.path} (${mode(w.mode)}, ${w.lines} line${w.lines === 1 ? '' : 's'})`;
  if (w.change === 'mode') return `chmod   ${w.path} (${mode(w.mode)})`;
  if (w.change === 'owner') return `chown   ${w.path} (root, ${mode(w.mode)})`;
  return `update  ${w.path} (${mode(w.mode)}, +${w.added ?? 0} −${w.removed ?? 0} lines)`;
}

const MAX_FIELD_LINES = 20;

/** An object's changed fields, one line each under its `update`/`patch` line (at most 20, then how many more). */
function fieldLines(fields: readonly FieldChange[] | undefined): string[] {
  if (!fields?.length) return [];
  const lines = fields.slice(0, MAX_FIELD_LINES).map((f) => `          ${fieldChangeLine(f)}`);
  return fields.length > MAX_FIELD_LINES ? [...lines, `          … ${fields.length - MAX_FIELD_LINES} more field(s) (--output json lists them all)`] : lines;
}

/** The lines of one step's changes, indented. */
function changeLines(c: PlannedChanges): string[] {
  return [
    ...c.files.map(fileLine),
    ...c.units.map((u) => (u.unit ? `${u.op.padEnd(7)} ${u.unit}` : 'systemd daemon-reload')),
    ...c.commands.map((argv) => `run     ${argv.join(' ')}`),
    ...c.objects.flatMap((o) => [`${o.op.padEnd(7)} ${o.ref}${o.note ? ` (${o.note})` : ''}`, ...fieldLines(o.fields)]),
  ];
}

/** Renders a plan as text: one numbered line per step, then what it would change; a total line. */
export function formatPlan(task: string, entries: PlanEntry[], header: string[]): string {
  const w = Math.max(...entries.map((e) => e.id.length));
  const lines = [`task ${task}: ${entries.length} steps (plan: nothing on the host is changed)`, ...header.map((h) => `  ${h}`), ''];
  const simulated = entries.some((e) => e.changes || e.error);
  for (const [i, e] of entries.entries()) {
    const head = `${String(i + 1).padStart(2)}. ${e.id.padEnd(w)}  needs: ${e.needs.join(', ') || '-'}`;
    if (e.skip) {
      lines.push(`${head}  → skip: ${e.skip}`);
    } else if (e.error) {
      lines.push(`${head}  → would fail:`, ...e.error.message.split('\n').map((l) => `      ${l}`));
    } else if (!e.changes) {
      lines.push(`${head}  → would run`);
    } else {
      const c = e.changes;
      const note = e.unknown ? ` (skip check not evaluated: ${e.unknown})` : '';
      const detail = e.detail ? ` (${e.detail})` : '';
      if (isEmpty(c)) lines.push(`${head}  → no changes${detail}${note}`);
      else lines.push(`${head}  → would change${detail}${note}:`, ...changeLines(c).map((l) => `      ${l}`));
    }
  }
  const t = planTotals(entries);
  lines.push('');
  const failed = entries.find((e) => e.error);
  if (!simulated) lines.push('order only: nothing on the host was read (without --order-only, plan simulates each step and lists its changes).');
  else if (failed) lines.push(`plan stopped at step ${failed.id}: it would fail (see above).`);
  else if (!t.steps) lines.push('no changes: the host is converged.');
  else lines.push(`${t.steps} step(s) would change the host: ${t.files} file(s), ${t.units} unit action(s), ${t.commands} command(s), ${t.objects} API object(s).`);
  return `${lines.join('\n')}\n`;
}
