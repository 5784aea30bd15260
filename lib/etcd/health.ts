/**
 * etcd health over TLS with client-cert auth: `GET /health` must answer `{"health":"true"}`.
 * (etcd 3.4 has no /livez or /readyz.)
 */
import { KubeceptionError } from '../errors.ts';
import { probeHttps, type TlsClient } from '../net/probe.ts';

/**
 * One health probe of `clientUrl`.
 * @returns undefined if healthy, else a one-line reason.
 */
export async function probeEtcd(clientUrl: string, tls: TlsClient, timeoutMs = 3_000): Promise<string | undefined> {
  const r = await probeHttps(new URL('/health', clientUrl).href, tls, timeoutMs);
  if ('error' in r) return r.error;
  if (r.status !== 200) return `HTTP ${r.status}: ${r.body.trim()}`;
  try {
    const h = JSON.parse(r.body).health;
    return h === 'true' || h === true ? undefined : `health=${h}`;
  } catch {
    return `unexpected answer: ${r.body.slice(0, 80)}`;
  }
}

/** Error for an etcd that never became healthy. */
export function etcdUnhealthy(clientUrl: string, why: string, unit: string): KubeceptionError {
  return new KubeceptionError('etcd-unhealthy', { what: `etcd at ${clientUrl}`, why: `not healthy: ${why}`, fix: `check \`journalctl -u ${unit}\` and the etcd environment file` });
}
