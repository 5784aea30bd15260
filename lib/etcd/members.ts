/**
 * etcd cluster membership through the v3 gRPC gateway (`POST /v3/cluster/member/*`, JSON over HTTPS
 * with client-cert auth; etcd 3.4 and later), as `etcdctl member list|add --learner|promote|remove`
 * does — no etcdctl binary needed. Member ids are uint64, kept as decimal strings (JSON numbers would
 * lose precision).
 * @see https://etcd.io/docs/v3.4/dev-guide/api_grpc_gateway/
 * @see https://etcd.io/docs/v3.4/learning/design-learner/
 */
import { KubeceptionError } from '../errors.ts';
import { probeHttps, type TlsClient } from '../net/probe.ts';

/** One member as the gateway lists it. A member added but not started yet has no `name`. */
export interface EtcdMember {
  id: string;
  name: string;
  peerURLs: string[];
  clientURLs: string[];
  isLearner: boolean;
}

/** Peer URL → member, or undefined. */
export const memberByPeerUrl = (members: readonly EtcdMember[], peerUrl: string) => members.find((m) => m.peerURLs.includes(peerUrl));

/** Voting members (not learners). */
export const votingMembers = (members: readonly EtcdMember[]) => members.filter((m) => !m.isLearner);

async function call(clientUrl: string, tls: TlsClient, path: string, body: object, timeoutMs = 5_000): Promise<Record<string, unknown>> {
  const r = await probeHttps(new URL(`/v3/cluster/member/${path}`, clientUrl).href, tls, timeoutMs, JSON.stringify(body));
  if ('error' in r) throw new EtcdMemberError(clientUrl, path, r.error);
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(r.body);
  } catch {
    throw new EtcdMemberError(clientUrl, path, `HTTP ${r.status}: ${r.body.slice(0, 160)}`);
  }
  if (r.status !== 200) throw new EtcdMemberError(clientUrl, path, `HTTP ${r.status}: ${String(parsed.error ?? parsed.message ?? r.body).slice(0, 200)}`);
  return parsed;
}

/** A membership call that failed (unreachable member, refused change). */
export class EtcdMemberError extends KubeceptionError {
  constructor(clientUrl: string, op: string, why: string) {
    super('etcd-member', { what: `etcd at ${clientUrl} (member ${op})`, why, fix: 'check that the existing etcd members are healthy (`etcdctl endpoint health --cluster`)' });
  }
}

const toMember = (m: Record<string, unknown>): EtcdMember => ({
  id: String(m.ID ?? ''),
  name: String(m.name ?? ''),
  peerURLs: (m.peerURLs as string[] | undefined) ?? [],
  clientURLs: (m.clientURLs as string[] | undefined) ?? [],
  isLearner: m.isLearner === true,
});

/** `member list` (linearizable). @throws EtcdMemberError. */
export async function listMembers(clientUrl: string, tls: TlsClient): Promise<EtcdMember[]> {
  const r = await call(clientUrl, tls, 'list', { linearizable: true });
  return ((r.members as Record<string, unknown>[] | undefined) ?? []).map(toMember);
}

/** `member add --learner --peer-urls peerUrl`. @returns the new member. @throws EtcdMemberError. */
export async function addLearner(clientUrl: string, tls: TlsClient, peerUrl: string): Promise<EtcdMember> {
  const r = await call(clientUrl, tls, 'add', { peerURLs: [peerUrl], isLearner: true });
  return toMember(r.member as Record<string, unknown>);
}

/**
 * `member promote ID`. etcd refuses while the learner's log is behind the leader's ("can only
 * promote a learner member which is in sync with leader"): the caller retries.
 * @throws EtcdMemberError.
 */
export async function promoteMember(clientUrl: string, tls: TlsClient, id: string): Promise<void> {
  await call(clientUrl, tls, 'promote', { ID: id });
}

/** `member remove ID`. @throws EtcdMemberError. */
export async function removeMember(clientUrl: string, tls: TlsClient, id: string): Promise<void> {
  await call(clientUrl, tls, 'remove', { ID: id });
}

/** `name=peerURL,…` for `initial-cluster`, members without a name (not started) taking `self`'s. */
export function initialCluster(members: readonly EtcdMember[], self: { name: string; peerUrl: string }): string {
  return members
    .flatMap((m) => m.peerURLs.map((u) => `${u === self.peerUrl ? self.name : m.name}=${u}`))
    .filter((e) => !e.startsWith('='))
    .join(',');
}
