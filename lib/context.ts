/**
 * The typed context every step receives: the small core every task shares, generic over the task's
 * own options and state. Steps share data only through `state`; all host effects go through `files`,
 * `systemd` and `sh`, so `--dry-run` and `plan` can intercept them.
 */
import type { HostFiles } from './host/files.ts';
import type { Systemd } from './host/systemd.ts';
import type { Shell } from './host/sh.ts';
import type { ResolvedConfig } from './types.ts';

/** Step-scoped log: lines appear under the step in the UI and as `log` events in JSON output. */
export interface Logger {
  info(message: string): void;
  warn(message: string): void;
}

/** Options every task reads. A task's own options (e.g. `run join --url`) come in its `O`. */
export interface CoreOptions {
  /** `--ignore-preflight-errors`: preflight check ids (or `all`) to report as warnings. */
  ignorePreflightErrors: ReadonlySet<string>;
  /** The ids given by the `--ignore-preflight-errors` flag alone: preflight refuses ids no check has. */
  ignorePreflightErrorsFlag?: readonly string[];
  /** Absolute path of the config file the CLI loaded (scheduled commands run with it: `--config`). */
  configFile?: string;
  /** Registers a secret value (e.g. a token created during the run) so no output shows it. */
  addSecret: (value: string) => void;
}

/**
 * The context passed to every `run` and `skipIf` of a task with options `O` and state `S`: the
 * shared core (config, host backends, logger, signal) plus that task's own fields. `Context` without
 * arguments is the core alone — what a step that reads no task's options or state takes. Each shipped
 * task's `O` and `S` are declared in lib/steps/contexts.ts (e.g. `JoinContext`);
 * a step function declares the part it reads, so a step of one task cannot read another task's fields.
 * Keys of `O` and `S` are required (their values may be `undefined`): a task whose context lacks a key
 * a step reads does not type-check.
 */
export interface Context<O extends object = object, S extends object = object> {
  readonly config: ResolvedConfig;
  readonly files: HostFiles;
  readonly systemd: Systemd;
  readonly sh: Shell;
  readonly log: Logger;
  readonly options: CoreOptions & O;
  /** Data steps hand to later steps of the same run; each field is written by one step (see its docstring). */
  readonly state: S;
  /** Aborted when the step times out or the run is interrupted. */
  readonly signal: AbortSignal;
  /** True under `--dry-run`/`plan`: files and units are not changed. */
  readonly dryRun: boolean;
  /** Under `--dry-run`/`plan`: the API writes the steps would make (see lib/k8s/planned.ts). */
  readonly plannedApi?: import('./k8s/planned.ts').PlannedApiAction[];
  /** Absolute path of the kubeception package (for its manifests/ and distros/). */
  readonly packageDir: string;
}
