/**
 * `kubeception upgrade plan [vX.Y.Z] [--output json]`, `upgrade apply vX.Y.Z [--timeout 5m]` and
 * `upgrade node [--kubeconfig FILE]` — kubeadm's upgrade commands for a self-hosted control plane;
 * `upgrade status|pause|resume|rollback [NAME]` address a NodeUpgradePlan (lib/commands/node-upgrade.ts).
 *
 * plan reads only. apply and node run the task files tasks/upgrade-apply.ts and
 * tasks/upgrade-node.ts (the operator's copies in ./tasks first, distro overrides applied) with the
 * config's kubernetesVersion replaced by the target. Exit codes: 0 done, 1 a step failed (a
 * rolled-back upgrade included), 2 bad input or a version-skew policy error (nothing changed).
 * @see https://kubernetes.io/docs/tasks/administer-cluster/kubeadm/kubeadm-upgrade/
 */
import { ExitCode, InputError, isBadInput, KubeceptionError, PreflightError } from '../errors.ts';
import { loadConfig } from '../config/load.ts';
import { MAX_WAIT_MS, parseDuration } from '../join/token.ts';
import { cluster } from '../k8s/apiserver.ts';
import { applyDistroOverrides, findTaskFile, loadTaskFile, siteDir } from '../task-files.ts';
import { makeContext, realBackends, type HostBackends } from '../runtime.ts';
import { redactingLogger, type Redactor } from '../engine/events.ts';
import type { Logger } from '../context.ts';
import { runOptions, type RunOptions } from '../run-options.ts';
import type { CliIO } from '../cli-io.ts';
import type { ResolvedConfig } from '../types.ts';

type Args = Record<string, unknown> & { _: string[] };
/** The largest `--max-unavailable`: a bound against typos (the CRD only asks for at least 1). */
const MAX_BATCH = 1000;

const usage = (why: string) =>
  new InputError('usage', { what: 'command line', why, fix: 'use `kubeception upgrade plan [vX.Y.Z] [--output json]`, `kubeception upgrade apply vX.Y.Z [--timeout 5m] [--nodes [--max-unavailable N]]`, `kubeception upgrade node [--kubeconfig FILE]` or `kubeception upgrade status|pause|resume|rollback [NAME]`' });

/**
 * `upgrade apply --nodes`, after the control plane is done: the node upgrade controller and the plan
 * `kubelet` for `version` (lib/node-upgrade/start.ts). The agents run kubeception as this command was
 * run (this node's, node, path) in this site directory: the same on every node.
 */
async function rollNodes(ctxFor: (step: string, log: Logger, signal: AbortSignal) => ReturnType<typeof makeContext>, config: ResolvedConfig, version: string, io: CliIO, args: Args): Promise<number> {
  const [{ startNodeRollout }, { AGENT_DEFAULTS }] = await Promise.all([import('../node-upgrade/start.ts'), import('../node-upgrade/types.ts')]);
  const ctx = ctxFor('node-rollout', { info() {}, warn() {} }, new AbortController().signal);
  const command = process.argv[1] ? [process.execPath, process.argv[1]] : undefined;
  const line = await startNodeRollout(await cluster(ctx, 'final'), version, {
    image: config.joinService.image, apiserverPort: config.localAPIEndpoint.bindPort,
    agent: { siteDir: siteDir(io.cwd, args.config as string | undefined), command: command ?? AGENT_DEFAULTS.command },
    ...(args.maxUnavailable !== undefined && { spec: { maxUnavailable: Number(args.maxUnavailable) } }),
  });
  io.stderr(`${line}\n`);
  return ExitCode.ok;
}

