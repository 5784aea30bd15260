/**
 * etcd health over TLS with client-cert auth, through the v3 gateway's Maintenance/Status: the member
 * answers and knows a leader, with no alarms or errors. Not `GET /health`: on etcd 3.4 that sends a
 * quorum read through raft, which appends to the WAL — a probe must not change etcd's data.
 * (etcd 3.4 has no /livez or /readyz.)
 */
import { KubeceptionError } from '../errors.ts';
import { probeHttps, type TlsClient } from '../net/probe.ts';

/**
 * One health probe of `clientUrl`.
 * @returns undefined if healthy, else a one-line reason.
 */
export async function probeEtcd(clientUrl: string, tls: TlsClient, timeoutMs = 3_000): Promise<string | undefined> {
  const r = await probeHttps(new URL('/v3/maintenance/status', clientUrl).href, tls, timeoutMs, '{}');
  if ('error' in r) return r.error;
  if (r.status !== 200) return `HTTP ${r.status}: ${r.body.trim().slice(0, 120)}`;
  let s: { leader?: string; errors?: string[] };
  try {
    s = JSON.parse(r.body);
  } catch {
    return `unexpected answer: ${r.body.slice(0, 80)}`;
  }
  if (!s.leader || s.leader === '0') return 'no leader';
  if (s.errors?.length) return s.errors.join('; ');
  return undefined;
}

/** Error for an etcd that never became healthy. */
export function etcdUnhealthy(clientUrl: string, why: string, unit: string): KubeceptionError {
  return new KubeceptionError('etcd-unhealthy', { what: `etcd at ${clientUrl}`, why: `not healthy: ${why}`, fix: `check \`journalctl -u ${unit}\` and the etcd environment file` });
}
