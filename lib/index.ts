/**
 * The public API for site files: the DSL, config helper, and the step bodies the package's task
 * files use, so a site's copy of tasks/bootstrap.ts can import them from `kubeception`.
 */
export { step, task, overrides, type Step, type Task, type StepOutcome } from './engine/dsl.ts';
export { defineConfig } from './config/load.ts';
export type { Context } from './context.ts';
export type { KubeceptionConfig, ResolvedConfig } from './types.ts';
export { KubeceptionError } from './errors.ts';
