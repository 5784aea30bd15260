/**
 * `kubeception reset [--dry-run] [--force] [--keep-etcd-data] [--ignore-preflight-errors EtcdTwoMembers]
 * [--output json]`: asks `[reset] Are you sure you want to proceed? [y/N]` on a terminal (kubeadm's
 * prompt; `--force` skips it, as kubeadm's `-f/--force`; on a stdin that is not a terminal, without
 * `--force`, it refuses with exit 2 before anything changes), then runs tasks/reset.ts (the
 * operator's copy in ./tasks first, distro overrides applied) and prints the residue report.
 * Leaving two voting etcd members is refused unless `--ignore-preflight-errors EtcdTwoMembers`
 * (kubeadm reset has that flag; `--force` no longer accepts it).
 * `--dry-run` runs the same steps against recording backends: nothing changes (no prompt), the report
 * lists what a reset would remove and the planned actions. `--output json` prints one JSON document,
 * `kind: ResetReport`. Exit codes: 0 clean, 1 a step failed or something of ours remains, 2 bad input.
 */
import process from 'node:process';
import { ExitCode, InputError, isBadInput, KubeceptionError } from '../errors.ts';
import { ETCD_TWO_MEMBERS } from '../steps/reset/leave-cluster.ts';
import { loadConfig } from '../config/load.ts';
import { applyDistroOverrides, findTaskFile, loadTaskFile, siteDir } from '../task-files.ts';
import { runTask } from '../engine/runner.ts';
import { dryRunBackends, makeContext, realBackends, type HostBackends } from '../runtime.ts';
import { CATEGORIES, residueReport, type ResidueReport } from '../reset/residue.ts';
import type { RunEvent } from '../engine/events.ts';
import type { Logger } from '../context.ts';
import { runOptions, type RunOptions } from '../run-options.ts';

type Args = Record<string, unknown>;
interface IO {
  stdout: (s: string) => void;
  stderr: (s: string) => void;
  cwd: string;
  /** Where the confirmation is read from; default process.stdin. */
  stdin?: NodeJS.ReadableStream & { isTTY?: boolean };
}

/** kubeadm reset's question, word for word. */
export const RESET_PROMPT = '[reset] Are you sure you want to proceed? [y/N]: ';

/**
 * Asks {@link RESET_PROMPT} on `stdin` (a terminal) and reads one line; true for y/yes.
 * @throws InputError `reset-not-confirmed` when stdin is not a terminal (no one to ask).
 */
export async function confirmReset(stdin: NodeJS.ReadableStream & { isTTY?: boolean }, stderr: (s: string) => void): Promise<boolean> {
  if (!stdin.isTTY)
    throw new InputError('reset-not-confirmed', {
      what: 'kubeception reset',
      why: 'it removes this host\'s cluster state and asks first, but standard input is not a terminal',
      fix: 'run it on a terminal to answer the prompt, or pass --force to reset without asking (as kubeadm reset -f)',
    });
  stderr('[reset] WARNING: changes made to this host by kubeception run bootstrap or join will be reverted.\n');
  stderr(RESET_PROMPT);
  const line = await new Promise<string>((resolve) => {
    let buf = '';
    const onData = (c: Buffer | string) => {
      buf += c.toString();
      if (buf.includes('\n')) finish();
    };
    const finish = () => {
      stdin.off('data', onData);
      stdin.off('end', finish);
      stdin.pause?.();
      resolve(buf.split('\n')[0] ?? '');
    };
    stdin.on('data', onData);
    stdin.once('end', finish);
    stdin.resume?.();
  });
  return /^\s*y(es)?\s*$/i.test(line);
}

