/**
 * The worker's side of the join: discovery with CA pinning, then the token exchange.
 *
 * 1. `GET <url>/ca` over TLS *without* trusting the server (nothing secret is sent).
 * 2. SHA-256 of the CA's SubjectPublicKeyInfo must equal `--ca-cert-hash` (kubeadm's
 *    `--discovery-token-ca-cert-hash` format) — else stop: the token never leaves the worker.
 * 3. `POST <url>/join` with the token over TLS that trusts *only* the pinned CA and checks the
 *    server name — a join service with a certificate from another CA is refused before the token is sent.
 * @see https://kubernetes.io/docs/reference/access-authn-authz/bootstrap-tokens/#token-based-discovery
 */
import { request } from 'node:https';
import { InputError, KubeceptionError } from '../errors.ts';
import { spkiSha256 } from '../pki/x509.ts';
import { withRetry } from '../util/retry.ts';

/** What the join service hands a worker. */
export interface JoinAnswer {
  apiserver: string;
  caPem: string;
}

/** A join answer the service gave as final (bad token): not retried. */
export class JoinRefused extends InputError {}

type Reply = { status: number; body: string };

function call(url: URL, opts: { method: 'GET' | 'POST'; body?: string; ca?: string; timeoutMs: number }): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(url, {
      method: opts.method,
      timeout: opts.timeoutMs,
      rejectUnauthorized: opts.ca !== undefined,
      ...(opts.ca ? { ca: opts.ca } : {}),
      headers: opts.body ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(opts.body) } : {},
    }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${opts.timeoutMs} ms`)));
    req.on('error', reject);
    req.end(opts.body);
  });
}

function unreachable(url: string, err: unknown, timeoutMs: number): KubeceptionError {
  return new KubeceptionError('join-unreachable', {
    what: url,
    why: `the join service did not answer within ${Math.round(timeoutMs / 1000)} s of retries (last: ${(err as Error)?.message ?? err})`,
    fix: 'check the URL (https://<control-plane address>:30000), that the control plane runs the kubeception-join Service, and the network between the hosts',
    cause: err,
  });
}

/** Fetches the CA without trusting the server, retrying connection failures with backoff until `timeoutMs`. */
export async function fetchCa(base: string, timeoutMs: number, signal?: AbortSignal): Promise<string> {
  const url = new URL('/ca', base);
  try {
    return await withRetry(async () => {
      const r = await call(url, { method: 'GET', timeoutMs: 5_000 });
      if (r.status !== 200 || !r.body.includes('-----BEGIN CERTIFICATE-----')) throw new Error(`HTTP ${r.status} from ${url.href}`);
      return r.body;
    }, { tries: 1000, delayMs: 500, backoff: 2 }, { signal, maxRetryTimeMs: timeoutMs, maxDelayMs: 8_000 });
  } catch (err) {
    throw unreachable(base, err, timeoutMs);
  }
}

/** @throws InputError `join-ca-hash-mismatch` (exit 2) naming both hashes. */
export function verifyCaHash(caPem: string, expected: string, base: string): void {
  const actual = spkiSha256(caPem, `CA from ${base}`);
  if (actual.toLowerCase() !== expected.toLowerCase())
    throw new InputError('join-ca-hash-mismatch', {
      what: `--ca-cert-hash for ${base}`,
      why: `the join service's CA hashes to ${actual}, not ${expected}; it may not be your cluster — the token was not sent`,
      fix: 'copy the hash from `kubeception token create --print-join-command` on the control plane (or check the URL)',
    });
}

/** Sends the token over TLS pinned to `caPem`. @throws JoinRefused for a bad token; InputError `join-untrusted-service`. */
export async function requestJoin(base: string, token: string, caPem: string): Promise<JoinAnswer> {
  const url = new URL('/join', base);
  let r: Reply;
  try {
    r = await call(url, { method: 'POST', body: JSON.stringify({ token }), ca: caPem, timeoutMs: 15_000 });
  } catch (err) {
    const code = (err as { code?: string }).code ?? '';
    if (/CERT|SELF_SIGNED|SIGNATURE|ERR_TLS_CERT_ALTNAME_INVALID|UNABLE_TO/.test(code))
      throw new InputError('join-untrusted-service', {
        what: base,
        why: `the join service's certificate is not valid for the pinned cluster CA (${code}); the token was not sent`,
        fix: 'make sure the URL names the control plane, not another service; the service certificate must come from the cluster CA',
        cause: err,
      });
    throw unreachable(base, err, 15_000);
  }
  let body: { code?: string; message?: string; apiserver?: string; caPem?: string } = {};
  try {
    body = JSON.parse(r.body);
  } catch {
    /* handled below */
  }
  if (r.status === 200 && body.apiserver && body.caPem) return { apiserver: body.apiserver, caPem: body.caPem };
  const fix = 'create a new token on the control plane with `kubeception token create --print-join-command` and run the printed command';
  if (body.code === 'token-expired') throw new JoinRefused('join-token-expired', { what: '--token', why: `${body.message ?? 'the token has expired'}`, fix });
  if (body.code === 'token-unknown') throw new JoinRefused('join-token-unknown', { what: '--token', why: `${body.message ?? 'the token is unknown'}`, fix });
  if (body.code === 'token-malformed') throw new JoinRefused('join-token-malformed', { what: '--token', why: body.message ?? 'malformed token', fix });
  throw new KubeceptionError('join-service-error', { what: url.href, why: `HTTP ${r.status}: ${body.message ?? r.body.slice(0, 200)}`, fix: 'check the kubeception-join pod logs in kube-system' });
}
