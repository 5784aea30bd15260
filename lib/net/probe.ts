/**
 * One HTTPS GET with client-certificate auth, for health endpoints (etcd `/health`, kube-apiserver
 * `/readyz`), one plain-HTTP GET for the kubelet's loopback `/healthz`, and one plain-HTTP POST for a
 * loopback-only throw-away etcd's JSON gateway (lib/etcd/snapshot-restore.ts). The TLS material is
 * never logged.
 */
import { request as httpRequest } from 'node:http';
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

/**
 * True if `target` (an http URL; the kubelet's `http://127.0.0.1:10248/healthz`) answers 200 within
 * `timeoutMs` (default 500). Never throws: a refused connection or a timeout is false.
 */
export function httpOk(target: string, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const req = httpRequest(new URL(target), { timeout: timeoutMs }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve(false));
    req.end();
  });
}

/** One POST of a JSON `body` to `target` (an http URL on loopback). Never throws: no answer is `error`. */
export function postHttp(target: string, body: string, timeoutMs = 3_000): Promise<ProbeResult> {
  return new Promise((resolve) => {
    const headers = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
    const req = httpRequest(new URL(target), { method: 'POST', headers, timeout: timeoutMs }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', (err) => resolve({ error: err.message }));
    req.end(body);
  });
}
