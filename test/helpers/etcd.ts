/**
 * etcdctl (v3 API) inside a bed control-plane host, against its local etcd member with kubeadm's
 * healthcheck client certificate: the member list and per-endpoint health, parsed.
 */
import type { ExecResult, Host } from '../bed/bed.ts';

export const ETCD_PKI = '/etc/kubernetes/pki/etcd';

/** Runs `etcdctl …` in `host` against https://127.0.0.1:2379 (5 s command timeout); never throws on exit code. */
export function etcdctl(host: Host, ...args: string[]): Promise<ExecResult> {
  return host.exec(
    ['etcdctl', '--endpoints=https://127.0.0.1:2379', `--cacert=${ETCD_PKI}/ca.crt`, `--cert=${ETCD_PKI}/healthcheck-client.crt`, `--key=${ETCD_PKI}/healthcheck-client.key`, '--command-timeout=5s', ...args],
    { env: { ETCDCTL_API: '3' }, timeoutMs: 30_000 },
  );
}

export interface EtcdMember {
  /** Empty for a member added but not started yet. */
  name: string;
  isLearner: boolean;
  peerURLs: string[];
  clientURLs: string[];
}

/** `member list -w json` (IDs are dropped: uint64 does not survive JSON.parse). Throws if etcdctl fails. */
export async function etcdMembers(host: Host): Promise<EtcdMember[]> {
  const r = await etcdctl(host, 'member', 'list', '-w', 'json');
  if (r.code !== 0) throw new Error(`etcdctl member list on ${host.name} exited ${r.code}: ${r.stderr.trim()}`);
  const members = (JSON.parse(r.stdout) as { members?: any[] }).members ?? [];
  return members.map((m) => ({ name: m.name ?? '', isLearner: m.isLearner === true, peerURLs: m.peerURLs ?? [], clientURLs: m.clientURLs ?? [] }));
}

export interface EtcdEndpointHealth {
  endpoint: string;
  health: boolean;
  error?: string;
}

/** `endpoint health --cluster -w json`: every member's client URL and whether it committed a proposal. */
export async function etcdHealth(host: Host): Promise<EtcdEndpointHealth[]> {
  const r = await etcdctl(host, 'endpoint', 'health', '--cluster', '-w', 'json');
  // etcdctl exits 1 when a member is unhealthy but still prints the JSON array.
  const json = r.stdout.trim();
  if (!json.startsWith('[')) throw new Error(`etcdctl endpoint health on ${host.name} exited ${r.code}: ${r.stderr.trim() || json}`);
  return (JSON.parse(json) as any[]).map((e) => ({ endpoint: e.endpoint, health: e.health === true, ...(e.error ? { error: String(e.error) } : {}) }));
}
