/**
 * The join task's token and pin flags, read before anything else runs.
 * - The token: `--token T`, or `--token-file FILE` (first line), or the environment variable
 *   `KUBECEPTION_TOKEN` — so it need not sit in argv (and in npm's debug log). At most one of the flags.
 * - The pins: `--ca-cert-hash` may be repeated or comma-separated (kubeadm's
 *   `--discovery-token-ca-cert-hash`); a match on any pin is accepted.
 */
import { promises as fs } from 'node:fs';
import { InputError } from '../errors.ts';

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
