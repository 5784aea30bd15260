/**
 * The worker's side of kubeadm's token-based discovery, through kubeception's join service:
 *
 * 1. `GET <url>/cluster-info?token-id=<id>` over TLS that trusts nothing (transport only: any address
 *    of the cluster works: the controlPlaneEndpoint, the control-plane node running the join pod, a DNS alias). Only the token's public *id* is sent.
 *    "unknown" / "expired" / "used" answers are final (exit 2).
 * 2. The detached JWS of the answer must verify (HS256) with the token's secret: proof that the
 *    answer comes from the cluster that holds this token. Else stop (exit 2).
 * 3. Every certificate in the answer's CA data is parsed; one of them must match one of the
 *    `--ca-cert-hash` pins (SHA-256 of its SubjectPublicKeyInfo). Else stop (exit 2), naming the
 *    hashes presented. Only the pinned certificates are kept: they alone are trusted from then on.
 * Nothing from an answer reaches disk before all three pass; the token's secret never leaves the
 * worker here. It is used afterwards only against the verified apiserver, over TLS trusting only
 * the verified CA ({@link checkNodeName}, then the kubelet client certificate's CSR: lib/join/kubelet-csr.ts).
 * @see kubernetes/cmd/kubeadm/app/discovery/token/token.go (RetrieveValidatedConfigInfo)
 */
import { request } from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import { createHash, X509Certificate } from 'node:crypto';
import { InputError, KubeceptionError } from '../errors.ts';
import { withRetry } from '../util/retry.ts';
import { verifyDetached } from './jws.ts';
import { readClusterInfo } from './cluster-info.ts';
import { parseToken } from './token.ts';

/** What discovery yields: verified cluster-info. */
export interface Discovered {
  /** The apiserver URL from cluster-info (controlPlaneEndpoint when set). */
  server: string;
  /** The verified CA data, PEM (one or more certificates). */
  caPem: string;
}

/** A final refusal by the join service or the cluster (bad token, taken name): exit 2, not retried. */
export class JoinRefused extends InputError {}

/** The apiserver answered 401 to the bootstrap token after discovery accepted it. Names only the token's public id. */
export function tokenRejected(token: string): JoinRefused {
  return new JoinRefused('join-token-rejected', { what: `--token ${token.slice(0, 6)}.…`, why: 'the apiserver does not accept the token (expired or deleted since discovery)', fix: 'create a new token with `kubeception token create --print-join-command`' });
}

type Reply = { status: number; body: string; retryAfterS?: number };
const MAX_ANSWER = 256 * 1024;

/**
 * One HTTPS request (GET, or POST of `opts.json`). `ca` undefined: the server is not authenticated
 * (transport only). The answer is cut off past 256 KiB.
 */
export function call(url: URL, opts: { ca?: string; bearer?: string; timeoutMs: number; json?: object }): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const body = opts.json === undefined ? undefined : JSON.stringify(opts.json);
    const req = request(url, {
      method: body === undefined ? 'GET' : 'POST', timeout: opts.timeoutMs, rejectUnauthorized: opts.ca !== undefined, ...(opts.ca ? { ca: opts.ca } : {}),
      headers: { accept: 'application/json', ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...(opts.bearer ? { authorization: `Bearer ${opts.bearer}` } : {}) },
    }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        body += c;
        if (body.length > MAX_ANSWER) req.destroy(new Error(`answer larger than ${MAX_ANSWER} bytes`));
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, retryAfterS: Number(res.headers['retry-after']) || undefined }));
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${opts.timeoutMs} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}

const newTokenFix = 'create a new token on the control plane with `kubeception token create --print-join-command` and run the printed command';

function unreachable(url: string, err: unknown, timeoutMs: number): KubeceptionError {
  return new KubeceptionError('join-unreachable', {
    what: url,
    why: `the join service gave no usable answer within ${Math.round(timeoutMs / 1000)} s of retries (last: ${(err as Error)?.message ?? err})`,
    fix: 'check the URL (https://<controlPlaneEndpoint or the control-plane node running the join pod>:30000: the NodePort answers only there, externalTrafficPolicy Local), that the control plane runs the kubeception-join Service, and the network between the hosts',
    cause: err,
  });
}

