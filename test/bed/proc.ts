/**
 * Process helpers for the test bed: run a command, read a PID's start time, signal only PIDs we recorded.
 * node:child_process / node:fs only.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** Result of a finished command. `code` is the exit code, or 128+signal when killed. */
export interface ExecResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  input?: string | Buffer;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Kill the command's whole process group after this many ms; the result then has code 124. */
  timeoutMs?: number;
}

const SIGNALS: Record<string, number> = { SIGHUP: 1, SIGINT: 2, SIGKILL: 9, SIGTERM: 15 };

/** Runs argv in its own process group and collects its output; never throws for a non-zero exit. */
export function run(argv: readonly string[], opts: RunOptions = {}): Promise<ExecResult> {
  return new Promise((resolve, reject) => {
    const [cmd, ...args] = argv;
    if (cmd === undefined) throw new Error('bed: run() needs a command');
    const child = spawn(cmd, args, {
      env: opts.env ?? process.env,
      cwd: opts.cwd,
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let timedOut = false;
    const timer =
      opts.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            try {
              if (child.pid) process.kill(-child.pid, 'SIGKILL');
            } catch {}
          }, opts.timeoutMs);
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.on('error', (e) => {
      if (timer) clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code, signal) => {
      if (timer) clearTimeout(timer);
      const stderr = Buffer.concat(err).toString('utf8');
      resolve({
        code: timedOut ? 124 : (code ?? 128 + (SIGNALS[signal ?? ''] ?? 0)),
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: timedOut ? `${stderr}\n[bed] killed after ${opts.timeoutMs} ms: ${argv.join(' ')}` : stderr,
      });
    });
    child.stdin.on('error', () => {});
    child.stdin.end(opts.input ?? '');
  });
}

/** Like run(), but throws with the command and its stderr on a non-zero exit; returns stdout. */
export async function runOk(argv: readonly string[], opts: RunOptions = {}): Promise<string> {
  const r = await run(argv, opts);
  if (r.code !== 0) {
    throw new Error(`bed: \`${argv.join(' ')}\` exited ${r.code}\n${r.stderr.trim() || r.stdout.trim()}`);
  }
  return r.stdout;
}

/** Start time of a PID in clock ticks since boot (field 22 of /proc/PID/stat), or undefined if gone. */
export function startTime(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
  } catch {
    return undefined;
  }
}

/** A PID we started, with its start time so that a reused PID is never signalled. */
export interface OwnedPid {
  pid: number;
  start: number;
}

export function own(pid: number): OwnedPid {
  const start = startTime(pid);
  if (start === undefined) throw new Error(`bed: process ${pid} exited before it could be recorded`);
  return { pid, start };
}

export function alive(p: OwnedPid | undefined): boolean {
  return p !== undefined && startTime(p.pid) === p.start;
}

/** Sends a signal (name or number) to an owned PID if it is still the same process. */
export function signal(p: OwnedPid | undefined, sig: NodeJS.Signals | number): void {
  if (!alive(p)) return;
  try {
    process.kill((p as OwnedPid).pid, sig);
  } catch {}
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls until fn() returns a truthy value or timeoutMs passes; returns the value or undefined. */
export async function waitFor<T>(fn: () => T | Promise<T>, timeoutMs: number, intervalMs = 100): Promise<T | undefined> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) return undefined;
    await sleep(intervalMs);
  }
}

/** Direct children of a PID (scans /proc, which works without CONFIG_PROC_CHILDREN). */
export function children(pid: number): number[] {
  const out: number[] = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) out.push(Number(e));
    } catch {}
  }
  return out;
}

export function comm(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return undefined;
  }
}
