/**
 * `kubeception plan <task>` and `run --dry-run`: the execution order, each step's needs, and what
 * would be skipped and why. Skip predicates run against a dry-run context, so nothing is written.
 */
import { order } from './graph.ts';
import { evaluateSkip, selectionReason, type RunnerOptions } from './runner.ts';
import type { Task } from './dsl.ts';

/** One line of a plan. */
export interface PlanEntry {
  id: string;
  title: string;
  needs: string[];
  /** Why the step would be skipped, or null if it would run. */
  skip: string | null;
  /** Set when a skip predicate could not be evaluated (e.g. systemd unreachable). */
  unknown?: string;
}

/** Evaluates the plan. @throws TaskDefinitionError for a cycle or an unknown need. */
export async function planTask<C>(task: Task<C>, ctx: C, opts: Pick<RunnerOptions, 'only' | 'skip'>): Promise<PlanEntry[]> {
  const out: PlanEntry[] = [];
  for (const spec of order(task)) {
    const entry: PlanEntry = { id: spec.id, title: spec.title, needs: [...spec.needs], skip: selectionReason(spec.id, opts) ?? null };
    if (entry.skip === null) {
      try {
        const r = await evaluateSkip(spec, ctx);
        entry.skip = r || null;
      } catch (err) {
        entry.unknown = (err as Error).message.split('\n')[0];
      }
    }
    out.push(entry);
  }
  return out;
}

/** Renders a plan as text: one numbered line per step. */
export function formatPlan(task: string, entries: PlanEntry[], header: string[]): string {
  const w = Math.max(...entries.map((e) => e.id.length));
  const lines = [`task ${task}: ${entries.length} steps`, ...header.map((h) => `  ${h}`), ''];
  entries.forEach((e, i) => {
    const needs = e.needs.length ? `needs: ${e.needs.join(', ')}` : 'needs: -';
    const what = e.skip ? `  → skip: ${e.skip}` : e.unknown ? `  → would run (skip check not evaluated: ${e.unknown})` : '  → would run';
    lines.push(`${String(i + 1).padStart(2)}. ${e.id.padEnd(w)}  ${needs}${what}`);
  });
  return `${lines.join('\n')}\n`;
}