function notJoinService(base: string, url: URL, status: number, code: string | undefined): InputError {
  return new InputError('join-not-join-service', {
    what: base,
    why: `${url.host} answered HTTP ${status}${code ? ` (${code})` : ''} to GET /cluster-info: it is not kubeception's join service (wrong port or path?)`,
    fix: 'use the join URL printed by bootstrap or `kubeception token create --print-join-command`: https://<controlPlaneEndpoint or control-plane node>:30000',
  });
}

/**
 * How often (ms) a token the service calls `not-signed-yet` is asked for again. The controller-manager's
 * bootstrapsigner signs a new token within a fraction of a second once it runs, so a join started right
 * after `token create` would otherwise sleep out the service's whole-second `Retry-After` and a backoff
 * (kubeadm polls cluster-info every 5 s for it: constants.DiscoveryRetryInterval). Four requests a
 * second stay far under the service's per-client limit (100/s).
 */
export const NOT_SIGNED_POLL_MS = 250;

/**
 * Fetches cluster-info + JWS for the token id; retries connection errors, 429 and 503 until `timeoutMs`
 * (a token not signed yet every {@link NOT_SIGNED_POLL_MS}, the others with backoff).
 */
async function fetchClusterInfo(base: string, id: string, timeoutMs: number, signal?: AbortSignal, nodeName?: string): Promise<{ kubeconfig: string; jws: string }> {
  const url = new URL(`/cluster-info?token-id=${id}${nodeName ? `&node-name=${encodeURIComponent(nodeName)}` : ''}`, base);
  const deadline = Date.now() + timeoutMs;
  try {
    return await withRetry(async () => {
      let r: Reply;
      let body: { code?: string; message?: string; kubeconfig?: unknown; jws?: unknown };
      for (;;) {
        r = await call(url, { timeoutMs: 5_000 });
        body = {};
        try {
          body = JSON.parse(r.body);
        } catch {
          /* below */
        }
        if (r.status !== 503 || body.code !== 'not-signed-yet' || Date.now() + NOT_SIGNED_POLL_MS >= deadline) break;
        await sleep(NOT_SIGNED_POLL_MS, undefined, { signal });
      }
      if (r.status === 200 && typeof body.kubeconfig === 'string' && typeof body.jws === 'string') return { kubeconfig: body.kubeconfig, jws: body.jws };
      if (body.code === 'token-expired') throw new JoinRefused('join-token-expired', { what: `--token ${id}.…`, why: body.message ?? 'the token has expired', fix: newTokenFix });
      if (body.code === 'token-unknown') throw new JoinRefused('join-token-unknown', { what: `--token ${id}.…`, why: body.message ?? 'the token is unknown', fix: newTokenFix });
      if (body.code === 'token-used') throw new JoinRefused('join-token-used', { what: `--token ${id}.…`, why: `the token has already joined ${nodeName ? 'another node' : 'a node'}, and a bootstrap token buys one node (nothing on this host was changed)`, fix: newTokenFix });
      // Any other client error is final: something answered, but not the join service (e.g. the apiserver's port).
      if (r.status >= 400 && r.status < 500 && r.status !== 429) throw notJoinService(base, url, r.status, body.code);
      if (r.status === 429 || r.status === 503) await new Promise((res) => setTimeout(res, Math.min(r.retryAfterS ?? 1, 10) * 1000));
      throw new Error(`HTTP ${r.status} from ${url.href}${body.code ? ` (${body.code})` : ''}`);
    }, { tries: 1000, delayMs: 500, backoff: 2 }, { signal, maxRetryTimeMs: timeoutMs, maxDelayMs: 8_000 });
  } catch (err) {
    if (err instanceof KubeceptionError) throw err;
    throw unreachable(base, err, timeoutMs);
  }
}

