/**
 * Executes a task: steps in dependency order ({@link order}), rendered by listr2 — live UI on a
 * TTY, line output off a TTY, silent under `--output json` (events go to the sink instead). The
 * one wrapper around `listr2`.
 *
 * Semantics: a step starts when all its needs are done or skipped; a skipped step satisfies its
 * dependents; after a failure no further step starts (dependents are reported skipped with the
 * failed step's name). With `concurrent`, independent steps run at the same time.
 */
import type { Listr } from 'listr2';
import { KubeceptionError, TimeoutError } from '../errors.ts';
import { order } from './graph.ts';
import { withRetry } from '../util/retry.ts';
import { armCrashPoints, crashBoundary, inStep } from './crash.ts';
import type { StepOutcome, StepSpec, Task } from './dsl.ts';
import type { Logger } from '../context.ts';
import type { EventSink, RunEvent } from './events.ts';

/** Runner options (from the CLI). */
export interface RunnerOptions {
  /** Run independent steps at the same time. */
  concurrent?: boolean;
  /** `--only`: run only these step ids; the rest are skipped with a reason. */
  only?: readonly string[];
  /** `--skip`: skip these step ids. */
  skip?: readonly string[];
  /** UI: `default` (listr2 default renderer on a TTY, simple lines off a TTY) or `silent`. */
  renderer: 'default' | 'silent';
  /** Receives every event (JSON output, tests). */
  sink?: EventSink;
}

/** How the run ended. */
export interface RunResult {
  status: 'done' | 'failed';
  failedStep?: string;
  error?: unknown;
  durationMs: number;
}

/** Builds the context for one step (the runner supplies its logger and abort signal). */
export type ContextFactory<C> = (step: string, log: Logger, signal: AbortSignal) => C;

/** Why a step is not selected by `--only`/`--skip`, or undefined. */
export function selectionReason(id: string, opts: Pick<RunnerOptions, 'only' | 'skip'>): string | undefined {
  if (opts.skip?.includes(id)) return 'skipped by --skip';
  if (opts.only && opts.only.length > 0 && !opts.only.includes(id)) return 'not selected by --only';
  return undefined;
}

/** The first skip reason of `spec`'s predicates, or false. */
export async function evaluateSkip<C>(spec: StepSpec<C>, ctx: C): Promise<string | false> {
  for (const fn of spec.skipIf) {
    const reason = await fn(ctx);
    if (reason) return reason;
  }
  return false;
}

/**
 * Checks what a step body returned: a {@link StepOutcome} with a boolean `changed`.
 * @throws KubeceptionError `step-outcome-missing` otherwise — "returned nothing" must not read as "changed nothing".
 */
export function checkOutcome(step: string, outcome: unknown): StepOutcome {
  if (outcome && typeof outcome === 'object' && typeof (outcome as StepOutcome).changed === 'boolean') return outcome as StepOutcome;
  throw new KubeceptionError('step-outcome-missing', {
    what: `step ${step}`,
    why: `its run() returned ${outcome === undefined ? 'nothing' : JSON.stringify(outcome)}, so whether it changed the host is unknown`,
    fix: 'return { changed, detail } from the step body (changed: true if it wrote or restarted anything)',
  });
}

