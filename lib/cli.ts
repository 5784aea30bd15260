/**
 * The command line: argv → config → task → runner; exit codes 0 (done), 1 (a step failed, named),
 * 2 (bad input; nothing on the host changed). Argument parsing is the one use of `citty`.
 *
 * ```
 * kubeception run <task> [--config FILE] [--distro NAME] [--only a,b] [--skip a,b] [--dry-run]
 *                        [--output text|json] [--concurrent] [--ignore-preflight-errors a,b]
 *                        [--url URL ($KUBECEPTION_TOKEN | --token-file F | --token T) --ca-cert-hash sha256:H…]   (join)
 * kubeception plan <task> [same options] [--order-only]
 * ```
 */
import { parseArgs } from 'citty';
import process from 'node:process';
import { ExitCode, KubeceptionError, isBadInput } from './errors.ts';
import { Redactor, redactingLogger } from './engine/events.ts';
import { PACKAGE_DIR } from './package.ts';
import { USAGE, unknownCommand, unknownFlag, unknownStep, usageError, versionText } from './usage.ts';
import { guardStdout } from './stdio.ts';
import { argvSecretWarnings, caCertHashes, joinToken, takeSecretEnv } from './join/flags.ts';
import type { HostBackends } from './runtime.ts';
import { runOptions, type RunOptions } from './run-options.ts';

// Start-up: only what `--help` and argument errors need is imported above; every command imports
// its modules when it runs (`await import(…)` below), so `kubeception --help` does not load the
// apiserver client, listr2 or D-Bus.

/** Absolute path of the kubeception package (the directory holding lib/, tasks/, distros/). */
export { PACKAGE_DIR };

const ARGS = {
  command: { type: 'positional', required: false },
  task: { type: 'positional', required: false },
  config: { type: 'string' },
  distro: { type: 'string' },
  only: { type: 'string' },
  skip: { type: 'string' },
  'dry-run': { type: 'boolean' },
  'order-only': { type: 'boolean' },
  output: { type: 'string' },
  concurrent: { type: 'boolean' },
  'ignore-preflight-errors': { type: 'string' },
  url: { type: 'string' },
  token: { type: 'string' },
  'token-file': { type: 'string' },
  'ca-cert-hash': { type: 'string' },
  'discovery-timeout': { type: 'string' },
  'wait-for-network': { type: 'boolean' },
  'control-plane': { type: 'boolean' },
  'certificate-key': { type: 'string' },
  force: { type: 'boolean' },
  ttl: { type: 'string' },
  description: { type: 'string' },
  'print-join-command': { type: 'boolean' },
  listen: { type: 'string' },
  'tls-dir': { type: 'string' },
  'rate-limit': { type: 'string' },
  kubeception: { type: 'string' },
  'keep-etcd-data': { type: 'boolean' },
  'node-name': { type: 'string' },
  timeout: { type: 'string' },
  wait: { type: 'string' },
  verbose: { type: 'boolean' },
  kubeconfig: { type: 'string' },
  nodes: { type: 'boolean' },
  'max-unavailable': { type: 'string' },
  help: { type: 'boolean' },
  version: { type: 'boolean' },
} as const;


const list = (s: unknown) => (typeof s === 'string' ? s.split(',').map((x) => x.trim()).filter(Boolean) : []);

export type { CliIO } from './cli-io.ts';
import type { CliIO } from './cli-io.ts';

const defaultIO = (): CliIO => {
  const [out, err] = [guardStdout(process.stdout), guardStdout(process.stderr)];
  return { stdout: (s) => out.write(s), stderr: (s) => err.write(s), cwd: process.cwd(), isTTY: !!process.stdout.isTTY, stdoutClosed: () => out.closed };
};

