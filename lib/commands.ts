/**
 * The CLI's non-task commands: `token create|list` (talks to the final apiserver with admin.conf)
 * and `serve-join` (the in-cluster join service).
 */
import { ExitCode, InputError } from './errors.ts';
import { RealFiles } from './host/files.ts';
import { cluster } from './k8s/apiserver.ts';
import { serveJoin } from './join/server.ts';
import { parseDuration, remainingMs } from './join/token.ts';
import { caCertHash, createToken, joinCommand, listTokens } from './join/tokens-api.ts';
import type { Redactor } from './events.ts';
import type { ResolvedConfig } from './types.ts';

type Args = Record<string, unknown>;
interface IO {
  stdout: (s: string) => void;
  stderr: (s: string) => void;
}

const usage = (why: string, fix: string) => new InputError('usage', { what: 'command line', why, fix });

/** `kubeception token create|list`. */
export async function tokenCommand(sub: string | undefined, args: Args, config: ResolvedConfig, io: IO, redactor: Redactor): Promise<number> {
  const files = new RealFiles();
  const api = await cluster({ files, config }, 'final');
  if (sub === 'list') {
    const now = new Date();
    if (args.output === 'json') {
      for (const t of await listTokens(api)) io.stdout(`${JSON.stringify({ id: t.id, expiration: t.expiration ?? null, usages: t.usages, groups: t.groups, description: t.description })}\n`);
      return ExitCode.ok;
    }
    io.stdout(`${'TOKEN ID'.padEnd(10)}${'TTL'.padEnd(10)}${'EXPIRES'.padEnd(22)}USAGES / DESCRIPTION\n`);
    for (const t of await listTokens(api)) {
      const left = remainingMs(t, now);
      const ttl = left === Number.POSITIVE_INFINITY ? '<forever>' : left <= 0 ? '<expired>' : `${Math.floor(left / 3_600_000)}h${Math.floor((left % 3_600_000) / 60_000)}m`;
      io.stdout(`${t.id.padEnd(10)}${ttl.padEnd(10)}${(t.expiration ?? '-').padEnd(22)}${t.usages.join(',')} / ${t.description}\n`);
    }
    return ExitCode.ok;
  }
  if (sub !== 'create') throw usage(`token needs a subcommand, not "${sub ?? ''}"`, 'use `kubeception token create` or `kubeception token list`');
  const ttlMs = parseDuration(String(args.ttl ?? '24h'));
  if (!ttlMs) throw usage(`--ttl ${args.ttl} is not a duration`, 'use e.g. --ttl 24h or --ttl 90m');
  const token = await createToken(api, ttlMs, typeof args.description === 'string' ? args.description : 'created by kubeception token create');
  redactor.add(token);
  io.stdout(`${args['print-join-command'] ? joinCommand(config, token, await caCertHash(config, files)) : token}\n`);
  return ExitCode.ok;
}

/** `kubeception serve-join`: runs until SIGTERM. */
export async function serveJoinCommand(args: Args, io: IO): Promise<number> {
  for (const f of ['listen', 'tls-dir', 'apiserver']) if (typeof args[f] !== 'string') throw usage(`serve-join needs --${f}`, 'see kubeception --help');
  const close = await serveJoin({ listen: args.listen as string, tlsDir: args['tls-dir'] as string, apiserver: args.apiserver as string, log: (l) => io.stdout(`${new Date().toISOString()} ${l}\n`) });
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  await close();
  return ExitCode.ok;
}
