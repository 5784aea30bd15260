/**
 * The join service (`kubeception serve-join`): kubeadm's token discovery over HTTPS, run in
 * kube-system behind NodePort 30000. It holds no secret: it serves public data from a watch-backed
 * cache (the kube-public cluster-info ConfigMap with the bootstrapsigner's signatures, kubeception's
 * token index and its node identity record), never reads the apiserver per request, and never sees a
 * token secret.
 *
 * - `GET /cluster-info?token-id=<id>` → 200 `{ kubeconfig, jws }` (the cluster-info kubeconfig and its
 *   detached JWS for that token; the worker verifies both); 400 `token-id-malformed`; 404
 *   `token-unknown`; 409 `token-used` (the token already bought its one node, and it is not the
 *   `node-name` the request names: see
 *   lib/join/node-identities.ts); 410 `token-expired`; 503 `not-signed-yet` / `not-ready` with `Retry-After`.
 * - `GET /healthz` → 200 `ok` while the process serves (liveness).
 * - `GET /readyz` → 200 once the cache holds cluster-info and the token index, else 503 `not-ready`
 *   (the pod's readiness: the Service sends no worker to a pod that would answer 503).
 * - 429 `rate-limited` with `Retry-After` beyond the per-client limit; 405/404 otherwise; 413 (and
 *   the connection closed) for any request with a body, 431 (closed) for oversized headers; slow or
 *   idle connections are cut off; at most `maxConnectionsPerClient` open connections per source
 *   address and `maxConnections` in all (see {@link ServerLimits}).
 *
 * Client addresses are real only when nothing on the way rewrites them: the Service uses
 * `externalTrafficPolicy: Local` (manifests/join-service.ts), so kube-proxy does not SNAT NodePort
 * traffic and each worker is counted as itself, not as the node it entered through.
 *
 * The serving certificate is transport only (self-signed, not from the cluster CA): authenticity
 * comes from the signature and the CA pin the worker checks.
 */
import { createServer } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { rateLimiter } from './rate-limit.ts';
import { verdict, type TokenIndex } from './token-index.ts';
import type { Identities } from './node-identities.ts';

/** Where the answers come from (a watch-backed cache in the pod; a fake in unit tests). */
export interface DiscoverySource {
  /** False until the first list of both objects is in. */
  ready(): boolean;
  clusterInfo(): { kubeconfig: string; jws: Record<string, string> } | undefined;
  index(): TokenIndex;
  /** The node identity record: which token ids have bought their node. */
  identities(): Identities;
}

/** Connection limits; all times in milliseconds. Defaults in {@link DEFAULT_LIMITS}. */
export interface ServerLimits {
  /** Whole request headers must arrive within this (Node `headersTimeout`). */
  headersTimeoutMs: number;
  /** Whole request within this (Node `requestTimeout`). */
  requestTimeoutMs: number;
  /** Idle keep-alive connections closed after this. */
  keepAliveTimeoutMs: number;
  /** TLS handshake within this. */
  handshakeTimeoutMs: number;
  /**
   * Concurrent connections in all; at the cap a new TCP connection is closed at once (before any
   * TLS), so the client sees the connection reset or closed and retries.
   */
  maxConnections: number;
  /**
   * Concurrent connections from one source address; a connection beyond it is closed at once (before
   * TLS) and logged. Keeps one host from holding the whole {@link maxConnections} with slow
   * connections. Behind a proxy that hides client addresses (a TCP load balancer) every client is
   * that proxy's address: size it for the concurrent joins through it.
   */
  maxConnectionsPerClient: number;
  /** Largest request header block, bytes. */
  maxHeaderBytes: number;
  /** Requests per client address per {@link rateWindowS}. */
  ratePoints: number;
  rateWindowS: number;
}

export const DEFAULT_LIMITS: ServerLimits = {
  headersTimeoutMs: 5_000, requestTimeoutMs: 10_000, keepAliveTimeoutMs: 5_000, handshakeTimeoutMs: 5_000,
  maxConnections: 512, maxConnectionsPerClient: 32, maxHeaderBytes: 8_192, ratePoints: 100, rateWindowS: 1,
};

/** Options of {@link serveJoin}. */
export interface JoinServerOptions {
  /** `host:port`, e.g. `0.0.0.0:8443` (port 0: any free port, see the returned `port`). */
  listen: string;
  tls: { certPem: string; keyPem: string };
  source: DiscoverySource;
  limits?: Partial<ServerLimits>;
  log?: (line: string) => void;
  now?: () => number;
}

const ID_RE = /^[a-z0-9]{6}$/;
const NOT_READY = { status: 503, body: { code: 'not-ready', message: 'the join service has not read cluster-info yet' }, headers: { 'retry-after': '1' } };

function send(res: ServerResponse, status: number, body: object, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers });
  res.end(JSON.stringify(body));
}

