/**
 * `kubeception etcd restore SNAPSHOT [--force] [--dry-run] [--output json]` on a single
 * control-plane node: runs tasks/etcd-restore.ts (the operator's copy in ./tasks first, distro
 * overrides applied) with the snapshot's name. Exit codes: 0 restored (the summary prints the RTO),
 * 1 a step failed (named; the summary says how to go on), 2 refused by restore-preflight — an unknown,
 * corrupt or truncated snapshot, a cluster that serves (without `--force`), other keys on the host —
 * with nothing on the host changed. The snapshot key is never printed: its bytes are registered with
 * the redactor first.
 * @see https://kubernetes.io/docs/tasks/administer-cluster/configure-upgrade-etcd/#restoring-an-etcd-cluster
 */
import { readFile } from 'node:fs/promises';
import { ExitCode, InputError, isBadInput, KubeceptionError } from '../errors.ts';
import { loadConfig } from '../config/load.ts';
import { applyDistroOverrides, findTaskFile, loadTaskFile, siteDir } from '../task-files.ts';
import { dryRunBackends, makeContext, realBackends, type HostBackends } from '../runtime.ts';
import { redactingLogger, type Redactor } from '../engine/events.ts';
import { runOptions } from '../run-options.ts';
import type { Logger } from '../context.ts';
import type { CliIO } from '../cli-io.ts';

type Args = Record<string, unknown> & { _: string[] };

/** Runs `etcd restore NAME`. @returns the exit code. @throws InputError `usage` without exactly one snapshot name. */
export async function etcdRestoreCommand(args: Args, io: CliIO, packageDir: string, redactor: Redactor, backends?: HostBackends): Promise<number> {
  const name = args._[2];
  if (name === undefined || args._.length > 3)
    throw new InputError('usage', { what: 'etcd restore', why: name === undefined ? 'a snapshot name is needed' : `it takes one snapshot name ("${args._[3]}" is extra)`, fix: 'run `kubeception etcd restore NAME [--force] [--dry-run]` (`kubeception etcd snapshot list` shows the names)' });
  const json = args.output === 'json';
  const dryRun = args['dry-run'] === true;
  const { config, file } = await loadConfig({ packageDir, cwd: io.cwd, configFile: args.config as string | undefined, distro: args.distro as string | undefined });
  const key = (await readFile(config.etcd.snapshots.keyFile, 'utf8').catch(() => ''))?.trim();
  if (key) redactor.add(key);
  const task = await applyDistroOverrides(await loadTaskFile(await findTaskFile('etcd-restore', siteDir(io.cwd, args.config as string | undefined), packageDir, (m) => io.stderr(`warning: ${m}\n`))), config.distro.name, packageDir, siteDir(io.cwd, args.config as string | undefined));
  const options = runOptions({ ignorePreflightErrors: new Set(), addSecret: (v) => redactor.add(v), configFile: file }, { restoreSnapshot: name, force: args.force === true });
  const hb = backends ?? (dryRun ? dryRunBackends() : realBackends());
  try {
    const ctxFor = (step: string, log: Logger, signal: AbortSignal) => makeContext({ config, options, backends: hb, log: redactingLogger(log, redactor), signal, packageDir, step });
    const [{ runTask }, { printRunEnd, recordingSink }] = await Promise.all([import('../engine/runner.ts'), import('../run-output.ts')]);
    const rec = recordingSink(io, redactor, json);
    const result = await runTask(task, ctxFor, { renderer: json ? 'silent' : 'default', sink: rec.sink });
    if (result.status !== 'done') {
      const err = result.error;
      if (json && err instanceof KubeceptionError) io.stdout(redactor.redact(`${JSON.stringify({ event: 'error', code: err.code, what: err.what, why: err.why, fix: err.fix, time: new Date().toISOString() })}\n`));
      io.stderr(redactor.redact(err instanceof KubeceptionError ? `${err.render()}\n` : `internal error: ${(err as Error)?.stack ?? err}\n`));
    }
    printRunEnd(io, redactor, json, { task: task.name, ...result, events: rec.events, state: hb.state, config });
    if (result.status === 'done') return ExitCode.ok;
    return isBadInput(result.error) ? ExitCode.badInput : ExitCode.stepFailed;
  } finally {
    hb.close();
  }
}
