/**
 * Commands on the host: the one wrapper around `zx`. Arguments are passed as an argv array and
 * quoted by zx, never interpolated into a shell string. A command gets this process's environment
 * minus the join secrets (`KUBECEPTION_TOKEN`, `KUBECEPTION_CERTIFICATE_KEY`).
 */
// zx is imported on the first command, so commands that run none (`--help`, `plan`) do not load it;
// `zx/core` ($, which) only: the package's index also loads its vendored globby, fs-extra, yaml
// and minimist (about 50 ms of start-up that no command here uses).
const zx = () => import('zx/core');
import { CommandError } from '../errors.ts';
import { SECRET_ENV } from '../constants.ts';

/** Result of a finished command. */
export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Options for one command. */
export interface CommandOptions {
  /** Text for stdin. */
  input?: string;
  /** Extra environment variables. */
  env?: Record<string, string>;
  /** Kill the command after this many milliseconds. Default 60 000. */
  timeoutMs?: number;
  /** Return a non-zero exit instead of throwing. */
  allowFail?: boolean;
}

/** Running commands. `read` is for queries (runs under dry-run too); `exec` changes the host. */
export interface Shell {
  /** Runs a read-only query (e.g. `etcdctl endpoint health`). @throws CommandError on non-zero exit unless `allowFail`. */
  read(argv: string[], opts?: CommandOptions): Promise<CommandResult>;
  /** Runs a command that changes the host; recorded, not run, under dry-run. */
  exec(argv: string[], opts?: CommandOptions): Promise<CommandResult>;
  /** Absolute path of `bin` on PATH (or `bin` itself if absolute and executable), else undefined. */
  which(bin: string): Promise<string | undefined>;
}

/**
 * A child's environment: this process's without the join secrets ({@link SECRET_ENV}: a command
 * never inherits the token or the certificate key), then `extra`.
 */
export function childEnv(extra: Record<string, string> = {}): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = { ...process.env };
  for (const name of Object.values(SECRET_ENV)) delete env[name];
  return { ...env, ...extra };
}

async function runArgv(argv: string[], opts: CommandOptions = {}): Promise<CommandResult> {
  const { $ } = await zx();
  const p = $({
    nothrow: true,
    quiet: true,
    input: opts.input,
    env: childEnv(opts.env),
    timeout: opts.timeoutMs ?? 60_000,
  })`${argv}`;
  let out: Awaited<typeof p>;
  try {
    out = await p;
  } catch (err) {
    throw new CommandError('command', {
      what: argv[0] ?? '(empty)',
      why: `could not run: ${(err as Error).message}`,
      fix: `check that ${argv[0]} is installed and on PATH`,
      cause: err,
    });
  }
  const res = { code: out.exitCode ?? -1, stdout: out.stdout, stderr: out.stderr };
  if (res.code !== 0 && !opts.allowFail)
    throw new CommandError('command', {
      what: argv.join(' '),
      why: `exited with ${res.code}: ${res.stderr.trim().split('\n').slice(-3).join(' | ')}`,
      fix: `run the command by hand to see the full output`,
    });
  return res;
}

async function findBin(bin: string): Promise<string | undefined> {
  const { which } = await zx();
  return (await which(bin, { nothrow: true })) ?? undefined;
}

/** Runs commands for real. */
export class RealShell implements Shell {
  read(argv: string[], opts?: CommandOptions) {
    return runArgv(argv, opts);
  }
  exec(argv: string[], opts?: CommandOptions) {
    return runArgv(argv, opts);
  }
  which(bin: string) {
    return findBin(bin);
  }
}

/** Runs queries; records commands that would change the host. */
export class DryRunShell implements Shell {
  readonly planned: string[][] = [];
  read(argv: string[], opts?: CommandOptions) {
    return runArgv(argv, opts);
  }
  async exec(argv: string[]): Promise<CommandResult> {
    this.planned.push(argv);
    return { code: 0, stdout: '', stderr: '' };
  }
  which(bin: string) {
    return findBin(bin);
  }
}

/** A process {@link startProcess} started. */
export interface RunningProcess {
  /** The last `bytes` of its stdout and stderr, interleaved as they came. */
  output(bytes?: number): string;
  /** True once it exited (by itself or by {@link RunningProcess.stop}). */
  exited(): boolean;
  /** SIGTERM, then SIGKILL after `graceMs` (default 5 000); resolves when it is gone. Safe to call twice. */
  stop(graceMs?: number): Promise<void>;
}

/**
 * Starts a long-running process (e.g. a throw-away etcd) in the background, with this process's
 * environment minus the join secrets and the names in `dropEnv`, then `env`. Not recorded under
 * dry-run: callers start one only for a read (a test restore in a scratch directory) and stop it
 * before they return.
 */
export async function startProcess(argv: string[], opts: { env?: Record<string, string>; dropEnv?: (name: string) => boolean } = {}): Promise<RunningProcess> {
  const { $ } = await zx();
  const env = childEnv(opts.env);
  for (const name of Object.keys(env)) if (opts.dropEnv?.(name) && !(opts.env && name in opts.env)) delete env[name];
  const p = $({ nothrow: true, quiet: true, env })`${argv}`;
  let out = '';
  let done = false;
  const append = (c: Buffer) => {
    out = (out + c.toString()).slice(-65_536);
  };
  p.stdout.on('data', append);
  p.stderr.on('data', append);
  const finished = p.then(() => {
    done = true;
  }, () => {
    done = true;
  });
  return {
    output: (bytes = 4_096) => out.slice(-bytes),
    exited: () => done,
    async stop(graceMs = 5_000) {
      if (done) return;
      await p.kill('SIGTERM').catch(() => undefined);
      const timer = setTimeout(() => void p.kill('SIGKILL').catch(() => undefined), graceMs);
      await finished;
      clearTimeout(timer);
    },
  };
}
