/**
 * `kubeception reset [--dry-run] [--keep-etcd-data] [--output json]`: runs tasks/reset.ts (the
 * operator's copy in ./tasks first, distro overrides applied), then prints the residue report.
 * `--dry-run` runs the same steps against recording backends: nothing changes, the report lists
 * what a reset would remove and the planned actions. `--output json` prints one JSON document,
 * `kind: ResetReport`. Exit codes: 0 clean, 1 a step failed or something of ours remains, 2 bad input.
 */
import { ExitCode, isBadInput, KubeceptionError } from '../errors.ts';
import { loadConfig } from '../config/load.ts';
import { applyDistroOverrides, findTaskFile, loadTaskFile, siteDir } from '../tasks.ts';
import { runTask } from '../runner.ts';
import { dryRunBackends, makeContext, realBackends, type HostBackends } from '../runtime.ts';
import { CATEGORIES, residueReport, type ResidueReport } from '../reset/residue.ts';
import type { RunEvent } from '../events.ts';
import type { Logger, RunOptions } from '../context.ts';

type Args = Record<string, unknown>;
interface IO {
  stdout: (s: string) => void;
  stderr: (s: string) => void;
  cwd: string;
}

/** The report as text: one line per category, then foreign and kept paths. */
export function formatReport(r: ResidueReport, dryRun: boolean): string {
  const lines = [dryRun ? 'Would remove (dry run: nothing was changed):' : 'Residue report (what of kubeception remains on this host):'];
  for (const c of CATEGORIES) lines.push(`  ${c.padEnd(11)} ${r.residue[c].length ? r.residue[c].join(', ') : 'none'}`);
  lines.push(`Foreign files (not kubeception's, kept): ${r.foreign.length ? '' : 'none'}`, ...r.foreign.map((f) => `  ${f}`));
  if (r.kept.length) lines.push('Kept on purpose (--keep-etcd-data):', ...r.kept.map((k) => `  ${k}`));
  return `${lines.join('\n')}\n`;
}

/** Runs the reset. @returns the exit code. */
export async function resetCommand(args: Args, io: IO, packageDir: string, backends?: HostBackends): Promise<number> {
  const dryRun = args['dry-run'] === true;
  const json = args.output === 'json';
  const { config } = await loadConfig({ packageDir, cwd: io.cwd, configFile: args.config as string | undefined, distro: args.distro as string | undefined });
  const task = await applyDistroOverrides(await loadTaskFile(await findTaskFile('reset', siteDir(io.cwd, args.config as string | undefined), packageDir, (m) => io.stderr(`warning: ${m}\n`))), config.distro.name, packageDir);
  const options: RunOptions = { ignorePreflightErrors: new Set(), keepEtcdData: args['keep-etcd-data'] === true, force: args.force === true, addSecret: () => {} };
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
