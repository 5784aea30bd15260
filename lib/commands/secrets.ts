/**
 * `kubeception secrets rotate-key [--output json]` on the control-plane node that ran `run bootstrap`:
 * a new encryption-at-rest key for Secrets, rolled in without a gap in service
 * (lib/steps/self-hosted/secrets-encryption.ts `rotateEncryptionKey`). One line per phase (`--output
 * json`: one JSON object each, then `{ event: 'rotated', writtenWith }`); key names only, never key bytes.
 * @see https://kubernetes.io/docs/tasks/administer-cluster/encrypt-data/#rotating-a-decryption-key
 */
import { ExitCode, InputError } from '../errors.ts';
import { makeContext, realBackends } from '../runtime.ts';
import { runOptions } from '../run-options.ts';
import type { ResolvedConfig } from '../types.ts';

interface IO {
  stdout: (s: string) => void;
  stderr: (s: string) => void;
}

/** `kubeception secrets <sub>`. @returns the exit code. @throws InputError `usage` for another subcommand. */
export async function secretsCommand(sub: string | undefined, args: Record<string, unknown>, config: ResolvedConfig, packageDir: string, io: IO): Promise<number> {
  if (sub !== 'rotate-key') throw new InputError('usage', { what: `secrets ${sub ?? ''}`.trim(), why: 'unknown secrets subcommand', fix: 'use `kubeception secrets rotate-key`' });
  const json = args.output === 'json';
  const hb = realBackends();
  const ctx = makeContext({ config, options: runOptions({ ignorePreflightErrors: new Set(), addSecret: () => {} }), backends: hb, log: { info: (m) => io.stderr(`${m}\n`), warn: (m) => io.stderr(`warning: ${m}\n`) }, signal: new AbortController().signal, packageDir, step: 'secrets' });
  try {
    const { rotateEncryptionKey } = await import('../steps/self-hosted/secrets-encryption.ts');
    const writtenWith = await rotateEncryptionKey(ctx, (l) => io.stdout(json ? `${JSON.stringify({ event: 'rotate-phase', ...l })}\n` : `[rotate-key] ${l.phase}: ${l.detail} (${(l.ms / 1000).toFixed(1)} s)\n`));
    io.stdout(json ? `${JSON.stringify({ event: 'rotated', writtenWith })}\n` : `Every Secret is now written with ${writtenWith}; the previous key is gone from the file (etcd snapshots taken before keep it in their PKI part).\n`);
    return ExitCode.ok;
  } finally {
    hb.close();
  }
}
