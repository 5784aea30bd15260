/**
 * The join task's token and pin flags, read before anything else runs.
 * - The token: the environment variable `KUBECEPTION_TOKEN` (what the printed join commands use), or
 *   `--token-file FILE` (first line), or `--token T`. At most one of the flags. `--token` works but
 *   warns: a process's command line is readable by every local user (`/proc/<pid>/cmdline`) and
 *   stays in npm's debug log; a root process's environment is readable by root only.
 * - The certificate key: `KUBECEPTION_CERTIFICATE_KEY`, or `--certificate-key K` (warns likewise).
 * - The pins: `--ca-cert-hash` may be repeated or comma-separated (kubeadm's
 *   `--discovery-token-ca-cert-hash`); a match on any pin is accepted.
 */
import { promises as fs } from 'node:fs';
import process from 'node:process';
import { SECRET_ENV } from '../constants.ts';
import { InputError } from '../errors.ts';

/**
 * Reads the join secrets from `env` and removes them from it, so no child process inherits them
 * (lib/host/sh.ts drops them from every child's environment as well). Call once, at start.
 * @returns the values as they were (`KUBECEPTION_TOKEN`, `KUBECEPTION_CERTIFICATE_KEY`), trimmed; empty is unset.
 */
export function takeSecretEnv(env: Record<string, string | undefined> = process.env): { KUBECEPTION_TOKEN?: string; KUBECEPTION_CERTIFICATE_KEY?: string } {
  const out: Record<string, string> = {};
  for (const name of Object.values(SECRET_ENV)) {
    const v = env[name]?.trim();
    delete env[name];
    if (v) out[name] = v;
  }
  return out;
}

/** Warnings (no secret bytes) for join secrets given as flags, each naming the safe way instead. */
export function argvSecretWarnings(args: Record<string, unknown>): string[] {
  const readable = 'on the command line, which every local user can read (/proc/<pid>/cmdline, ps) while the run lasts, and npm keeps in its debug log';
  const out: string[] = [];
  if (typeof args.token === 'string') out.push(`--token puts the token ${readable}; set ${SECRET_ENV.token}=… in the environment instead (a root process's environment is readable by root only), or pass --token-file FILE`);
  if (typeof args['certificate-key'] === 'string') out.push(`--certificate-key puts the key ${readable}; set ${SECRET_ENV.certificateKey}=… in the environment instead`);
  return out;
}

/** The token from the flags or the environment, or undefined. @throws InputError `usage` / `join-token-file`. */
export async function joinToken(args: Record<string, unknown>, env: Record<string, string | undefined>): Promise<string | undefined> {
  const flag = typeof args.token === 'string' ? args.token : undefined;
  const file = typeof args['token-file'] === 'string' ? args['token-file'] : undefined;
  if (flag !== undefined && file !== undefined) throw new InputError('usage', { what: '--token, --token-file', why: 'both are given', fix: 'pass the token one way only' });
  if (file === undefined) return flag ?? (env.KUBECEPTION_TOKEN?.trim() || undefined);
  try {
    return (await fs.readFile(file, 'utf8')).split('\n')[0]!.trim();
  } catch (err) {
    throw new InputError('join-token-file', { what: `--token-file ${file}`, why: `cannot be read: ${(err as Error).message}`, fix: 'give a readable file whose first line is the token', cause: err });
  }
}

/** Every `--ca-cert-hash` value in argv (repeated or comma-separated), comma-joined; undefined if none. */
export function caCertHashes(argv: readonly string[]): string | undefined {
  const out: string[] = [];
  argv.forEach((a, i) => {
    const v = a === '--ca-cert-hash' ? argv[i + 1] : a.startsWith('--ca-cert-hash=') ? a.slice('--ca-cert-hash='.length) : undefined;
    if (v !== undefined) out.push(...v.split(',').map((x) => x.trim()).filter(Boolean));
  });
  return out.length ? out.join(',') : undefined;
}
