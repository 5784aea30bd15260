/**
 * One HTTPS GET with client-certificate auth, for health endpoints (etcd `/health`, kube-apiserver
 * `/readyz`). The TLS material is never logged.
 */
import { request } from 'node:https';

/** PEM material for a TLS client. */
export interface TlsClient {
  ca: string;
  cert: string;
  key: string;
  /** Name the server's certificate is checked against (and SNI) instead of the URL's host. */
  servername?: string;
}

/** Result of {@link probeHttps}: the HTTP status and body, or `error` if no answer came. */
export type ProbeResult = { status: number; body: string } | { error: string };

/** One request to `target` (an https URL; GET, or POST when `body` is given). Never throws. */
export function probeHttps(target: string, tls: TlsClient, timeoutMs = 3_000, body?: string): Promise<ProbeResult> {
  return new Promise((resolve) => {
    const method = body === undefined ? 'GET' : 'POST';
    const headers = body === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
    const req = request(new URL(target), { ...tls, method, headers, timeout: timeoutMs }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', (err) => resolve({ error: err.message }));
    req.end(body);
  });
}
