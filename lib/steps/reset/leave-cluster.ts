/**
 * The first steps of `kubeception reset` (tasks/reset.ts), while the API still answers: this
 * control-plane node's etcd member leaves through another member, then its Node is cordoned and
 * deleted (and the controllers scaled to the remaining control-plane nodes).
 *
 * Cluster effects only (an etcd member removed, a Node deleted, Deployments scaled); no host writes.
 * @see kubernetes/cmd/kubeadm/app/cmd/phases/reset/removeetcdmember.go
 */
import { KubeceptionError, InputError } from '../../errors.ts';
import { cluster, endpointCluster } from '../../k8s/apiserver.ts';
import { etcdClientUrls, etcdPeerUrl, etcdPki } from '../../etcd/config.ts';
import { listMembers, memberByPeerUrl, removeMember, votingMembers, type EtcdMember } from '../../etcd/members.ts';
import { healthcheckTls } from '../bootstrap/etcd.ts';
import { scaleControllers } from '../join/control-plane-join.ts';
import { CONTROL_PLANE_LABEL } from '../../constants.ts';
import { kubeconfigPaths } from '../../k8s/endpoints.ts';
import type { Cluster } from '../../k8s/client.ts';
import type { Context } from '../../context.ts';
import type { StepOutcome } from '../../engine/dsl.ts';
import { resetOutcome } from './outcome.ts';

/** The check id `--ignore-preflight-errors` names to accept a reset that leaves two etcd members. */
export const ETCD_TWO_MEMBERS = 'EtcdTwoMembers';

/**
 * A client for this node's Node: admin.conf on a control plane (through the controlPlaneEndpoint when
 * set: this node's own apiserver lost its etcd member in `remove-etcd-member`), else the kubelet's
 * own kubeconfig.
 */
async function nodeClient(ctx: Context): Promise<Cluster | undefined> {
  const p = kubeconfigPaths(ctx.config);
  if (await ctx.files.exists(p.admin)) return ctx.config.controlPlaneEndpoint ? endpointCluster(ctx) : cluster(ctx, 'final');
  const text = await ctx.files.read(p.kubelet);
  if (text === undefined) return undefined;
  const { Cluster } = await import('../../k8s/client.ts'); // on first use: `plan` must not load client-node
  return new Cluster(text, p.kubelet);
}

/**
 * `remove-etcd-member` (kubeadm reset's phase): this control-plane node's etcd member leaves the
 * cluster through another member, so the rest keep their quorum. Nothing to do on a worker, for the
 * only member, or when the local etcd does not answer (then say how to remove it by hand).
 * @throws InputError `etcd-two-members` when two voting members would remain, unless
 *   `--ignore-preflight-errors EtcdTwoMembers` (or `all`) accepts it (before any change: this is
 *   the first step). `--force` only skips the confirmation prompt, as kubeadm's.
 */
export async function removeEtcdMember(ctx: Context): Promise<StepOutcome> {
  const { config } = ctx;
  if (!(await ctx.files.exists(etcdPki(config).healthcheckCert))) return resetOutcome([], 'no etcd client certificate: not a control-plane node');
  const tls = await healthcheckTls(ctx);
  let members: EtcdMember[];
  try {
    members = await listMembers(etcdClientUrls(config)[0]!, tls);
  } catch (err) {
    ctx.log.warn(`the local etcd does not answer (${(err as Error).message}): if this node is a member, remove it from another control-plane node (etcdctl member remove)`);
    return resetOutcome([], 'local etcd not answering: member left in place');
  }
  const me = memberByPeerUrl(members, etcdPeerUrl(config));
  if (!me) return resetOutcome([], 'this host is not an etcd member');
  const others = members.filter((m) => m.id !== me.id);
  if (!others.length) return resetOutcome([], 'the only etcd member: the cluster ends with this node');
  const ignored = ctx.options.ignorePreflightErrors;
  if (votingMembers(others).length === 2 && !ignored.has(ETCD_TWO_MEMBERS) && !ignored.has('all'))
    throw new InputError('etcd-two-members', {
      what: `etcd (members: ${members.map((m) => m.name || m.id).join(', ')})`,
      why: 'removing this member leaves two voting members, which stop when either stops',
      fix: `join another control-plane node first, or pass --ignore-preflight-errors ${ETCD_TWO_MEMBERS} to accept two members`,
    });
  if (ctx.dryRun) return resetOutcome([`would remove etcd member ${me.name} (${me.id})`], '');
  let last: unknown;
  for (const u of others.flatMap((m) => m.clientURLs)) {
    try {
      await removeMember(u, tls, me.id);
      return resetOutcome([`etcd member ${me.name} (${me.id}) removed`], '');
    } catch (err) {
      last = err;
    }
  }
  throw last;
}

/** `remove-node`: cordon, then delete this host's Node, if a kubeconfig exists and the API allows it. */
export async function removeNode(ctx: Context): Promise<StepOutcome> {
  const api = await nodeClient(ctx).catch(() => undefined);
  const ref = { apiVersion: 'v1', kind: 'Node', metadata: { name: ctx.config.nodeName } };
  if (!api) return resetOutcome([], 'no kubeconfig on this host: the Node (if any) is left to the cluster');
  if (ctx.dryRun) return resetOutcome([`would cordon and delete Node ${ctx.config.nodeName}`], '');
  const why = (err: unknown) => (err as KubeceptionError).why ?? (err as Error).message;
  const changed: string[] = [];
  try {
    if (!(await api.read(ref))) return resetOutcome([], `Node ${ctx.config.nodeName} not found`);
    await api.patch(ref, { spec: { unschedulable: true } });
    changed.push(`Node ${ctx.config.nodeName} cordoned`);
  } catch (err) {
    ctx.log.warn(`could not cordon Node ${ctx.config.nodeName}: ${why(err)}`);
  }
  try {
    // A worker's kubelet credentials may not delete its own Node (the Node authorizer): then say how.
    const wasControlPlane = (await api.read<{ metadata?: { labels?: Record<string, string> } }>(ref))?.metadata?.labels?.[CONTROL_PLANE_LABEL] !== undefined;
    if (await api.delete(ref)) changed.push(`Node ${ctx.config.nodeName} deleted`);
    // One controller replica per remaining control-plane node (a replica for this node would stay Pending).
    if (wasControlPlane) {
      const { scaled, replicas } = await scaleControllers(api).catch((err) => {
        ctx.log.warn(`could not scale the controllers: ${why(err)}`);
        return { scaled: [] as string[], replicas: 0 };
      });
      if (scaled.length) changed.push(`${scaled.join(', ')} scaled to ${replicas}`);
    }
  } catch (err) {
    ctx.log.warn(`could not delete Node ${ctx.config.nodeName} (${why(err)}); delete it from a control-plane node: kubectl delete node ${ctx.config.nodeName}`);
  }
  return resetOutcome(changed, 'the API allowed neither cordon nor delete');
}