async function runWithTimeout<C>(spec: StepSpec<C>, ctx: (signal: AbortSignal) => C, emit: (e: RunEvent) => void): Promise<unknown> {
  const ac = new AbortController();
  const body = withRetry(async () => spec.run?.(ctx(ac.signal)), spec.retry ?? { tries: 1, delayMs: 0 }, {
    signal: ac.signal,
    onRetry: (err, attempt) => emit({ event: 'step-retry', step: spec.id, attempt, message: (err as Error).message?.split('\n')[0] ?? String(err) }),
  });
  if (spec.timeoutMs === undefined) return body;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const err = new TimeoutError('step-timeout', { what: `step ${spec.id}`, why: `did not finish within ${spec.timeoutMs} ms`, fix: 'check the step\'s component (see its last log lines), then re-run' });
      ac.abort(err);
      reject(err);
    }, spec.timeoutMs);
  });
  try {
    return await Promise.race([body, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Exit 2 promises an unchanged host. Bad input found after earlier steps changed the host is
 * therefore reported as a failed step (exit 1) that says what had already been done.
 */
export function afterWrites(err: unknown, changed: readonly string[]): unknown {
  if (!(err instanceof KubeceptionError) || !err.badInput || changed.length === 0) return err;
  return new KubeceptionError(err.code, { what: err.what, why: `${err.why} — found after the host was changed; already done: ${changed.join('; ')}`, fix: err.fix, cause: err });
}

/**
 * Runs `task`. Never throws for a failed step: the result says which step failed and why.
 * @throws TaskDefinitionError (exit 2) for a cycle, unknown need or duplicate id, before any step runs.
 */
export async function runTask<C>(task: Task<C>, makeCtx: ContextFactory<C>, opts: RunnerOptions): Promise<RunResult> {
  const specs = order(task);
  // `run --concurrent`, or a task that declares itself concurrent (DSL `task(…, { concurrent: true })`).
  const concurrent = opts.concurrent === true || task.concurrent === true;
  armCrashPoints(task, concurrent);
  const started = Date.now();
  const emit = (e: RunEvent) => opts.sink?.({ ...e, time: new Date().toISOString() } as RunEvent & { time: string });
  emit({ event: 'task-started', task: task.name, steps: specs.map((s) => s.id), dryRun: false });
  const settled = new Map<string, { resolve: () => void; promise: Promise<void> }>();
  for (const s of specs) {
    let resolve!: () => void;
    const promise = new Promise<void>((r) => (resolve = r));
    settled.set(s.id, { resolve, promise });
  }
  const failed = new Map<string, unknown>();
  const changedSoFar: string[] = []; // "step (detail)" of every step that reported a change
  const blocked = new Map<string, string>(); // step → failed step it depends on

  const { Listr } = await import('listr2'); // not at the top: `plan` never renders a run
  const listr = new Listr(
    specs.map((spec) => ({
      title: spec.title,
      task: async (_: unknown, t: { skip(m?: string): void; output: string | undefined; title: string }) => {
        try {
          await Promise.all(spec.needs.map((n) => settled.get(n)!.promise));
          const cause = spec.needs.map((n) => (failed.has(n) ? n : blocked.get(n))).find(Boolean) ?? (!concurrent ? [...failed.keys()][0] : undefined);
          const reason = cause ? `not run: step ${cause} failed` : selectionReason(spec.id, opts);
          if (cause) blocked.set(spec.id, cause);
          const log: Logger = {
            info: (m) => { t.output = m; emit({ event: 'log', step: spec.id, level: 'info', message: m }); },
            warn: (m) => { t.output = `warning: ${m}`; emit({ event: 'log', step: spec.id, level: 'warn', message: m }); },
          };
          const ctx = (signal: AbortSignal) => makeCtx(spec.id, log, signal);
          const skip = reason ?? (await evaluateSkip(spec, ctx(new AbortController().signal)));
          if (skip) {
            emit({ event: 'step-skipped', step: spec.id, reason: skip });
            t.skip(skip);
            return;
          }
          emit({ event: 'step-started', step: spec.id });
          const t0 = Date.now();
          try {
            const outcome = await inStep(task.name, spec.id, async () => {
              crashBoundary(spec.id, 'before');
              const o = checkOutcome(spec.id, await runWithTimeout(spec, ctx, emit));
              crashBoundary(spec.id, 'after');
              return o;
            });
            emit({ event: 'step-done', step: spec.id, durationMs: Date.now() - t0, changed: outcome.changed, detail: outcome.detail });
            if (outcome.changed) changedSoFar.push(outcome.detail ? `${spec.id} (${outcome.detail})` : spec.id);
            t.title = `${spec.title}${outcome.detail ? ` — ${outcome.detail}` : outcome.changed ? '' : ' (no change)'}`;
          } catch (caught) {
            const err = afterWrites(caught, changedSoFar);
            failed.set(spec.id, err);
            const code = err instanceof KubeceptionError ? err.code : 'internal';
            emit({ event: 'step-failed', step: spec.id, durationMs: Date.now() - t0, code, message: (err as Error)?.message ?? String(err) });
            throw err;
          }
        } finally {
          settled.get(spec.id)!.resolve();
        }
      },
    })),
    {
      concurrent,
      exitOnError: false,
      renderer: opts.renderer === 'silent' ? 'silent' : 'default',
      fallbackRenderer: 'simple',
      rendererOptions: { collapseSubtasks: false, collapseSkips: false, showErrorMessage: false },
      fallbackRendererOptions: { timestamp: undefined },
      registerSignalListeners: false,
    } as ConstructorParameters<typeof Listr>[1],
  );
  await listr.run();
  const [failedStep, error] = [...failed.entries()][0] ?? [];
  const result: RunResult = failedStep === undefined
    ? { status: 'done', durationMs: Date.now() - started }
    : { status: 'failed', failedStep, error, durationMs: Date.now() - started };
  emit({ event: 'task-done', task: task.name, durationMs: result.durationMs, status: result.status, failedStep });
  return result;
}