/** Every certificate of a PEM bundle. @throws InputError `join-ca-invalid` if one does not parse or there is none. */
export function parseBundle(caPem: string, base: string): X509Certificate[] {
  const blocks = caPem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  const bad = (why: string) => new InputError('join-ca-invalid', { what: `CA data of cluster-info from ${base}`, why, fix: 'check the cluster-info ConfigMap in kube-public on the control plane' });
  if (!blocks.length) throw bad('holds no certificate');
  return blocks.map((b, i) => {
    try {
      return new X509Certificate(b);
    } catch (err) {
      throw bad(`certificate ${i + 1} does not parse: ${(err as Error).message}`);
    }
  });
}

/** `sha256:<hex>` of a certificate's SubjectPublicKeyInfo (kubeadm's `--discovery-token-ca-cert-hash`). */
export const spkiHash = (c: X509Certificate) => `sha256:${createHash('sha256').update(c.publicKey.export({ type: 'spki', format: 'der' })).digest('hex')}`;

/**
 * Checks the pins and keeps only what they pin: the certificates of the bundle whose public key
 * matches a pin (kubeadm's any-of decides whether the bundle passes). The rest of a signed bundle is
 * dropped: a party that knows the token and sits on the unauthenticated discovery path could add its
 * own CA to the bundle, and whatever this returns becomes the trust for the apiserver connection, the
 * worker's `ca.crt` and the kubelet's `clientCAFile`.
 * @returns the pinned certificates as a PEM bundle (bundle order, each ending in a newline).
 * @throws InputError `join-ca-hash-mismatch` naming the hashes presented; `join-ca-invalid` (see {@link parseBundle}).
 */
export function verifyPins(caPem: string, pins: readonly string[], base: string): string {
  const certs = parseBundle(caPem, base);
  const hashes = certs.map(spkiHash);
  const want = new Set(pins.map((p) => p.toLowerCase()));
  const pinned = certs.filter((_, i) => want.has(hashes[i]!));
  if (pinned.length) return pinned.map((c) => (c.toString().endsWith('\n') ? c.toString() : `${c.toString()}\n`)).join('');
  throw new InputError('join-ca-hash-mismatch', {
    what: `--ca-cert-hash for ${base}`,
    why: `the cluster's CA hashes to ${hashes.join(', ')}, none of the pins (${pins.join(', ')}); it may not be your cluster — the token secret was not sent`,
    fix: 'copy the hash from `kubeception token create --print-join-command` on the control plane (or check the URL)',
  });
}

/**
 * Discovery: fetch, verify the signature, verify the pins.
 * @param nodeName this host's node name, sent with the token id: a token that bought *this* name is
 *   still answered (a join killed after its CSR was approved, re-run), one that bought another is not.
 * @throws JoinRefused `join-token-unknown` / `join-token-expired` / `join-token-used`; InputError `join-signature-invalid`,
 * `join-ca-hash-mismatch`, `join-ca-invalid` (all exit 2); KubeceptionError `join-unreachable`.
 */
export async function discover(base: string, token: string, pins: readonly string[], timeoutMs: number, signal?: AbortSignal, nodeName?: string): Promise<Discovered> {
  const t = parseToken(token);
  if (!t) throw new InputError('join-token-malformed', { what: '--token', why: 'not of the form [a-z0-9]{6}.[a-z0-9]{16}', fix: newTokenFix });
  const answer = await fetchClusterInfo(base, t.id, timeoutMs, signal, nodeName);
  if (!(await verifyDetached(answer.jws, answer.kubeconfig, t.id, t.secret)))
    throw new InputError('join-signature-invalid', {
      what: base,
      why: `the cluster-info answered for token ${t.id} is not signed with this token's secret: the service is not your cluster, or the token's secret part is mistyped; the token secret was not sent`,
      fix: 'check the URL and the token (`kubeception token list` on the control plane shows the ids)',
    });
  const info = readClusterInfo(answer.kubeconfig);
  if (!info) throw new InputError('join-ca-invalid', { what: `cluster-info from ${base}`, why: 'its kubeconfig has no server or no CA data', fix: 'check the cluster-info ConfigMap in kube-public' });
  return { server: info.server, caPem: verifyPins(info.caPem, pins, base) };
}
