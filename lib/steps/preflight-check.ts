/**
 * The shape of a preflight check (lib/steps/preflight.ts runs them): a leaf module, so the modules
 * that define checks (images, runtime versions, certs, join, …) and the preflight step that runs
 * them do not import each other.
 */
import type { Context } from '../context.ts';

/** One failed check. */
export interface CheckFailure {
  id: string;
  message: string;
  fix: string;
  /** False when `--ignore-preflight-errors` cannot skip it (see {@link Check.ignorable}). */
  ignorable?: boolean;
}

/** A check: a stable id and a function returning a failure (message + fix) or undefined. */
export interface Check {
  id: string;
  /** False for checks of the operator's own flags (bad input cannot be ignored). Default true. */
  ignorable?: boolean;
  run(ctx: Context): Promise<Omit<CheckFailure, 'id'> | undefined>;
}