function parse(argv: string[]) {
  const known = new Set(Object.keys(ARGS).flatMap((k) => [k, k.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase())]));
  for (const a of argv) {
    const m = /^--(?:no-)?([^=]+)/.exec(a);
    if (m && !known.has(m[1]!)) throw unknownFlag(m[1]!, Object.keys(ARGS));
  }
  const args = parseArgs(argv, ARGS) as Record<string, unknown> & { _: string[] };
  const maxPositionals = args._[0] === 'etcd' ? 4 : (args._[0] === 'token' && args._[1] === 'delete') || args._[0] === 'certs' || args._[0] === 'upgrade' ? 3 : 2;
  if (args._.length > maxPositionals) throw usageError(`unexpected argument "${args._[maxPositionals]}"`);
  if (args.output !== undefined && args.output !== 'json' && args.output !== 'text') throw usageError(`--output must be text or json, not "${args.output}"`);
  return args;
}

/**
 * Runs the CLI.
 * @returns the exit code (0, 1 or 2).
 */
export async function main(argv: string[], io: CliIO = defaultIO(), backends?: HostBackends): Promise<number> {
  // The join secrets leave the environment before anything runs: no child process inherits them.
  const secretEnv = takeSecretEnv();
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
    for (const w of argvSecretWarnings(args)) io.stderr(`warning: ${w}\n`);
    if (args.version) {
      io.stdout(`${versionText(PACKAGE_DIR)}\n`);
      return ExitCode.ok;
    }
    if (args.help || args.command === undefined) {
      io.stdout(`${USAGE}\n`);
      return args.help ? ExitCode.ok : ExitCode.badInput;
    }
    if (args.command === 'serve-join') return await (await import('./commands/in-cluster.ts')).serveJoinCommand(args, io);
    if (args.command === 'approve-csrs') return await (await import('./commands/in-cluster.ts')).approveCsrsCommand(io);
    if (args.command === 'node-upgrade-controller') return await (await import('./commands/in-cluster.ts')).nodeUpgradeControllerCommand(io);
    if (args.command === 'init')
      return await (await import('./commands/init.ts')).initCommand({ dir: args.task as string | undefined, cwd: io.cwd, packageDir: PACKAGE_DIR, kubeception: args.kubeception as string | undefined, stdout: io.stdout });
    if (args.command === 'certs') {
      const [{ loadConfig }, { certsCommand }] = await Promise.all([import('./config/load.ts'), import('./commands/certs.ts')]);
      const { config } = await loadConfig({ packageDir: PACKAGE_DIR, cwd: io.cwd, configFile: args.config as string | undefined, distro: args.distro as string | undefined });
      return await certsCommand(args.task as string | undefined, args._[2], args, config, PACKAGE_DIR, io, redactor);
    }
    if (args.command === 'secrets') {
      const [{ loadConfig }, { secretsCommand }] = await Promise.all([import('./config/load.ts'), import('./commands/secrets.ts')]);
      const { config } = await loadConfig({ packageDir: PACKAGE_DIR, cwd: io.cwd, configFile: args.config as string | undefined, distro: args.distro as string | undefined });
      return await secretsCommand(args.task as string | undefined, args, config, PACKAGE_DIR, io);
    }
    if (args.command === 'reset') {
      const [{ resetCommand }] = await Promise.all([import('./commands/reset.ts')]);
      return await resetCommand(args, io, PACKAGE_DIR, backends);
    }
    if (args.command === 'upgrade') {
      const [{ upgradeCommand }] = await Promise.all([import('./commands/upgrade.ts')]);
      return await upgradeCommand(args, io, PACKAGE_DIR, redactor, backends);
    }
    if (args.command === 'etcd' && args._[1] === 'restore') return await (await import('./commands/etcd-restore.ts')).etcdRestoreCommand(args, io, PACKAGE_DIR, redactor, backends);
    if (args.command === 'etcd') {
      const [{ loadConfig }, { etcdCommand }] = await Promise.all([import('./config/load.ts'), import('./commands/etcd.ts')]);
      const { config } = await loadConfig({ packageDir: PACKAGE_DIR, cwd: io.cwd, configFile: args.config as string | undefined, distro: args.distro as string | undefined });
      return await etcdCommand(args, config, io, redactor);
    }
    if (args.command === 'status') {
      const [{ loadConfig }, { statusCommand }] = await Promise.all([import('./config/load.ts'), import('./commands/status.ts')]);
      const { config } = await loadConfig({ packageDir: PACKAGE_DIR, cwd: io.cwd, configFile: args.config as string | undefined, distro: args.distro as string | undefined });
      return await statusCommand(args, config, io);
    }
    if (args.command === 'token') {
      const [{ loadConfig }, { tokenCommand }] = await Promise.all([import('./config/load.ts'), import('./commands/token.ts')]);
      const { config } = await loadConfig({ packageDir: PACKAGE_DIR, cwd: io.cwd, configFile: args.config as string | undefined, distro: args.distro as string | undefined });
      return await tokenCommand(args.task as string | undefined, args, config, io, redactor);
    }
    if (args.command !== 'run' && args.command !== 'plan') throw unknownCommand(String(args.command));
    if (typeof args.task !== 'string') throw usageError(`${args.command} needs a task name, e.g. bootstrap`);
    const [{ MAX_WAIT_MS, parseDuration }, { loadConfig }, { applyDistroOverrides, findTaskFile, loadTaskFile, siteDir }] = await Promise.all([
      import('./join/token.ts'), import('./config/load.ts'), import('./task-files.ts'),
    ]);
    const token = await joinToken(args, secretEnv);
    redactor.add(token);
    const certificateKey = typeof args['certificate-key'] === 'string' ? args['certificate-key'] : secretEnv.KUBECEPTION_CERTIFICATE_KEY;
    redactor.add(certificateKey);
    const discoveryTimeout = args['discovery-timeout'] === undefined ? undefined : parseDuration(String(args['discovery-timeout']));
    if (discoveryTimeout === undefined && args['discovery-timeout'] !== undefined) throw usageError('--discovery-timeout must be a duration such as 60s or 5m');
    if (discoveryTimeout !== undefined && discoveryTimeout > MAX_WAIT_MS) throw usageError(`--discovery-timeout ${args['discovery-timeout']} is too long: at most 24h`);
    const options: RunOptions = runOptions({
      ignorePreflightErrors: new Set(list(args['ignore-preflight-errors'])),
      ignorePreflightErrorsFlag: list(args['ignore-preflight-errors']),
      addSecret: (v) => redactor.add(v),
    }, {
      joinUrl: args.url as string | undefined,
      token,
      caCertHash: caCertHashes(argv),
      discoveryTimeoutMs: discoveryTimeout,
      waitForNetwork: args['wait-for-network'] === true,
      controlPlane: args['control-plane'] === true,
      certificateKey,
      force: args.force === true,
    });
    if (args.task === 'join' && args.command === 'run' && !options.joinUrl) throw usageError('run join needs --url URL of the join service');
    const dry = args.command === 'plan' || args['dry-run'] === true;
    if (args['order-only'] === true && !dry) throw usageError('--order-only applies to `plan` (or `run --dry-run`)');
    const orderOnly = dry && args['order-only'] === true;
    const taskFile = await findTaskFile(args.task, siteDir(io.cwd, args.config as string | undefined), PACKAGE_DIR, (m) => io.stderr(`warning: ${m}\n`));
    const where = { packageDir: PACKAGE_DIR, cwd: io.cwd, configFile: args.config as string | undefined, distro: args.distro as string | undefined };
    // --order-only reads nothing on the host and validates nothing: the config's distro picks the overrides.
    const loaded = orderOnly ? undefined : await loadConfig(where);
    const peeked = loaded ? { file: loaded.file, distro: loaded.config.distro.name } : await (await import('./config/load.ts')).peekConfig(where);
    for (const id of loaded?.config.ignorePreflightErrors ?? []) (options.ignorePreflightErrors as Set<string>).add(id);
    const task = await applyDistroOverrides(await loadTaskFile(taskFile), peeked.distro, PACKAGE_DIR, siteDir(io.cwd, args.config as string | undefined));
    for (const f of ['only', 'skip'] as const)
      if (f in args && list(args[f]).length === 0) throw usageError(`--${f} needs a comma-separated list of step ids`);
    const sel = { only: list(args.only), skip: list(args.skip) };
    // Preflight guards every host write: --only selects it too unless --skip names it.
    if (sel.only.length && task.steps.some((s) => s.spec.id === 'preflight') && !sel.skip.includes('preflight') && !sel.only.includes('preflight')) sel.only.push('preflight');
    const ids = new Set(task.steps.map((s) => s.spec.id));
    for (const id of [...sel.only, ...sel.skip]) if (!ids.has(id)) throw unknownStep(task.name, id, [...ids]);
    if (orderOnly || !loaded) {
      const plan = await import('./plan.ts');
      const entries = plan.orderOnly(task, sel);
      if (json) io.stdout(`${JSON.stringify({ event: 'plan', task: task.name, steps: entries })}\n`);
      else io.stdout(plan.formatPlan(task.name, entries, [`task file: ${taskFile}`, `config: ${peeked.file}`, `distro: ${peeked.distro}`]));
      return ExitCode.ok;
    }
    const { config, file } = loaded;
    options.configFile = file;
    const { makeContext, realBackends, dryRunBackends } = await import('./runtime.ts');
    const hb = backends ?? (dry ? dryRunBackends() : realBackends());
    try {
      const ctxFor = (step: string, log: import('./context.ts').Logger, signal: AbortSignal) =>
        makeContext({ config, options, backends: hb, log: redactingLogger(log, redactor), signal, packageDir: PACKAGE_DIR, step });
      if (dry) {
        const { formatPlan, planTask, planTotals } = await import('./plan.ts');
        const silent = { info() {}, warn() {} };
        if (!('planned' in hb.files) || !hb.plannedApi) throw new Error('plan needs the dry-run backends');
        const recorder = { files: hb.files as { planned: import('./host/files.ts').PlannedWrite[] }, systemd: hb.systemd as unknown as { planned: import('./host/systemd-dry-run.ts').PlannedUnitAction[] }, sh: hb.sh as unknown as { planned: string[][] }, plannedApi: hb.plannedApi };
        const entries = await planTask(task, (step, signal) => ctxFor(step, silent, signal), sel, recorder);
        if (json) io.stdout(redactor.redact(`${JSON.stringify({ event: 'plan', task: task.name, steps: entries, totals: planTotals(entries) })}\n`));
        else io.stdout(redactor.redact(formatPlan(task.name, entries, [`task file: ${taskFile}`, `config: ${file}`, `distro: ${config.distro.name}`, `node: ${config.nodeName} (${config.localAPIEndpoint.advertiseAddress})`])));
        const failed = entries.find((e) => e.error);
        return !failed ? ExitCode.ok : failed.error!.badInput ? ExitCode.badInput : ExitCode.stepFailed;
      }
      // The Kubernetes client (≈ 1 s to load) is needed a few steps in: load it while the first steps
      // wait on the host (preflight commands, etcd's start) instead of when the first API call is due.
      // Not for a worker's join: it talks to the join service and the apiserver over plain HTTPS
      // (lib/join/client.ts), and loading the client took CPU from its preflight and discovery.
      if (!(task.name === 'join' && !options.controlPlane)) void import('./k8s/client.ts').catch(() => undefined);
      const [{ runTask }, { printRunEnd, recordingSink }] = await Promise.all([import('./engine/runner.ts'), import('./run-output.ts')]);
      const rec = recordingSink(io, redactor, json);
      const result = await runTask(task, ctxFor, { ...sel, concurrent: args.concurrent === true, renderer: json ? 'silent' : 'default', sink: rec.sink });
      if (result.status !== 'done') report(result.error);
      printRunEnd(io, redactor, json, { task: task.name, ...result, events: rec.events, state: hb.state, config });
      if (result.status === 'done') return ExitCode.ok;
      return isBadInput(result.error) ? ExitCode.badInput : ExitCode.stepFailed;
    } finally {
      hb.close();
    }
  } catch (err) {
    report(err);
    return isBadInput(err) ? ExitCode.badInput : ExitCode.stepFailed;
  }
}
