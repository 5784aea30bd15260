/**
 * The command line: argv → config → task → runner; exit codes 0 (done), 1 (a step failed, named),
 * 2 (bad input; nothing on the host changed). Argument parsing is the one use of `citty`.
 *
 * ```
 * kubeception run <task> [--config FILE] [--distro NAME] [--only a,b] [--skip a,b] [--dry-run]
 *                        [--output text|json] [--concurrent] [--ignore-preflight-errors a,b]
 *                        [--url URL (--token T | --token-file F | $KUBECEPTION_TOKEN) --ca-cert-hash sha256:H…]   (join)
 * kubeception plan <task> [same options]
 * ```
 */
import { parseArgs } from 'citty';
import process from 'node:process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ExitCode, InputError, KubeceptionError, isBadInput } from './errors.ts';
import { loadConfig } from './config/load.ts';
import { applyDistroOverrides, findTaskFile, loadTaskFile } from './tasks.ts';
import { runTask } from './runner.ts';
import { formatPlan, planTask } from './plan.ts';
import { Redactor, jsonLines, redactingLogger } from './events.ts';
import { makeContext, type HostBackends, realBackends, dryRunBackends } from './runtime.ts';
import type { RunOptions } from './context.ts';
import { parseDuration } from './join/token.ts';
import { approveCsrsCommand, serveJoinCommand, tokenCommand } from './commands.ts';
import { caCertHashes, joinToken } from './join/flags.ts';
import { resetCommand } from './commands/reset.ts';
import { certsCommand } from './commands/certs.ts';

/** Absolute path of the kubeception package (the directory holding lib/, tasks/, distros/). */
export const PACKAGE_DIR = join(dirname(fileURLToPath(import.meta.url)), '..');

const ARGS = {
  command: { type: 'positional', required: false },
  task: { type: 'positional', required: false },
  config: { type: 'string' },
  distro: { type: 'string' },
  only: { type: 'string' },
  skip: { type: 'string' },
  'dry-run': { type: 'boolean' },
  output: { type: 'string' },
  concurrent: { type: 'boolean' },
  'ignore-preflight-errors': { type: 'string' },
  url: { type: 'string' },
  token: { type: 'string' },
  'token-file': { type: 'string' },
  'ca-cert-hash': { type: 'string' },
  'discovery-timeout': { type: 'string' },
  ttl: { type: 'string' },
  description: { type: 'string' },
  'print-join-command': { type: 'boolean' },
  listen: { type: 'string' },
  'tls-dir': { type: 'string' },
  'rate-limit': { type: 'string' },
  'keep-etcd-data': { type: 'boolean' },
  help: { type: 'boolean' },
} as const;

const USAGE = `usage:
  kubeception run <task> [--config FILE] [--distro NAME] [--only IDS] [--skip IDS] [--dry-run]
                         [--output text|json] [--concurrent] [--ignore-preflight-errors IDS]
  kubeception run join --url URL --token T --ca-cert-hash sha256:H [--ca-cert-hash …] [--discovery-timeout 60s]
      (the token may instead come from --token-file FILE or the environment variable KUBECEPTION_TOKEN)
  kubeception plan <task> [--config FILE] [--distro NAME] [--only IDS] [--skip IDS]
  kubeception token create [--ttl 24h] [--description TEXT] [--print-join-command]
  kubeception token list [--output json]
  kubeception token delete ID
  kubeception certs check-expiration [--output json]
  kubeception certs renew all|NAME
  kubeception reset [--dry-run] [--keep-etcd-data] [--output json]
  kubeception serve-join --listen HOST:PORT --tls-dir DIR [--rate-limit N]   (inside the cluster)
  kubeception approve-csrs                                                   (inside the cluster)
IDS is a comma-separated list of step ids (or preflight check ids).`;

function usageError(why: string): InputError {
  return new InputError('usage', { what: 'command line', why, fix: USAGE });
}

const list = (s: unknown) => (typeof s === 'string' ? s.split(',').map((x) => x.trim()).filter(Boolean) : []);

/** Streams for output; tests pass their own. */
export interface CliIO {
  stdout: (s: string) => void;
  stderr: (s: string) => void;
  cwd: string;
  isTTY: boolean;
}

const defaultIO = (): CliIO => ({
  stdout: (s) => process.stdout.write(s),
  stderr: (s) => process.stderr.write(s),
  cwd: process.cwd(),
  isTTY: !!process.stdout.isTTY,
});

function parse(argv: string[]) {
  const known = new Set(Object.keys(ARGS).flatMap((k) => [k, k.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase())]));
  for (const a of argv) {
    const m = /^--(?:no-)?([^=]+)/.exec(a);
    if (m && !known.has(m[1]!)) throw usageError(`unknown flag --${m[1]}`);
  }
  const args = parseArgs(argv, ARGS) as Record<string, unknown> & { _: string[] };
  const maxPositionals = (args._[0] === 'token' && args._[1] === 'delete') || args._[0] === 'certs' ? 3 : 2;
  if (args._.length > maxPositionals) throw usageError(`unexpected argument "${args._[maxPositionals]}"`);
  if (args.output !== undefined && args.output !== 'json' && args.output !== 'text') throw usageError(`--output must be text or json, not "${args.output}"`);
  return args;
}

/**
 * Runs the CLI.
 * @returns the exit code (0, 1 or 2).
 */
