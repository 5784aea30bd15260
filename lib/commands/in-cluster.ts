/**
 * The CLI's in-cluster commands: `serve-join` (the join service), `approve-csrs` (the CSR
 * approver) and `node-upgrade-controller` (NodeUpgradePlans), each running until SIGTERM.
 */
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { ExitCode, InputError } from '../errors.ts';
import { RESERVED_SANS_ENV } from '../constants.ts';
import type { CliIO } from '../cli-io.ts';

type Args = Record<string, unknown>;
type IO = Pick<CliIO, 'stdout' | 'stderr'>;

const usage = (why: string, fix: string) => new InputError('usage', { what: 'command line', why, fix });

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
  const [{ serveJoin }, { watchDiscoverySource }] = await Promise.all([import('../join/server.ts'), import('../join/watch-source.ts')]);
  const source = watchDiscoverySource('in-cluster', stamp(io));
  const server = await serveJoin({ listen: args.listen as string, tls: { certPem: certPem!, keyPem: keyPem! }, source, limits: rate ? { ratePoints: rate } : {}, log: stamp(io) });
  await untilSignal();
  source.stop();
  await server.close();
  return ExitCode.ok;
}

/** `kubeception approve-csrs`: the CSR approver, in-cluster; runs until SIGTERM. */
export async function approveCsrsCommand(io: IO): Promise<number> {
  const [{ runApprover }, { parseReservedSans }] = await Promise.all([import('../join/csr-approver.ts'), import('../join/serving-csr.ts')]);
  const ac = new AbortController();
  runApprover(stamp(io), 'in-cluster', ac.signal, parseReservedSans(process.env[RESERVED_SANS_ENV]));
  stamp(io)('CSR approver started');
  await untilSignal();
  ac.abort();
  return ExitCode.ok;
}

/** The agent's command from its environment variable: a JSON array of one or more non-empty strings, else undefined. Pure. */
export function parseAgentCommand(text: string | undefined): string[] | undefined {
  let v: unknown;
  try {
    v = JSON.parse(text ?? '');
  } catch {
    return undefined;
  }
  return Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'string' && x !== '') ? (v as string[]) : undefined;
}

/** `kubeception node-upgrade-controller`: the node upgrade controller, in-cluster; runs until SIGTERM. */
export async function nodeUpgradeControllerCommand(io: IO): Promise<number> {
  const [{ runNodeUpgradeController }, { AGENT_IMAGE_ENV, AGENT_SITE_DIR_ENV, AGENT_COMMAND_ENV }] = await Promise.all([import('../node-upgrade/controller.ts'), import('../../manifests/node-upgrade-controller.ts')]);
  const fromDeployment = 'run it from its Deployment (manifests/node-upgrade-controller.ts), which sets it';
  const image = process.env[AGENT_IMAGE_ENV];
  if (!image) throw usage(`node-upgrade-controller needs $${AGENT_IMAGE_ENV} (the agent Jobs' image)`, fromDeployment);
  const siteDir = process.env[AGENT_SITE_DIR_ENV];
  if (!siteDir?.startsWith('/')) throw usage(`node-upgrade-controller needs $${AGENT_SITE_DIR_ENV}, an absolute path (the agents' site directory)`, fromDeployment);
  const command = parseAgentCommand(process.env[AGENT_COMMAND_ENV]);
  if (!command) throw usage(`node-upgrade-controller needs $${AGENT_COMMAND_ENV}, a JSON array of one or more strings (the host's kubeception command)`, fromDeployment);
  const ac = new AbortController();
  const running = runNodeUpgradeController('in-cluster', ac.signal, { image, agent: { siteDir, command }, log: stamp(io) });
  stamp(io)('node upgrade controller started');
  await untilSignal();
  ac.abort();
  await running;
  return ExitCode.ok;
}