/** Runs `upgrade plan|apply|node` (`apply --nodes`: then the Nodes' kubelets, by the controller). @returns the exit code. */
export async function upgradeCommand(args: Args, io: CliIO, packageDir: string, redactor: Redactor, backends?: HostBackends): Promise<number> {
  const sub = args._[1];
  if (sub === 'status' || sub === 'pause' || sub === 'resume' || sub === 'rollback') return (await import('./node-upgrade.ts')).nodeUpgradeCommand(sub, args, io, packageDir);
  const version = args._[2];
  if (sub !== 'plan' && sub !== 'apply' && sub !== 'node') throw usage(`upgrade needs plan, apply, node, status, pause, resume or rollback, not "${sub ?? ''}"`);
  if (sub === 'apply' && version === undefined) throw usage('upgrade apply needs the target version, e.g. v1.35.4');
  if (args.nodes !== undefined && sub !== 'apply') throw usage('--nodes goes with `upgrade apply vX.Y.Z`');
  const maxUnavailable = args.maxUnavailable === undefined ? undefined : Number(args.maxUnavailable);
  if (args.maxUnavailable !== undefined && args.nodes !== true) throw usage('--max-unavailable goes with `upgrade apply vX.Y.Z --nodes`');
  if (maxUnavailable !== undefined && !(Number.isInteger(maxUnavailable) && maxUnavailable >= 1 && maxUnavailable <= MAX_BATCH))
    throw usage(`--max-unavailable ${args.maxUnavailable} is not a whole number of Nodes from 1 to ${MAX_BATCH}`);
  if (sub === 'node' && version !== undefined) throw usage('upgrade node takes no version: the node follows the cluster (its kube-apiserver\'s version)');
  if (version !== undefined && !/^v\d+\.\d+\.\d+$/.test(version)) throw usage(`"${version}" is not a version like v1.35.4`);
  const timeoutMs = args.timeout === undefined ? undefined : parseDuration(String(args.timeout));
  if (args.timeout !== undefined && !timeoutMs) throw usage(`--timeout ${args.timeout} is not a duration such as 5m`);
  if (timeoutMs !== undefined && timeoutMs > MAX_WAIT_MS) throw usage(`--timeout ${args.timeout} is too long: at most 24h`);
  const json = args.output === 'json';
  const base = await loadConfig({ packageDir, cwd: io.cwd, configFile: args.config as string | undefined, distro: args.distro as string | undefined });
  const hb = backends ?? realBackends();
  // The version-skew policy first, as kubeadm does: a target outside it is refused by its check id
  // even when the config cannot be resolved for it (e.g. no CoreDNS pinned for that minor).
  if (version) {
    const [{ clusterVersions }, { skewChecks }] = await Promise.all([import('../upgrade/plan.ts'), import('../upgrade/skew.ts')]);
    const ctx = makeContext({ config: base.config, options: runOptions({ ignorePreflightErrors: new Set(), addSecret: () => {} }), backends: hb, log: { info() {}, warn() {} }, signal: new AbortController().signal, packageDir, step: 'upgrade-policy' });
    const errors = skewChecks(await clusterVersions(ctx, await cluster(ctx, 'final')), version).filter((c) => c.severity === 'error');
    if (errors.length) {
      hb.close();
      throw new PreflightError(errors.map((c) => ({ id: c.id, message: c.why, fix: c.fix, ignorable: false })));
    }
  }
  const { config } = version ? await loadConfig({ packageDir, cwd: io.cwd, configFile: args.config as string | undefined, distro: args.distro as string | undefined, kubernetesVersion: version }) : base;
  const options: RunOptions = runOptions({ ignorePreflightErrors: new Set(), addSecret: (v) => redactor.add(v) }, {
    configKubernetesVersion: base.config.kubernetesVersion,
    ...(timeoutMs && { upgradeTimeoutMs: timeoutMs }),
    ...(typeof args.kubeconfig === 'string' && { kubeconfig: args.kubeconfig }),
  });
  try {
    const ctxFor = (step: string, log: Logger, signal: AbortSignal) => makeContext({ config, options, backends: hb, log: redactingLogger(log, redactor), signal, packageDir, step });
    if (sub === 'plan') {
      const { formatPlan, upgradePlan } = await import('../upgrade/plan.ts');
      const ctx = ctxFor('plan', { info() {}, warn() {} }, new AbortController().signal);
      const plan = await upgradePlan(ctx, await cluster(ctx, 'final'));
      io.stdout(json ? `${JSON.stringify(plan)}\n` : formatPlan(plan));
      return plan.allowed ? ExitCode.ok : ExitCode.badInput;
    }
    const task = await applyDistroOverrides(await loadTaskFile(await findTaskFile(`upgrade-${sub}`, siteDir(io.cwd, args.config as string | undefined), packageDir, (m) => io.stderr(`warning: ${m}\n`))), config.distro.name, packageDir, siteDir(io.cwd, args.config as string | undefined));
    const [{ runTask }, { printRunEnd, recordingSink }] = await Promise.all([import('../engine/runner.ts'), import('../run-output.ts')]);
    const rec = recordingSink(io, redactor, json);
    const result = await runTask(task, ctxFor, { renderer: json ? 'silent' : 'default', sink: rec.sink });
    if (result.status !== 'done') {
      const err = result.error;
      if (err instanceof KubeceptionError) io.stderr(redactor.redact(`${err.render()}\n`));
      else io.stderr(redactor.redact(`internal error: ${(err as Error)?.stack ?? err}\n`));
    }
    printRunEnd(io, redactor, json, { task: task.name, ...result, events: rec.events, state: hb.state, config });
    if (result.status === 'done' && sub === 'apply' && args.nodes === true) return await rollNodes(ctxFor, config, version!, io, args);
    if (result.status === 'done') return ExitCode.ok;
    return isBadInput(result.error) ? ExitCode.badInput : ExitCode.stepFailed;
  } finally {
    hb.close();
  }
}
