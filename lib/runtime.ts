/**
 * Wires the host backends into step contexts: real ones for `run`, dry-run ones (reads real state,
 * records writes) for `plan` and `--dry-run`.
 */
import { RealFiles, type HostFiles } from './host/files.ts';
import { DryRunFiles } from './host/files-dry-run.ts';
import { OwnedRecorder } from './host/owned-manifest.ts';
import { DbusSystemd, type Systemd } from './host/systemd.ts';
import { DryRunSystemd } from './host/systemd-dry-run.ts';
import { DryRunShell, RealShell, type Shell } from './host/sh.ts';
import type { Logger } from './context.ts';
import { emptyState, type RunContext, type RunOptions, type RunState } from './run-options.ts';
import type { ResolvedConfig } from './types.ts';
import type { PlannedApiAction } from './k8s/planned.ts';
import { causeLine } from './host/cause.ts';

/** The host effects of one run. */
export interface HostBackends {
  files: HostFiles;
  systemd: Systemd;
  sh: Shell;
  dryRun: boolean;
  /** Task state shared by every step of the run. */
  state: RunState;
  /** Set by {@link dryRunBackends}: API writes recorded instead of made. */
  plannedApi?: PlannedApiAction[];
  close(): void;
}

/**
 * Last `lines` journal lines of a unit, for error messages; empty if journalctl is unavailable.
 * A process's own output reaches the journal through a stream and may land after systemd's
 * "Failed with result" lines: when no line names a cause yet, it reads once more after 1 s.
 */
export function journalReader(sh: Shell, lines = 60) {
  const read = async (unit: string): Promise<string[]> => {
    const r = await sh.read(['journalctl', '-u', unit, '-n', String(lines), '--no-pager', '-o', 'cat'], { allowFail: true, timeoutMs: 5_000 }).catch(() => undefined);
    return r && r.code === 0 ? r.stdout.trim().split('\n').filter(Boolean) : [];
  };
  return async (unit: string): Promise<string[]> => {
    const first = await read(unit);
    if (!first.length || causeLine(first)) return first;
    await new Promise((r) => setTimeout(r, 1_000));
    return read(unit);
  };
}

/** Backends that change the host. */
export function realBackends(): HostBackends {
  const sh = new RealShell();
  const systemd = new DbusSystemd(journalReader(sh));
  return { files: new RealFiles(new OwnedRecorder()), systemd, sh, dryRun: false, state: emptyState(), close: () => systemd.close() };
}

/** Backends that read the host and record every change instead of making it. */
export function dryRunBackends(): HostBackends & { files: DryRunFiles; systemd: DryRunSystemd; sh: DryRunShell; plannedApi: PlannedApiAction[] } {
  const sh = new DryRunShell();
  const systemd = new DryRunSystemd(new DbusSystemd(journalReader(sh)));
  return { files: new DryRunFiles(), systemd, sh, dryRun: true, state: emptyState(), plannedApi: [], close: () => systemd.close() };
}

/** Builds the context of one step. */
export function makeContext(p: {
  config: ResolvedConfig;
  options: RunOptions;
  backends: HostBackends;
  log: Logger;
  signal: AbortSignal;
  packageDir: string;
  step: string;
}): RunContext {
  return {
    config: p.config,
    files: p.backends.files,
    systemd: p.backends.systemd,
    sh: p.backends.sh,
    log: p.log,
    options: p.options,
    state: p.backends.state,
    signal: p.signal,
    dryRun: p.backends.dryRun,
    ...(p.backends.plannedApi && { plannedApi: p.backends.plannedApi }),
    packageDir: p.packageDir,
  };
}
