/**
 * The join service (`kubeception serve-join`), run inside the cluster as the kubeception-join
 * Deployment behind NodePort 30000. HTTPS with a certificate from the cluster CA.
 *
 * - `GET /ca` — the cluster CA (PEM). Public: the worker pins it by its SPKI hash before trusting it.
 * - `POST /join` `{"token":"<id>.<secret>"}` — checks the bootstrap token against its Secret and answers
 *   `{ apiserver, caPem }`; or 400 `token-malformed`, 401 `token-unknown` / `token-expired` (final
 *   answers: the client does not retry them).
 * - `GET /healthz` — `ok`.
 * Never logs a token's secret part (only its public id). Bodies are capped at 4 KiB.
 */
import { createServer } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { Cluster } from '../k8s/client.ts';
import { checkToken, parseToken } from './token.ts';

/** Options of {@link serveJoin}. */
export interface JoinServerOptions {
  /** `host:port` to listen on, e.g. `0.0.0.0:8443`. */
  listen: string;
  /** Directory with tls.crt, tls.key and ca.crt (the mounted Secret). */
  tlsDir: string;
  /** The final apiserver URL handed to workers. */
  apiserver: string;
  /** Reads a token Secret by name (default: the pod's service account, in-cluster). */
  readSecret?: (name: string) => Promise<{ type?: string; data?: Record<string, string> } | undefined>;
  log?: (line: string) => void;
}

const MAX_BODY = 4096;

function send(res: ServerResponse, status: number, body: unknown) {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, { 'content-type': typeof body === 'string' ? 'text/plain' : 'application/json', 'cache-control': 'no-store' });
  res.end(text);
}

async function readBody(req: IncomingMessage): Promise<string | undefined> {
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > MAX_BODY) return undefined;
    chunks.push(c as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Starts the server. @returns a function that closes it. */
export async function serveJoin(opts: JoinServerOptions): Promise<() => Promise<void>> {
  const [cert, key, ca] = await Promise.all(['tls.crt', 'tls.key', 'ca.crt'].map((f) => fs.readFile(join(opts.tlsDir, f), 'utf8')));
  const log = opts.log ?? ((l: string) => console.log(`${new Date().toISOString()} ${l}`));
  let cluster: Cluster | undefined;
  const readSecret = opts.readSecret ?? (async (name: string) => {
    cluster ??= new Cluster('in-cluster', 'service account');
    return cluster.read({ apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: 'kube-system' } });
  });

  const server = createServer({ cert, key, minVersion: 'TLSv1.2' }, async (req, res) => {
    const peer = req.socket.remoteAddress ?? '?';
    try {
      if (req.method === 'GET' && req.url === '/healthz') return send(res, 200, 'ok');
      if (req.method === 'GET' && req.url === '/ca') return send(res, 200, ca);
      if (req.method !== 'POST' || req.url !== '/join') return send(res, 404, { code: 'not-found' });
      const body = await readBody(req);
      if (body === undefined) return send(res, 413, { code: 'too-large' });
      let token: unknown;
      try {
        token = JSON.parse(body).token;
      } catch {
        token = undefined;
      }
      const parsed = typeof token === 'string' ? parseToken(token) : undefined;
      if (!parsed) {
        log(`join from ${peer}: malformed token`);
        return send(res, 400, { code: 'token-malformed', message: 'the token is not of the form [a-z0-9]{6}.[a-z0-9]{16}' });
      }
      const verdict = checkToken(token as string, await readSecret(`bootstrap-token-${parsed.id}`), new Date());
      log(`join from ${peer}: token ${parsed.id} ${verdict ?? 'accepted'}`);
      if (verdict === 'expired') return send(res, 401, { code: 'token-expired', message: `token ${parsed.id} has expired` });
      if (verdict === 'unknown') return send(res, 401, { code: 'token-unknown', message: `token ${parsed.id} is not known to the cluster (deleted, cleaned up after expiry, or mistyped)` });
      return send(res, 200, { apiserver: opts.apiserver, caPem: ca });
    } catch (err) {
      log(`join from ${peer}: internal error: ${(err as Error).message.split('\n')[0]}`);
      return send(res, 500, { code: 'internal', message: 'the join service could not check the token; see its logs' });
    }
  });
  const [host, port] = splitListen(opts.listen);
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, host, resolve));
  log(`join service listening on ${opts.listen}, apiserver ${opts.apiserver}`);
  return () => new Promise((resolve) => server.close(() => resolve()));
}

function splitListen(listen: string): [string, number] {
  const i = listen.lastIndexOf(':');
  return [listen.slice(0, i).replace(/^\[|\]$/g, '') || '0.0.0.0', Number(listen.slice(i + 1))];
}
