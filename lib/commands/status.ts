/**
 * `kubeception status [--wait 5m] [--output json]` on a control-plane node: every health check
 * (lib/status/checks.ts) named with its state and why. `--wait` re-runs the checks every second
 * until none fails or the time is up. Exit 0 healthy (no `fail`; `warn`s allowed), 1 unhealthy,
 * 2 bad usage or not a control-plane node (no admin kubeconfig). Read-only: nothing on the host or
 * in the cluster changes.
 * Text: one line per check (`pass`/`warn`/`FAIL`, name, detail), each failing check's items below
 * it; JSON: one object `{ kind: 'Status', healthy, waitedMs, checks: CheckResult[] }`.
 */
import { ExitCode, InputError } from '../errors.ts';
import { RealFiles } from '../host/files.ts';
import { MAX_WAIT_MS, parseDuration } from '../join/token.ts';
import { gatherStatus, type StatusHost } from '../status/gather.ts';
import { healthy, type CheckResult } from '../status/checks.ts';
import type { CliIO } from '../cli-io.ts';
import type { ResolvedConfig } from '../types.ts';

type Args = Record<string, unknown> & { _: string[] };
type IO = Pick<CliIO, 'stdout' | 'stderr'>;

/** Text rendering: a line per check; items of failing or warning checks indented below (all with `verbose`). */
export function formatStatus(checks: readonly CheckResult[], verbose = false): string {
  const width = Math.max(...checks.map((c) => c.name.length));
  const lines: string[] = [];
  for (const c of checks) {
    lines.push(`${(c.state === 'fail' ? 'FAIL' : c.state).padEnd(5)}${c.name.padEnd(width + 2)}${c.detail}`);
    if (verbose || c.state !== 'pass') for (const i of c.items ?? []) lines.push(`${' '.repeat(width + 7)}${i}`);
  }
  const failed = checks.filter((c) => c.state === 'fail').map((c) => c.name);
  lines.push(failed.length ? `unhealthy: ${failed.join(', ')}` : `healthy (${checks.length} checks${checks.some((c) => c.state === 'warn') ? ', with warnings' : ''})`);
  return `${lines.join('\n')}\n`;
}

/**
 * Runs `status`. @returns the exit code.
 * @throws InputError `usage` for a bad `--wait`; HostStateError `kubeconfig-missing` off a control-plane node.
 */
export async function statusCommand(args: Args, config: ResolvedConfig, io: IO, host?: Partial<StatusHost>): Promise<number> {
  if (args._.length > 1) throw new InputError('usage', { what: 'status', why: `it takes no argument ("${args._[1]}")`, fix: 'run `kubeception status [--wait 5m] [--output json]`' });
  const waitMs = args.wait === undefined ? 0 : parseDuration(String(args.wait));
  if (waitMs === undefined || waitMs > MAX_WAIT_MS) throw new InputError('usage', { what: '--wait', why: `"${args.wait}" is not a duration of at most 24h`, fix: 'use e.g. --wait 5m or --wait 90s' });
  const json = args.output === 'json';
  let systemd: { activeState(u: string): Promise<string>; close(): void } | undefined;
  const h: StatusHost = {
    config,
    files: host?.files ?? new RealFiles(),
    unitState: host?.unitState ?? (async (unit) => {
      const { DbusSystemd } = await import('../host/systemd.ts');
      systemd ??= new DbusSystemd();
      return systemd.activeState(unit);
    }),
  };
  const started = Date.now();
  try {
    let checks = await gatherStatus(h);
    let last = '';
    while (!healthy(checks) && Date.now() - started < waitMs) {
      const failing = checks.filter((c) => c.state === 'fail').map((c) => `${c.name} (${c.detail})`).join('; ');
      if (!json && failing !== last) io.stderr(`waiting: ${failing}\n`);
      last = failing;
      await new Promise((r) => setTimeout(r, 1_000));
      checks = await gatherStatus(h);
    }
    const ok = healthy(checks);
    if (json) io.stdout(`${JSON.stringify({ kind: 'Status', healthy: ok, waitedMs: Date.now() - started, checks })}\n`);
    else io.stdout(formatStatus(checks, args.verbose === true));
    return ok ? ExitCode.ok : ExitCode.stepFailed;
  } finally {
    systemd?.close();
  }
}
