/**
 * `kubeception token create|list|delete`: bootstrap tokens, through the final apiserver with
 * admin.conf.
 */
import { RealFiles } from '../host/files.ts';
import { ExitCode, InputError } from '../errors.ts';
import { cluster } from '../k8s/apiserver.ts';
import { MAX_TOKEN_TTL_MS, parseDuration, remainingMs } from '../join/token.ts';
import { caCertHash, createToken, deleteToken, joinCommand, syncTokenIndex } from '../join/tokens-api.ts';
import { readIdentities } from '../join/node-identities.ts';
import type { CliIO } from '../cli-io.ts';
import type { Redactor } from '../engine/events.ts';
import type { ResolvedConfig } from '../types.ts';

type Args = Record<string, unknown>;
type IO = Pick<CliIO, 'stdout' | 'stderr'>;

const usage = (why: string, fix: string) => new InputError('usage', { what: 'command line', why, fix });
const TOKEN_USAGE = 'use `kubeception token create [--ttl 24h] [--print-join-command]`, `kubeception token list` or `kubeception token delete ID`';

/** `kubeception token create|list|delete`. Output never holds a token secret except `create`'s, on purpose. */
export async function tokenCommand(sub: string | undefined, args: Args, config: ResolvedConfig, io: IO, redactor: Redactor): Promise<number> {
  const files = new RealFiles();
  if (sub !== 'list' && sub !== 'create' && sub !== 'delete') throw usage(`token needs a subcommand, not "${sub ?? ''}"`, TOKEN_USAGE);
  const id = Array.isArray(args._) ? String(args._[2] ?? '') : '';
  if (sub === 'delete' && !/^[a-z0-9]{6}$/.test(id.split('.')[0] ?? '')) throw usage(`token delete needs a token id ([a-z0-9]{6}), not "${id.slice(0, 6)}"`, TOKEN_USAGE);
  const ttlMs = sub === 'create' ? parseDuration(String(args.ttl ?? '24h')) : 1;
  if (!ttlMs) throw usage(`--ttl ${args.ttl} is not a duration`, 'use e.g. --ttl 24h or --ttl 90m');
  if (ttlMs > MAX_TOKEN_TTL_MS) throw usage(`--ttl ${args.ttl} is more than the maximum 8760h (a year) for a bootstrap token`, 'use e.g. --ttl 24h (the default); create a new token when it expires');
  const api = await cluster({ files, config }, 'final');
  if (sub === 'delete') {
    const gone = await deleteToken(api, id.split('.')[0]!);
    io.stdout(`bootstrap token "${id.split('.')[0]}" ${gone ? 'deleted' : 'not found (index entry removed)'}\n`);
    return gone ? ExitCode.ok : ExitCode.stepFailed;
  }
  if (sub === 'list') {
    const now = new Date();
    const [tokens, { tokens: bought }] = await Promise.all([syncTokenIndex(api), readIdentities(api)]);
    // joinedNode: the node the token bought (a token buys one: lib/join/node-identities.ts).
    if (args.output === 'json') {
      for (const t of tokens) io.stdout(`${JSON.stringify({ id: t.id, expiration: t.expiration ?? null, usages: t.usages, groups: t.groups, description: t.description, joinedNode: bought.get(t.id)?.node ?? null })}\n`);
      return ExitCode.ok;
    }
    io.stdout(`${'TOKEN ID'.padEnd(10)}${'TTL'.padEnd(10)}${'EXPIRES'.padEnd(22)}${'JOINED NODE'.padEnd(20)}USAGES / DESCRIPTION\n`);
    for (const t of tokens) {
      const left = remainingMs(t, now);
      const ttl = left === Number.POSITIVE_INFINITY ? '<forever>' : left <= 0 ? '<expired>' : `${Math.floor(left / 3_600_000)}h${Math.floor((left % 3_600_000) / 60_000)}m`;
      io.stdout(`${t.id.padEnd(10)}${ttl.padEnd(10)}${(t.expiration ?? '-').padEnd(22)}${(bought.get(t.id)?.node ?? '<none>').padEnd(20)}${t.usages.join(',')} / ${t.description}\n`);
    }
    return ExitCode.ok;
  }
  const token = await createToken(api, ttlMs, typeof args.description === 'string' ? args.description : 'created by kubeception token create');
  redactor.add(token);
  io.stdout(`${args['print-join-command'] ? joinCommand(config, token, await caCertHash(config, files)) : token}\n`);
  return ExitCode.ok;
}
