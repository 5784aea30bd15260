/**
 * etcd health over TLS with client-cert auth: `GET /health` must answer `{"health":"true"}`.
 * (etcd 3.4 has no /livez or /readyz.)
 */
import { request } from 'node:https';
import { KubeceptionError } from '../errors.ts';

/** PEM material for a TLS client. Never logged. */
export interface TlsClient {
  ca: string;
  cert: string;
  key: string;
}

/**
 * One health probe of `clientUrl`.
 * @returns undefined if healthy, else a one-line reason.
 */
export function probeEtcd(clientUrl: string, tls: TlsClient, timeoutMs = 3_000): Promise<string | undefined> {
  return new Promise((resolve) => {
    const req = request(new URL('/health', clientUrl), { ...tls, timeout: timeoutMs, servername: undefined }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => {
        if (res.statusCode !== 200) return resolve(`HTTP ${res.statusCode}: ${body.trim()}`);
        try {
          const h = JSON.parse(body).health;
          resolve(h === 'true' || h === true ? undefined : `health=${h}`);
        } catch {
          resolve(`unexpected answer: ${body.slice(0, 80)}`);
        }
      });
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', (err) => resolve(err.message));
    req.end();
  });
}

/** Error for an etcd that never became healthy. */
export function etcdUnhealthy(clientUrl: string, why: string, unit: string): KubeceptionError {
  return new KubeceptionError('etcd-unhealthy', { what: `etcd at ${clientUrl}`, why: `not healthy: ${why}`, fix: `check \`journalctl -u ${unit}\` and the etcd environment file` });
}
