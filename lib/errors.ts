/**
 * kubeception's error types. Every error a user can see is a {@link KubeceptionError}: a stable
 * `code`, `what` (the concrete field, file, unit or step), `why` (in Kubernetes/kubeadm terms) and
 * `fix` (one actionable instruction). Only wrapper files catch foreign errors, and they rethrow them
 * wrapped with `cause` set.
 *
 * Exit codes used by the CLI: {@link ExitCode}.
 */

import { causeLine } from './host/cause.ts';

/** Process exit codes of the CLI. */
export const ExitCode = {
  /** Every step done or skipped. */
  ok: 0,
  /** A step failed; the message names it. */
  stepFailed: 1,
  /** Bad input (config, flags, host state found before the first host write); nothing changed. */
  badInput: 2,
} as const;

/** Fields every kubeception error carries. */
export interface ErrorDetails {
  /** Concrete names: the config field, file path, unit or step. */
  what: string;
  /** Why it is wrong, in domain terms. */
  why: string;
  /** One actionable instruction. */
  fix: string;
  /** The foreign error this wraps, if any. */
  cause?: unknown;
}

/** Base class: a stable `code` plus what/why/fix. */
export class KubeceptionError extends Error {
  readonly code: string;
  readonly what: string;
  readonly why: string;
  readonly fix: string;
  /** True when the error is the operator's input (exit 2) rather than a failed action (exit 1). */
  readonly badInput: boolean = false;

  constructor(code: string, details: ErrorDetails) {
    super(`${details.what}: ${details.why}`, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = new.target.name;
    this.code = code;
    this.what = details.what;
    this.why = details.why;
    this.fix = details.fix;
  }

  /** Multi-line rendering for the terminal: a short line, then details. */
  render(): string {
    const lines = [`error ${this.code}: ${this.what}`, `  why: ${this.why}`, `  fix: ${this.fix}`];
    if (this.cause instanceof Error) lines.push(`  cause: ${this.cause.message.split('\n')[0]}`);
    return lines.join('\n');
  }
}

/** Bad input: config, flags, or a task definition. Exit code 2; found before any host write. */
export class InputError extends KubeceptionError {
  override readonly badInput = true;
}

/** The config file or a field in it is invalid. `what` names the field path (e.g. `networking.podSubnet`). */
export class ConfigError extends InputError {}

/** A task definition is invalid: cycle, unknown need, duplicate id, bad override. */
export class TaskDefinitionError extends InputError {}

/** Host state that kubeception refuses to touch (foreign etcd data, a CA it cannot use). Exit code 2. */
export class HostStateError extends InputError {}

/**
 * An etcd snapshot that cannot be used: a part missing, truncated or altered (its sha256 differs from
 * the one recorded), metadata that does not parse, a PKI part the key does not decrypt, or a test
 * restore that fails. Exit code 2: refused before anything on the host changed. `what` names the file.
 */
export class SnapshotError extends InputError {}

/** Preflight checks failed. Exit code 2. `checks` lists the stable ids of the failed checks. */
export class PreflightError extends InputError {
  constructor(
    readonly checks: readonly { id: string; message: string; fix: string; ignorable?: boolean }[],
  ) {
    // Only checks of host state can be skipped; a malformed flag is fixed, not ignored.
    const skippable = checks.filter((c) => c.ignorable !== false).map((c) => c.id);
    super('preflight', {
      what: checks.map((c) => c.id).join(', '),
      why: checks.map((c) => `[${c.id}] ${c.message}`).join('; '),
      fix: `${checks.map((c) => c.fix).join('; ')}${skippable.length ? ` (or skip a check with --ignore-preflight-errors=${skippable.length === 1 ? skippable[0] : '<id>'})` : ''}`,
    });
  }
}

/** A systemd unit failed to start or reach the wanted state. `logs` holds the unit's last journal lines. */
export class UnitError extends KubeceptionError {
  constructor(
    readonly unit: string,
    why: string,
    readonly logs: string[] = [],
    cause?: unknown,
  ) {
    const line = causeLine(logs);
    super('systemd-unit', {
      what: unit,
      // The cause line first; the last few lines only when no line names a cause.
      why: line ? `${why}: ${line}` : logs.length ? `${why}\n  last log lines:\n    ${logs.slice(-5).join('\n    ')}` : why,
      fix: `check \`journalctl -u ${unit}\` and the unit's configuration, then re-run`,
      cause,
    });
  }
}

/** A command run on the host failed (non-zero exit or not found). */
export class CommandError extends KubeceptionError {}

/** Waiting for a condition timed out. */
export class TimeoutError extends KubeceptionError {}

/**
 * A change that failed and was undone (exit 1): the step's retry policy does not repeat it, which
 * would only repeat the failure and the undo.
 */
export class RolledBackError extends KubeceptionError {}

/** True if `err` should make the CLI exit with {@link ExitCode.badInput}. */
export function isBadInput(err: unknown): boolean {
  return err instanceof KubeceptionError && err.badInput;
}
