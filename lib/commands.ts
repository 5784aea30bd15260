/**
 * The CLI's non-task commands: `token create|list|delete` (talks to the final apiserver with
 * admin.conf), `serve-join` (the in-cluster join service) and `approve-csrs` (the in-cluster CSR
 * approver).
 */
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { ExitCode, InputError } from './errors.ts';
import { RealFiles } from './host/files.ts';
import { cluster } from './k8s/apiserver.ts';
import { MAX_TOKEN_TTL_MS, parseDuration, remainingMs } from './join/token.ts';
import { caCertHash, createToken, deleteToken, joinCommand, syncTokenIndex } from './join/tokens-api.ts';
import { readIdentities } from './join/node-identities.ts';
import type { Redactor } from './events.ts';
import type { ResolvedConfig } from './types.ts';

type Args = Record<string, unknown>;
interface IO {
  stdout: (s: string) => void;
  stderr: (s: string) => void;
}

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

/**
 * Resolves on SIGTERM or SIGINT. Keeps the process alive until then: signal listeners alone do not,
 * and a daemon whose only work is a watch (the CSR approver) would otherwise exit with code 13
 * (top-level await never settled) whenever its connections are down and only unref'd retry timers
 * remain — seen on the bed while an apiserver rolled.
 */
export const untilSignal = () => new Promise<void>((resolve) => {
  const alive = setInterval(() => undefined, 3_600_000);
  const done = () => {
    clearInterval(alive);
    resolve();
  };
  process.once('SIGTERM', done);
  process.once('SIGINT', done);
});
const stamp = (io: IO) => (l: string) => io.stdout(`${new Date().toISOString()} ${l}\n`);

/** `kubeception serve-join --listen HOST:PORT --tls-dir DIR [--rate-limit N]`: runs until SIGTERM. */
export async function serveJoinCommand(args: Args, io: IO): Promise<number> {
  for (const f of ['listen', 'tls-dir']) if (typeof args[f] !== 'string') throw usage(`serve-join needs --${f}`, 'see kubeception --help');
  const rate = args['rate-limit'] === undefined ? undefined : Number(args['rate-limit']);
  if (rate !== undefined && !(Number.isInteger(rate) && rate > 0)) throw usage('--rate-limit must be a positive integer (requests per second per client)', 'e.g. --rate-limit 100');
  const dir = args['tls-dir'] as string;
  const [certPem, keyPem] = await Promise.all(['tls.crt', 'tls.key'].map((f) => fs.readFile(join(dir, f), 'utf8')));
  // Loaded only here: the CLI's other commands start without the server's libraries.
  const [{ serveJoin }, { watchDiscoverySource }] = await Promise.all([import('./join/server.ts'), import('./join/watch-source.ts')]);
  const source = watchDiscoverySource('in-cluster', stamp(io));
  const server = await serveJoin({ listen: args.listen as string, tls: { certPem: certPem!, keyPem: keyPem! }, source, limits: rate ? { ratePoints: rate } : {}, log: stamp(io) });
  await untilSignal();
  source.stop();
  await server.close();
  return ExitCode.ok;
}

/** `kubeception approve-csrs`: the CSR approver, in-cluster; runs until SIGTERM. */
export async function approveCsrsCommand(io: IO): Promise<number> {
  const { runApprover } = await import('./join/csr-approver.ts');
  const ac = new AbortController();
  runApprover(stamp(io), 'in-cluster', ac.signal);
  stamp(io)('CSR approver started');
  await untilSignal();
  ac.abort();
  return ExitCode.ok;
}