/** The answer for one request (after the rate limit). Pure apart from `log`. */
export function answer(req: Pick<IncomingMessage, 'method' | 'url'>, source: DiscoverySource, now: number): { status: number; body: object; headers?: Record<string, string> } {
  const url = new URL(req.url ?? '/', 'https://join.invalid');
  if (url.pathname === '/healthz') return { status: 200, body: { status: 'ok' } };
  if (url.pathname === '/readyz') return source.ready() && source.clusterInfo() ? { status: 200, body: { status: 'ok' } } : NOT_READY;
  if (url.pathname !== '/cluster-info') return { status: 404, body: { code: 'not-found', message: 'see GET /cluster-info?token-id=<id>' } };
  if (req.method !== 'GET') return { status: 405, body: { code: 'method-not-allowed' }, headers: { allow: 'GET' } };
  const id = url.searchParams.get('token-id') ?? '';
  if (!ID_RE.test(id)) return { status: 400, body: { code: 'token-id-malformed', message: 'token-id must be the 6 characters [a-z0-9] before the dot of the token' } };
  const info = source.clusterInfo();
  if (!source.ready() || !info) return NOT_READY;
  const v = verdict(id, source.index(), info.jws, now);
  // Only a token that still works is told it is used (an unknown or expired one keeps its answer), and
  // not when it bought the very node asking (`node-name`): that is a join re-run after its CSR was approved.
  const bought = source.identities().tokens.get(id)?.node;
  if ((v === 'signed' || v === 'not-signed-yet') && bought !== undefined && bought !== url.searchParams.get('node-name'))
    return { status: 409, body: { code: 'token-used', message: `token ${id} has already joined a node: a bootstrap token buys one node` } };
  switch (v) {
    case 'signed':
      return { status: 200, body: { kubeconfig: info.kubeconfig, jws: info.jws[id] } };
    case 'expired':
      return { status: 410, body: { code: 'token-expired', message: `token ${id} has expired` } };
    case 'not-signed-yet':
      return { status: 503, body: { code: 'not-signed-yet', message: `token ${id} is not signed yet (the controller-manager's bootstrapsigner signs new tokens within seconds)` }, headers: { 'retry-after': '1' } };
    default:
      return { status: 404, body: { code: 'token-unknown', message: `token ${id} is not known to the cluster (deleted, cleaned up after expiry, or mistyped)` } };
  }
}

/** Starts the server. @returns its port and a function that closes it. */
export async function serveJoin(opts: JoinServerOptions): Promise<{ port: number; close: () => Promise<void> }> {
  const lim = { ...DEFAULT_LIMITS, ...opts.limits };
  const log = opts.log ?? ((l: string) => console.log(`${new Date().toISOString()} ${l}`));
  const now = opts.now ?? Date.now;
  const limit = rateLimiter(lim.ratePoints, lim.rateWindowS);
  const server = createServer({
    cert: opts.tls.certPem, key: opts.tls.keyPem, minVersion: 'TLSv1.2',
    handshakeTimeout: lim.handshakeTimeoutMs, maxHeaderSize: lim.maxHeaderBytes,
    headersTimeout: lim.headersTimeoutMs, requestTimeout: lim.requestTimeoutMs, keepAliveTimeout: lim.keepAliveTimeoutMs,
    connectionsCheckingInterval: Math.min(1_000, lim.headersTimeoutMs),
  }, async (req, res) => {
    const peer = req.socket.remoteAddress ?? '?';
    if ((req.headers['content-length'] && req.headers['content-length'] !== '0') || req.headers['transfer-encoding']) {
      res.setHeader('connection', 'close');
      send(res, 413, { code: 'body-not-allowed', message: 'requests carry no body' });
      req.socket.destroySoon();
      return;
    }
    const rl = await limit(peer);
    if (!rl.ok) return send(res, 429, { code: 'rate-limited', message: `more than ${lim.ratePoints} requests in ${lim.rateWindowS} s` }, { 'retry-after': String(rl.retryAfterS) });
    const a = answer(req, opts.source, now());
    if (a.status !== 200) log(`${req.method} ${(req.url ?? '').slice(0, 80)} from ${peer}: ${a.status} ${(a.body as { code?: string }).code ?? ''}`);
    send(res, a.status, a.body, a.headers);
  });
  server.maxConnections = lim.maxConnections;
  server.timeout = lim.requestTimeoutMs;
  server.on('tlsClientError', () => undefined);
  // Per source address: count open TCP connections; one beyond the cap is closed before TLS.
  const open = new Map<string, number>();
  let refusedLogged = 0;
  server.on('connection', (socket: import('node:net').Socket) => {
    const peer = socket.remoteAddress ?? '?';
    const n = (open.get(peer) ?? 0) + 1;
    if (n > lim.maxConnectionsPerClient) {
      // One log line per second at most: a flood must not become a log flood.
      if (Date.now() - refusedLogged > 1_000) log(`connection from ${peer} closed: ${lim.maxConnectionsPerClient} connections from it are open (maxConnectionsPerClient)`);
      refusedLogged = Date.now();
      socket.destroy();
      return;
    }
    open.set(peer, n);
    socket.once('close', () => {
      const left = (open.get(peer) ?? 1) - 1;
      if (left > 0) open.set(peer, left);
      else open.delete(peer);
    });
  });
  const [host, port] = splitListen(opts.listen);
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, host, resolve));
  const bound = (server.address() as { port: number }).port;
  log(`join service listening on ${host}:${bound}`);
  return {
    port: bound,
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

function splitListen(listen: string): [string, number] {
  const i = listen.lastIndexOf(':');
  return [listen.slice(0, i).replace(/^\[|\]$/g, '') || '0.0.0.0', Number(listen.slice(i + 1))];
}
