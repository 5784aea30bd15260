/**
 * The shape of a preflight check (lib/steps/preflight/preflight.ts runs them): a leaf module, so the modules
 * that define checks (images, runtime versions, certs, join, …) and the preflight step that runs
 * them do not import each other.
 */
import type { Context } from '../../context.ts';
import type { JoinOptions } from '../contexts.ts';

/** One failed check. */
export interface CheckFailure {
  id: string;
  message: string;
  fix: string;
  /** False when `--ignore-preflight-errors` cannot skip it (see {@link Check.ignorable}). */
  ignorable?: boolean;
}

/**
 * A check: a stable id and a function returning a failure (message + fix) or undefined. `C` is the
 * context it reads (the core by default; e.g. the join's flag checks read {@link JoinOptions}).
 */
export interface Check<C = Context> {
  id: string;
  /** False for checks of the operator's own flags (bad input cannot be ignored). Default true. */
  ignorable?: boolean;
  // A property, not a method: a check that reads a task's options is no check of another task.
  run: (ctx: C) => Promise<Omit<CheckFailure, 'id'> | undefined>;
}
