/**
 * What the CLI hands to the tasks it runs: one options object and one state object for any shipped
 * task (each task's own context type, lib/steps/contexts.ts, takes its part). Types and two small
 * constructors; loaded by every command, so it imports nothing at run time.
 */
import type { Context, CoreOptions } from './context.ts';
import type { BootstrapState, JoinOptions, JoinState, ResetOptions, ResetState, RestoreOptions, RestoreTaskState, SaRotationOptions, SaRotationState, UpgradeApplyOptions, UpgradeApplyState, UpgradeNodeOptions, UpgradeNodeTaskState } from './steps/contexts.ts';

/**
 * The options the CLI hands to a task: every command's (a task reads only its own part, as its
 * context type says). Every key is present; a flag not given is `undefined`.
 */
export type RunOptions = CoreOptions & JoinOptions & ResetOptions & UpgradeApplyOptions & UpgradeNodeOptions & RestoreOptions & SaRotationOptions;
/** A run's state as the CLI holds it: any shipped task's fields (its summary reads the bootstrap's and join's). */
export type RunState = BootstrapState & JoinState & ResetState & UpgradeApplyState & UpgradeNodeTaskState & RestoreTaskState & SaRotationState;
/** The context the CLI builds for a step of any task: every task's context type accepts it. */
export type RunContext = Context<RunOptions, RunState>;

/** {@link RunOptions} from the core and the flags a command was given; the others `undefined`. */
export function runOptions(core: CoreOptions, flags: Partial<Omit<RunOptions, keyof CoreOptions>> = {}): RunOptions {
  return {
    joinUrl: undefined, token: undefined, caCertHash: undefined, discoveryTimeoutMs: undefined, controlPlane: undefined,
    certificateKey: undefined, force: undefined, waitForNetwork: undefined, keepEtcdData: undefined, upgradeTimeoutMs: undefined,
    configKubernetesVersion: undefined, kubeconfig: undefined, restoreSnapshot: undefined, ...core, ...flags,
  };
}

/** A run's state before its first step: every field unset (the type's keys are required, their values `undefined`). */
export const emptyState = (): RunState => ({}) as RunState;
