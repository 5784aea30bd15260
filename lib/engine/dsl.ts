/**
 * The task DSL: `step(id)` returns an immutable builder; `task(name, steps)` bundles steps. Nothing
 * runs at import time — a task file only exports data, which {@link ../runner.ts} executes.
 *
 * ```ts
 * export default task('bootstrap', [
 *   step('certs').needs('preflight').run((ctx) => reconcilePki(ctx)),
 * ]);
 * ```
 * Overrides ({@link overrides}) let `distros/<name>/overrides.ts` replace, remove, or insert steps by
 * id, with ids checked by the type system against the task they override.
 *
 * Typed contexts: a step's type carries the context its functions need (`.run(discover)` with
 * `discover(ctx: JoinContext)` makes it a `Step<JoinContext>`; a lambda without a type gets the
 * step's context so far, the core {@link Context} at first), and a task's is what its steps need
 * together. A task file declares its own with `satisfies Task<JoinContext>`: a step that needs
 * another task's options or state then does not compile.
 */
import type { Context } from '../context.ts';

/** What a step's `run` may report: whether it changed the host, and a one-line detail. */
export interface StepOutcome {
  changed: boolean;
  detail?: string;
}

/**
 * A step body. Must return a {@link StepOutcome}: the runner fails the step (`step-outcome-missing`)
 * if it returns nothing, so "changed nothing" is always a claim the step made.
 */
export type RunFn<C> = (ctx: C) => Promise<StepOutcome> | StepOutcome;
/** A skip predicate: a reason string to skip (shown to the user), or `false` to run. */
export type SkipFn<C> = (ctx: C) => Promise<string | false> | string | false;

/** Retry policy: `tries` attempts in all, `delayMs` before the second, multiplied by `backoff` each time. */
export interface RetryPolicy {
  tries: number;
  delayMs: number;
  /** Delay multiplier between attempts. Default 1 (constant delay). */
  backoff?: number;
}

/** The data of one step, as the runner reads it. */
export interface StepSpec<C, Id extends string = string> {
  readonly id: Id;
  readonly title: string;
  readonly needs: readonly string[];
  readonly skipIf: readonly SkipFn<C>[];
  readonly retry?: RetryPolicy;
  readonly timeoutMs?: number;
  readonly run?: RunFn<C>;
}

/** Kebab-case segments, `/`-separated as kubeadm's sub-phases (`addon/coredns`). */
const KEBAB = /^[a-z0-9]+(-[a-z0-9]+)*(\/[a-z0-9]+(-[a-z0-9]+)*)*$/;

/**
 * A step built with a value that is not a function (typically an import that does not exist, which
 * CommonJS-loaded task files see as `undefined`). Thrown while the task file is imported, so the
 * loader reports the file, line and step before anything runs.
 */
export class StepDefinitionError extends TypeError {
  constructor(readonly stepId: string, message: string) {
    super(`step "${stepId}": ${message}`);
    this.name = 'StepDefinitionError';
  }
}

function mustBeFunction(id: string, method: string, fn: unknown): void {
  if (typeof fn !== 'function') throw new StepDefinitionError(id, `.${method}() needs a function, got ${fn === null ? 'null' : typeof fn}`);
}

/**
 * An immutable step builder. Every method returns a new builder. `C` is the context its functions
 * need; `run`/`skipIf` with a function that needs more (`R`) give a `Step<C & R>`. `R` is taken from
 * the function only (`NoInfer`): inside `task(…, [ … ])` a lambda without a type gets `C`, not `any`.
 */
export class Step<C = Context, Id extends string = string> {
  /** @internal use {@link step}. */
  constructor(readonly spec: StepSpec<C, Id>) {}

  private with(patch: Partial<StepSpec<C, Id>>): Step<C, Id> {
    return new Step<C, Id>(Object.freeze({ ...this.spec, ...patch }));
  }

  /** Steps that must finish (done or skipped) before this one starts. */
  needs(...ids: string[]): Step<C, Id> {
    return this.with({ needs: Object.freeze([...this.spec.needs, ...ids]) });
  }

  /**
   * Skip this step when `fn` returns a reason. Several predicates: the first reason wins.
   * @throws StepDefinitionError if `fn` is not a function.
   */
  skipIf<R = C>(fn: SkipFn<R>): Step<C & NoInfer<R>, Id> {
    mustBeFunction(this.spec.id, 'skipIf', fn);
    return new Step<C & R, Id>(Object.freeze({ ...this.spec, skipIf: Object.freeze([...this.spec.skipIf, fn]) }) as StepSpec<C & R, Id>);
  }

  /** Retry a failing `run`. @throws TypeError if `tries` < 1 or `delayMs` < 0. */
  retry(policy: RetryPolicy): Step<C, Id> {
    if (!(policy.tries >= 1) || !(policy.delayMs >= 0) || (policy.backoff ?? 1) < 1)
      throw new TypeError(`step ${this.spec.id}: retry needs tries >= 1, delayMs >= 0, backoff >= 1`);
    return this.with({ retry: Object.freeze({ ...policy }) });
  }

