/**
 * Compile-time tests of the task contexts (checked by `npm run typecheck`, which includes test/;
 * nothing here runs): each `@ts-expect-error` below marks a step that reads another task's options
 * or state. If the types stopped refusing one, tsc would fail on the unused directive. The files
 * under tasks/ and distros/ are the positive cases; two site-style edits follow.
 */
import { overrides, step, task, type Task } from 'kubeception/dsl';
import {
  discover,
  ensureEtcd,
  joinFlagChecks,
  markControlPlane,
  reconcileCerts,
  reportResidue,
  runPreflight,
  upgradePreflight,
  type BootstrapContext,
  type Context,
  type JoinContext,
  type ResetContext,
} from 'kubeception/steps';
import type bootstrap from '../../tasks/bootstrap.ts';

// A site's edited task: shipped steps plus its own, with the core context (no annotation needed).
export const site = task('bootstrap', [
  step('certs').run(reconcileCerts),
  step('etcd').needs('certs').run(ensureEtcd),
  step('mark-control-plane').needs('etcd').run(markControlPlane),
  step('site-motd')
    .needs('mark-control-plane')
    .run(async (ctx) => ({ changed: await ctx.files.write('/etc/motd', 'control plane\n', { mode: 0o644 }) })),
]) satisfies Task<BootstrapContext>;

// A site's override of the shipped bootstrap, as distros/kubic/overrides.ts does.
export const siteOverrides = overrides<typeof bootstrap>().insertBefore('kubelet-start', step('site-check').run((ctx: Context) => ({ changed: false, detail: ctx.config.nodeName })));

// A join step that runs an upgrade step (it reads and writes the upgrade's journal, `state.upgrade`).
export const joinRunsUpgradeStep = task('join', [
  step('discovery').run(discover),
  step('upgrade-preflight').needs('discovery').run(upgradePreflight),
  // @ts-expect-error the join's context has no `upgrade` state
]) satisfies Task<JoinContext>;

// A join step that runs a reset step (it reads `--keep-etcd-data` and the reset's state).
export const joinRunsResetStep = task('join', [
  step('discovery').run(discover),
  step('residue-report').run(reportResidue),
  // @ts-expect-error the join's context has no reset options or state
]) satisfies Task<JoinContext>;

// A join step's own body reading the upgrade's journal.
export const joinReadsUpgradeState = task('join', [
  step('discovery').run(discover),
  step('peek')
    // @ts-expect-error Property 'upgrade' does not exist on the join's state
    .run((ctx: JoinContext) => ({ changed: false, detail: ctx.state.upgrade?.to })),
]) satisfies Task<JoinContext>;

// A step without a declared context sees only the core: not the join's flags.
export const coreReadsJoinOption = task('bootstrap', [
  // @ts-expect-error Property 'token' does not exist on the core options
  step('peek').run((ctx) => ({ changed: false, detail: ctx.options.token })),
]);

// A reset step running the join's flag checks (they read `--token`, `--url`, `--ca-cert-hash`).
export const resetRunsJoinChecks = task('reset', [
  // @ts-expect-error the reset's options have no join flags
  step('preflight').run((ctx: ResetContext) => runPreflight(ctx, joinFlagChecks)),
]) satisfies Task<ResetContext>;
