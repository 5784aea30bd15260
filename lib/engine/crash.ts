/**
 * Fault injection for the crash harness: `KUBECEPTION_CRASH_AT=<step>:<point>` makes the process
 * SIGKILL itself (a real `kill -9`, no cleanup, no exit handlers) when it reaches that point. Points:
 * `<step>:before` and `<step>:after` around every step body the runner starts, and the mid-step
 * points a step body names with {@link crashPoint} (listed in {@link MID_POINTS}, in the order a run
 * reaches them) — e.g. between a config write and the restart that applies it.
 *
 * If the named point is not reached because its step is skipped, the first point after it in
 * {@link crashPoints} order is taken instead, so a walk over the list always kills the process. In a
 * concurrent run only a later point of the named step or of a step that needs it (directly or not)
 * stands in: a step running beside it reaches its points at any time.
 * Unset (every real run), every call is a no-op.
 *
 * Host effects: only when the variable is set — one line on stderr, then SIGKILL of this process.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { writeSync } from 'node:fs';
import process from 'node:process';
import { order } from './graph.ts';
import type { Task } from './dsl.ts';

/** The environment variable naming the crash point. */
export const CRASH_ENV = 'KUBECEPTION_CRASH_AT';

/**
 * Mid-step crash points by task and step id, in the order one run reaches them. Each is reached
 * whenever its step runs (also when the write before it changed nothing), so a walk is deterministic.
 */
export const MID_POINTS: Record<string, Record<string, readonly string[]>> = {
  bootstrap: {
    kubeconfig: ['kubelet-kubeconfig-written'],
    etcd: ['data-dir-ready', 'environment-written', 'unit-started'],
    'kubelet-config': ['config-written', 'drop-in-written', 'kubeconfig-written'],
    'bootstrap-control-plane': ['first-manifest-written'],
    'self-hosted-control-plane': ['partly-applied'],
    'kubelet-pivot': ['kubeconfig-written', 'manifest-removed', 'kubelet-restarted'],
    'remove-bootstrap-control-plane': ['manifest-removed'],
    'join-service': ['objects-applied'],
  },
  join: {
    // Control-plane join only, and only when this run adds the member (a re-run finds it instead).
    'etcd-join': ['etcd-member-added'],
    'kubelet-config': ['config-written', 'drop-in-written'],
  },
};

const current = new AsyncLocalStorage<{ task: string; step: string }>();
let order_: string[] | undefined;
/** Concurrent runs only: step → every step it needs, directly or not. */
let needsOf: Map<string, Set<string>> | undefined;

/** Every crash point of `task`, in the order a cold run reaches them. */
export function crashPoints<C>(task: Task<C>): string[] {
  return order(task).flatMap((s) => [`${s.id}:before`, ...(MID_POINTS[task.name]?.[s.id] ?? []).map((m) => `${s.id}:${m}`), `${s.id}:after`]);
}

/** Called by the runner once per run: remembers the task's point order (for the skipped-point rule) and, for a concurrent run, what each step needs. */
export function armCrashPoints<C>(task: Task<C>, concurrent = false): void {
  order_ = process.env[CRASH_ENV] ? crashPoints(task) : undefined;
  needsOf = undefined;
  if (!order_ || !concurrent) return;
  needsOf = new Map();
  for (const s of order(task)) needsOf.set(s.id, new Set(s.needs.flatMap((n) => [n, ...(needsOf!.get(n) ?? [])])));
}

/** Runs `fn` as step `step` of `task`, so {@link crashPoint} calls inside name their step. */
export function inStep<T>(task: string, step: string, fn: () => T): T {
  return current.run({ task, step }, fn);
}

function reached(name: string): void {
  const target = process.env[CRASH_ENV];
  if (!target) return;
  const at = order_?.indexOf(name) ?? -1;
  const want = order_?.indexOf(target) ?? -1;
  if (name !== target && !(want >= 0 && at > want)) return;
  const [step, targetStep] = [name.slice(0, name.lastIndexOf(':')), target.slice(0, target.lastIndexOf(':'))];
  if (name !== target && needsOf && step !== targetStep && !needsOf.get(step)?.has(targetStep)) return;
  writeSync(2, `kubeception: crash point ${name}: SIGKILL (${CRASH_ENV}=${target})\n`);
  process.kill(process.pid, 'SIGKILL');
}

/** A boundary point of the runner: `<step>:before` / `<step>:after`. */
export function crashBoundary(step: string, where: 'before' | 'after'): void {
  reached(`${step}:${where}`);
}

/** A mid-step point named `mid` of the step running now (see {@link MID_POINTS}). */
export function crashPoint(mid: string): void {
  const s = current.getStore();
  if (s) reached(`${s.step}:${mid}`);
}