  /** Fail the step (all attempts together) after `ms` milliseconds. */
  timeout(ms: number): Step<C, Id> {
    if (!(ms > 0)) throw new TypeError(`step ${this.spec.id}: timeout must be > 0 ms`);
    return this.with({ timeoutMs: ms });
  }

  /** The text shown in the UI. Default: the id. */
  title(text: string): Step<C, Id> {
    return this.with({ title: text });
  }

  /** The step body. @throws StepDefinitionError if `fn` is not a function. */
  run<R = C>(fn: RunFn<R>): Step<C & NoInfer<R>, Id> {
    mustBeFunction(this.spec.id, 'run', fn);
    return new Step<C & R, Id>(Object.freeze({ ...this.spec, run: fn }) as StepSpec<C & R, Id>);
  }
}

/**
 * Starts a step builder. `id` is kebab-case (`/` between a phase and its sub-phase) and, where one
 * exists, kubeadm's phase name.
 * @throws TypeError if `id` is not kebab-case.
 */
export function step<const Id extends string, C = Context>(id: Id): Step<C, Id> {
  if (!KEBAB.test(id)) throw new TypeError(`step id "${id}" must be kebab-case ([a-z0-9-], "/" between segments)`);
  return new Step<C, Id>(Object.freeze({ id, title: id, needs: Object.freeze([]), skipIf: Object.freeze([]) }));
}

/** A named, ordered list of steps. `Ids` is the union of its step ids (for typed overrides). */
export interface Task<C = Context, Ids extends string = string> {
  readonly name: string;
  readonly steps: readonly Step<C, Ids>[];
  /**
   * True: steps whose needs are all met run at the same time (as with `run --concurrent`); a failed
   * step then stops only the steps that need it. The task's author vouches that no two steps without
   * a need between them write the same file or unit.
   */
  readonly concurrent?: boolean;
}

/** `A | B` → `A & B`. */
type Intersection<U> = (U extends unknown ? (x: U) => void : never) extends (x: infer I) => void ? I : never;
/** The context a list of steps needs: what each of them needs, together. */
export type NeedsOf<S extends readonly Step<any, string>[]> = Intersection<S[number] extends infer T ? (T extends Step<infer C, string> ? C : never) : never>;

/**
 * Bundles steps into a task whose context is what its steps need together ({@link NeedsOf}).
 * Declaration order breaks ties in the execution order. `opts.concurrent`: see
 * {@link Task.concurrent} (default false: one step at a time). Declare the task's own context with
 * `task(…) satisfies Task<JoinContext>`.
 */
export function task<const S extends readonly Step<any, string>[]>(
  name: string,
  steps: S,
  opts: { concurrent?: boolean } = {},
): Task<NeedsOf<S>, S[number]['spec']['id']> {
  return Object.freeze({ name, steps: Object.freeze([...steps]), ...(opts.concurrent && { concurrent: true }) }) as Task<NeedsOf<S>, S[number]['spec']['id']>;
}

/** One edit of a task by a distro or site. */
export type Edit<C> =
  | { kind: 'replace'; id: string; step: Step<C> }
  | { kind: 'remove'; id: string }
  | { kind: 'insert'; where: 'before' | 'after'; id: string; step: Step<C> };

/** Typed editor for a task's steps; ids are checked against the task's own ids. */
export class Overrides<C, Ids extends string> {
  constructor(readonly edits: readonly Edit<C>[] = []) {}

  /** Replace step `id` with `replacement` (which keeps its own needs; use `.needs()` as required). */
  replace(id: Ids, replacement: Step<C>): Overrides<C, Ids> {
    return new Overrides([...this.edits, { kind: 'replace', id, step: replacement }]);
  }
  /** Remove step `id`; steps that needed it then need its needs instead. */
  remove(id: Ids): Overrides<C, Ids> {
    return new Overrides([...this.edits, { kind: 'remove', id }]);
  }
  /** Insert `s` before step `id`: `s` is declared there and `id` gains a need on `s`. */
  insertBefore<const N extends string>(id: Ids, s: Step<C, N>): Overrides<C, Ids | N> {
    return new Overrides<C, Ids | N>([...this.edits, { kind: 'insert', where: 'before', id, step: s as Step<C> }]);
  }
  /** Insert `s` after step `id`: `s` needs `id`, and steps that needed `id` also need `s`. */
  insertAfter<const N extends string>(id: Ids, s: Step<C, N>): Overrides<C, Ids | N> {
    return new Overrides<C, Ids | N>([...this.edits, { kind: 'insert', where: 'after', id, step: s as Step<C> }]);
  }
}

/** Starts a typed override list for task `T`: `overrides<typeof bootstrap>().replace('etcd', …)`. */
export function overrides<T extends Task<any, string>>(): Overrides<
  T extends Task<infer C, string> ? C : never,
  T extends Task<any, infer Ids> ? Ids : never
> {
  return new Overrides();
}
