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
export * from './addons/addons.ts';
export * from './bootstrap/apiserver-config.ts';
export * from './bootstrap/certs.ts';
export * from './bootstrap/cluster-configuration.ts';
export * from './bootstrap/node-configuration.ts';
export * from './bootstrap/container-runtime.ts';
export * from './contexts.ts';
export * from './bootstrap/control-plane.ts';
export * from './join/control-plane-join.ts';
export * from './join/etcd-join.ts';
export * from './join/control-plane-identity.ts';
export * from './bootstrap/etcd.ts';
export * from './bootstrap/etcd-snapshots.ts';
export * from './preflight/images.ts';
export * from './join/join-network.ts';
export * from './join/join-service.ts';
export * from './join/join.ts';
export * from './bootstrap/kubeconfig.ts';
export * from './bootstrap/kubelet-client.ts';
export * from './bootstrap/kubelet.ts';
export * from './bootstrap/kubelet-serving.ts';
export * from './bootstrap/kernel-tunables.ts';
export * from './preflight/network-checks.ts';
export * from './join/joined-control-plane.ts';
export * from './preflight/preflight.ts';
export * from './preflight/preflight-check.ts';
export * from './preflight/preflight-ids.ts';
export * from './recovery/recovery.ts';
export * from './reset/leave-cluster.ts';
export * from './reset/outcome.ts';
export * from './reset/reset.ts';
export * from './reset/cri-containers.ts';
export * from './restore/restore.ts';
export * from './restore/restore-preflight.ts';
export * from './preflight/runtime-versions.ts';
export * from './self-hosted/control-plane.ts';
export * from './self-hosted/self-hosted.ts';
export * from './self-hosted/secrets-encryption.ts';
export * from './self-hosted/sa-key-rotation.ts';
export * from './upgrade/upgrade-node.ts';
export * from './upgrade/upgrade.ts';
export * from './upgrade/version-check.ts';
export type { Context, CoreOptions, Logger } from '../context.ts';
export type { StepOutcome } from '../engine/dsl.ts';
export * from './upgrade/kubelet-install.ts';