/** The report as text: one line per category, then foreign and kept paths. */
export function formatReport(r: ResidueReport, dryRun: boolean): string {
  const lines = [dryRun ? 'Would remove (dry run: nothing was changed):' : 'Residue report (what of kubeception remains on this host):'];
  for (const c of CATEGORIES) lines.push(`  ${c.padEnd(11)} ${r.residue[c].length ? r.residue[c].join(', ') : 'none'}`);
  lines.push(`Foreign files (not proven kubeception's, kept): ${r.foreign.length ? '' : 'none'}`, ...r.foreign.map((f) => `  ${f}`));
  const other = Object.entries(r.foreignState).filter(([, v]) => v.length);
  if (other.length) lines.push('Foreign state (another runtime\'s or not proven this cluster\'s, kept):', ...other.map(([k, v]) => `  ${k.padEnd(11)} ${v.join(', ')}`));
  for (const n of r.notes) lines.push(`Note: ${n}`);
  if (r.kept.length) lines.push('Kept on purpose (--keep-etcd-data):', ...r.kept.map((k) => `  ${k}`));
  return `${lines.join('\n')}\n`;
}

/** Runs the reset. @returns the exit code. */
export async function resetCommand(args: Args, io: IO, packageDir: string, backends?: HostBackends): Promise<number> {
  const dryRun = args['dry-run'] === true;
  const json = args.output === 'json';
  const { config } = await loadConfig({ packageDir, cwd: io.cwd, configFile: args.config as string | undefined, distro: args.distro as string | undefined });
  const task = await applyDistroOverrides(await loadTaskFile(await findTaskFile('reset', siteDir(io.cwd, args.config as string | undefined), packageDir, (m) => io.stderr(`warning: ${m}\n`))), config.distro.name, packageDir, siteDir(io.cwd, args.config as string | undefined));
  const ignore = typeof args['ignore-preflight-errors'] === 'string' ? args['ignore-preflight-errors'].split(',').map((x) => x.trim()).filter(Boolean) : [];
  const unknown = ignore.filter((id) => id !== ETCD_TWO_MEMBERS && id !== 'all');
  if (unknown.length)
    throw new InputError('preflight-ignore-unknown', { what: `--ignore-preflight-errors ${unknown.join(',')}`, why: 'reset has no check with that id', fix: `use ${ETCD_TWO_MEMBERS} (or all)` });
  const options: RunOptions = runOptions({ ignorePreflightErrors: new Set(ignore), addSecret: () => {} }, { keepEtcdData: args['keep-etcd-data'] === true, force: args.force === true });
  // kubeadm's prompt, before anything on the host changes; --force (and --dry-run, which changes nothing) skip it.
  if (!dryRun && !options.force && !(await confirmReset(io.stdin ?? process.stdin, io.stderr))) {
    io.stderr('[reset] aborted: nothing was changed\n');
    return ExitCode.badInput;
  }
  const hb = backends ?? (dryRun ? dryRunBackends() : realBackends());
  try {
    const ctxFor = (step: string, log: Logger, signal: AbortSignal) => makeContext({ config, options, backends: hb, log, signal, packageDir, step });
    const events: RunEvent[] = [];
    const result = await runTask(task, ctxFor, { renderer: json ? 'silent' : 'default', sink: (e) => events.push(e) });
    const silent = { info() {}, warn() {} };
    const report = hb.state.resetReport ?? (await residueReport(ctxFor('report', silent, new AbortController().signal)));
    const err = result.error instanceof KubeceptionError ? result.error : undefined;
    if (json) {
      const planned = 'planned' in hb.files ? { files: hb.files.planned, commands: (hb.sh as unknown as { planned: string[][] }).planned, units: (hb.systemd as unknown as { planned: unknown[] }).planned } : undefined;
      const error = err ? { code: err.code, what: err.what, why: err.why, fix: err.fix } : result.error ? { message: String(result.error) } : undefined;
      io.stdout(`${JSON.stringify({ ...report, apiVersion: 'kubeception.io/v1alpha1', dryRun, status: result.status, failedStep: result.failedStep, error, planned, events })}\n`);
    } else {
      io.stdout(formatReport(report, dryRun));
      if (result.status !== 'done') io.stderr(`${err ? err.render() : String(result.error)}\nstep ${result.failedStep} failed\n`);
    }
    if (result.status === 'done') return ExitCode.ok;
    return isBadInput(result.error) ? ExitCode.badInput : ExitCode.stepFailed;
  } finally {
    hb.close();
  }
}
