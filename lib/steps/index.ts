/**
 * The public step library, `kubeception/steps`: every step body, skip predicate and preflight check
 * the package's own task files (tasks/*.ts) and distro overrides use, so a site's copy of a task file
 * imports exactly what the shipped one does:
 *
 * ```ts
 * import { step, task } from 'kubeception/dsl';
 * import { ensureEtcd, reconcileCerts, runPreflight, controlPlaneChecks } from 'kubeception/steps';
 * ```
 *
 * Each function takes the step {@link Context} and returns a {@link StepOutcome} (or, for a skip
 * predicate, a reason string or `false`); see each module's docstrings for its host effects. A test
 * (test/unit/steps/index.test.ts) checks that every module under lib/steps/ is re-exported here and that
 * every name the shipped task files import exists.
 */
export * from './addons.ts';
export * from './certs.ts';
export * from './container-runtime.ts';
export * from './contexts.ts';
export * from './control-plane.ts';
export * from './control-plane-join.ts';
export * from './control-plane-identity.ts';
export * from './etcd.ts';
export * from './images.ts';
export * from './join-network.ts';
export * from './join-service.ts';
export * from './join.ts';
export * from './kubeconfig.ts';
export * from './kubelet-client.ts';
export * from './kubelet.ts';
export * from './network-checks.ts';
export * from './joined-control-plane.ts';
export * from './preflight.ts';
export * from './preflight-check.ts';
export * from './preflight-ids.ts';
export * from './recovery.ts';
export * from './reset.ts';
export * from './runtime-versions.ts';
export * from './self-hosted.ts';
export * from './upgrade-node.ts';
export * from './upgrade.ts';
export type { Context, CoreOptions, Logger } from '../context.ts';
export type { StepOutcome } from '../dsl.ts';
