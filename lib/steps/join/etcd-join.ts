
import { CONTROL_PLANE_LABEL, ETCD_CLIENT_PORT } from '../../constants.ts';
import { HostStateError, InputError, TimeoutError } from '../../errors.ts';
import { crashPoint } from '../../engine/crash.ts';
import { ETCD_ENV_HEADER, etcdPeerUrl, readEtcdEnvironment } from '../../etcd/config.ts';
import { addLearner, EtcdMemberError, initialCluster, listMembers, memberByPeerUrl, promoteMember, type EtcdMember } from '../../etcd/members.ts';
import { foreignDataDirError } from '../../etcd/datadir.ts';
import { url } from '../../net/cidr.ts';
import type { TlsClient } from '../../net/probe.ts';
import { certSpecs } from '../../pki/certs.ts';
import { reconcileLeaf } from '../../pki/leaf.ts';
import { pollUntil } from '../../util/poll.ts';
import { endpointCluster } from '../../k8s/apiserver.ts';
import type { Cluster } from '../../k8s/client.ts';
import { ensureEtcd, etcdDataDirState, healthcheckTls } from '../bootstrap/etcd.ts';
import type { JoinContext } from '../contexts.ts';
import type { StepOutcome } from '../../engine/dsl.ts';

/** An etcd client certificate in memory, from the etcd CA (never written). */
export async function memoryEtcdClient(ctx: JoinContext, caPem: string, caKeyPem: string): Promise<TlsClient> {
  const spec = certSpecs(ctx.config).find((s) => s.name === 'etcd/healthcheck-client');
  if (spec?.kind !== 'leaf') throw new Error('no etcd/healthcheck-client in the certificate table');
  const leaf = await reconcileLeaf(spec, {}, { certPem: caPem, keyPem: caKeyPem }, ctx.config);
  return { ca: caPem, cert: leaf.certPem, key: leaf.keyPem };
}

/** The members, from the first client URL that answers. @throws EtcdMemberError (the last failure). */
export async function listFromAny(urls: readonly string[], tls: TlsClient): Promise<{ members: EtcdMember[]; from: string }> {
  let last: unknown = new EtcdMemberError(urls.join(','), 'list', 'no etcd client URL known');
  for (const u of urls) {
    try {
      return { members: await listMembers(u, tls), from: u };
    } catch (err) {
      last = err;
    }
  }
  throw last;
}

export const twoMembers = (members: readonly EtcdMember[]) =>
  new InputError('etcd-two-members', {
    what: `etcd (members: ${members.map((m) => m.name || m.id).join(', ')})`,
    why: 'this join would leave etcd with two voting members, which stops when either stops: less available than one',
    fix: 'join a third control-plane node right after this one and pass --force to accept two members meanwhile',
  });


/** Client URLs of the other control-plane nodes' etcd members: their Nodes' InternalIP, port 2379. */
async function otherMembersUrls(ctx: JoinContext, api: Cluster): Promise<string[]> {
  const nodes = await api.list<{ metadata?: { name?: string }; status?: { addresses?: { type: string; address: string }[] } }>('v1', 'Node', undefined, CONTROL_PLANE_LABEL);
  return nodes
    .filter((n) => n.metadata?.name !== ctx.config.nodeName)
    .flatMap((n) => (n.status?.addresses ?? []).filter((a) => a.type === 'InternalIP').map((a) => url('https', a.address, ETCD_CLIENT_PORT)));
}

const PROMOTE_TIMEOUT_MS = 120_000;

/**
 * `etcd-join`: this host's member of the existing etcd cluster (see the module docstring). A re-run
 * finds its member by peer URL and never adds a second one.
 * @throws HostStateError `etcd-member-removed` (the data dir belongs to a member the cluster no longer
 *   has), `etcd-member-name-taken`; EtcdMemberError; TimeoutError `etcd-promote`.
 */
export async function joinEtcd(ctx: JoinContext): Promise<StepOutcome> {
  const { config } = ctx;
  if (ctx.dryRun) return { changed: true, detail: 'would add this host as an etcd learner, start etcd (initial-cluster-state=existing) and promote it' };
  const peerUrl = etcdPeerUrl(config);
  const tls = await healthcheckTls(ctx);
  const state = await etcdDataDirState(ctx);
  if (state.kind === 'foreign') throw foreignDataDirError(config.etcd.dataDir, state.why);
  const api = await endpointCluster(ctx);
  const { members, from } = await listFromAny(await otherMembersUrls(ctx, api), tls);
  const changes: string[] = [];
  let me = memberByPeerUrl(members, peerUrl);
  if (!me) {
    if (state.kind === 'reuse')
      throw new HostStateError('etcd-member-removed', { what: config.etcd.dataDir, why: `it holds a member the etcd cluster no longer lists (no member has peer URL ${peerUrl})`, fix: `move ${config.etcd.dataDir} aside (this node's data is in the other members), then re-run` });
    const clash = members.find((m) => m.name === config.nodeName);
    if (clash) throw new HostStateError('etcd-member-name-taken', { what: `etcd member ${config.nodeName}`, why: `a member of that name has peer URL ${clash.peerURLs.join(',')}, not ${peerUrl}`, fix: 'remove that member (kubeception reset on its node) or give this node another name' });
    me = await addLearner(from, tls, peerUrl);
    members.push(me);
    ctx.log.info(`etcd: added member ${me.id} (${peerUrl}) as a learner`);
    changes.push('member added as learner');
    crashPoint('etcd-member-added');
  }
  const envText = (await ctx.files.read(config.distro.paths.etcdEnvironmentFile)) ?? '';
  // A started member keeps the initial cluster it started with (etcd reads it only then): no restart.
  const kept = state.kind === 'reuse' && envText.startsWith(ETCD_ENV_HEADER) && readEtcdEnvironment(envText, 'initial-cluster-state') === 'existing' ? readEtcdEnvironment(envText, 'initial-cluster') : undefined;
  const started = await ensureEtcd(ctx, { initialCluster: kept ?? initialCluster(members, { name: config.nodeName, peerUrl }), initialClusterState: 'existing' });
  if (started.changed) changes.push(started.detail ?? 'etcd changed');
  if (me.isLearner) {
    let last = '';
    const ok = await pollUntil(async () => {
      try {
        await promoteMember(from, tls, me!.id);
        return true;
      } catch (err) {
        last = (err as Error).message;
        if (!/in sync|not ready|too many learner|leader/i.test(last)) throw err;
        return undefined;
      }
    }, { timeoutMs: PROMOTE_TIMEOUT_MS, intervalMs: 1_000, signal: ctx.signal });
    if (!ok) throw new TimeoutError('etcd-promote', { what: `etcd member ${config.nodeName}`, why: `the learner did not catch up within ${PROMOTE_TIMEOUT_MS / 1000} s (${last})`, fix: `check \`journalctl -u ${config.distro.units.etcd}\` on this node and the other members' health` });
    ctx.log.info(`etcd: promoted member ${me.id} to voting member`);
    changes.push('promoted');
  }
  return { changed: changes.length > 0, detail: changes.length ? changes.join('; ') : 'voting member, healthy' };
}