export async function main(argv: string[], io: CliIO = defaultIO(), backends?: HostBackends): Promise<number> {
  const redactor = new Redactor();
  const json = argv.includes('--output=json') || argv.join(' ').includes('--output json');
  const report = (err: unknown) => {
    if (err instanceof KubeceptionError) {
      if (json) io.stdout(redactor.redact(`${JSON.stringify({ event: 'error', code: err.code, what: err.what, why: err.why, fix: err.fix, time: new Date().toISOString() })}\n`));
      io.stderr(redactor.redact(`${err.render()}\n`));
    } else io.stderr(redactor.redact(`internal error: ${(err as Error)?.stack ?? err}\n`));
  };
  try {
    const args = parse(argv);
    if (args.help || args.command === undefined) {
      io.stdout(`${USAGE}\n`);
      return args.help ? ExitCode.ok : ExitCode.badInput;
    }
    if (args.command === 'serve-join') return await serveJoinCommand(args, io);
    if (args.command === 'approve-csrs') return await approveCsrsCommand(io);
    if (args.command === 'certs') {
      const { config } = await loadConfig({ packageDir: PACKAGE_DIR, cwd: io.cwd, configFile: args.config as string | undefined, distro: args.distro as string | undefined });
      return await certsCommand(args.task as string | undefined, args._[2], args, config, PACKAGE_DIR, io);
    }
    if (args.command === 'reset') return await resetCommand(args, io, PACKAGE_DIR, backends);
    if (args.command === 'token') {
      const { config } = await loadConfig({ packageDir: PACKAGE_DIR, cwd: io.cwd, configFile: args.config as string | undefined, distro: args.distro as string | undefined });
      return await tokenCommand(args.task as string | undefined, args, config, io, redactor);
    }
    if (args.command !== 'run' && args.command !== 'plan') throw usageError(`unknown command "${args.command}" (use run, plan, certs, reset, token, serve-join or approve-csrs)`);
    if (typeof args.task !== 'string') throw usageError(`${args.command} needs a task name, e.g. bootstrap`);
    const token = await joinToken(args, process.env);
    redactor.add(token);
    const discoveryTimeout = args['discovery-timeout'] === undefined ? undefined : parseDuration(String(args['discovery-timeout']));
    if (discoveryTimeout === undefined && args['discovery-timeout'] !== undefined) throw usageError('--discovery-timeout must be a duration such as 60s or 5m');
    const options: RunOptions = {
      ignorePreflightErrors: new Set(list(args['ignore-preflight-errors'])),
      joinUrl: args.url as string | undefined,
      token,
      caCertHash: caCertHashes(argv),
      discoveryTimeoutMs: discoveryTimeout,
      addSecret: (v) => redactor.add(v),
    };
    if (args.task === 'join' && args.command === 'run' && !options.joinUrl) throw usageError('run join needs --url URL of the join service');
    const taskFile = await findTaskFile(args.task, io.cwd, PACKAGE_DIR);
    const { config, file } = await loadConfig({ packageDir: PACKAGE_DIR, cwd: io.cwd, configFile: args.config as string | undefined, distro: args.distro as string | undefined });
    for (const id of config.ignorePreflightErrors) (options.ignorePreflightErrors as Set<string>).add(id);
    const task = await applyDistroOverrides(await loadTaskFile(taskFile), config.distro.name, PACKAGE_DIR);
    for (const f of ['only', 'skip'] as const)
      if (f in args && list(args[f]).length === 0) throw usageError(`--${f} needs a comma-separated list of step ids`);
    const sel = { only: list(args.only), skip: list(args.skip) };
    // Preflight guards every host write: --only selects it too unless --skip names it.
    if (sel.only.length && task.steps.some((s) => s.spec.id === 'preflight') && !sel.skip.includes('preflight') && !sel.only.includes('preflight')) sel.only.push('preflight');
    const ids = new Set(task.steps.map((s) => s.spec.id));
    for (const id of [...sel.only, ...sel.skip]) if (!ids.has(id)) throw usageError(`--only/--skip: task ${task.name} has no step "${id}" (steps: ${[...ids].join(', ')})`);
    const dry = args.command === 'plan' || args['dry-run'] === true;
    const hb = backends ?? (dry ? dryRunBackends() : realBackends());
    try {
      const ctxFor = (step: string, log: import('./context.ts').Logger, signal: AbortSignal) =>
        makeContext({ config, options, backends: hb, log: redactingLogger(log, redactor), signal, packageDir: PACKAGE_DIR, step });
      if (dry) {
        const silent = { info() {}, warn() {} };
        const entries = await planTask(task, ctxFor('plan', silent, new AbortController().signal), sel);
        if (json) io.stdout(`${JSON.stringify({ event: 'plan', task: task.name, steps: entries })}\n`);
        else io.stdout(formatPlan(task.name, entries, [`task file: ${taskFile}`, `config: ${file}`, `distro: ${config.distro.name}`, `node: ${config.nodeName} (${config.localAPIEndpoint.advertiseAddress})`]));
        return ExitCode.ok;
      }
      const result = await runTask(task, ctxFor, {
        ...sel,
        concurrent: args.concurrent === true,
        renderer: json ? 'silent' : 'default',
        sink: json ? jsonLines(io.stdout, redactor) : undefined,
      });
      if (result.status === 'done') {
        // The join command holds a token: printed once for the operator, never in logs or events.
        if (hb.state.joinCommand && !json) io.stdout(`\nTo join workers, run on each (as root):\n\n  ${hb.state.joinCommand}\n\n`);
        return ExitCode.ok;
      }
      report(result.error);
      if (isBadInput(result.error)) return ExitCode.badInput;
      io.stderr(`step ${result.failedStep} failed\n`);
      return ExitCode.stepFailed;
    } finally {
      hb.close();
    }
  } catch (err) {
    report(err);
    return isBadInput(err) ? ExitCode.badInput : ExitCode.stepFailed;
  }
}
