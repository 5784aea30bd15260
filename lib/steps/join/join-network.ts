/**
 * `wait-node-network` of the join (with `--wait-for-network`): waits until the pod network is up on
 * this worker — its Node is Ready and the network plugin has reported `NetworkUnavailable=False`
 * (flannel, Calico and Cilium set it once their routes are in place; the DaemonSet reaches the new
 * node by itself). Reads the Node with the kubelet's own credentials (the Node authorizer lets a
 * node read its own Node). Host effects: none.
 */
import { TimeoutError } from '../../errors.ts';
import { pollUntil } from '../../util/poll.ts';
import type { V1Node } from '../../k8s/client.ts';
import { kubeconfigPaths } from '../../k8s/endpoints.ts';
import type { Context } from '../../context.ts';
import type { JoinOptions } from '../contexts.ts';
import type { StepOutcome } from '../../engine/dsl.ts';

/** How long `wait-node-network` waits, in ms. */
export const NODE_NETWORK_TIMEOUT_MS = 300_000;

/** `skipIf`: only with `--wait-for-network`. */
export function networkWaitNotRequested(ctx: Context<Pick<JoinOptions, 'waitForNetwork'>>): string | false {
  return ctx.options.waitForNetwork ? false : 'not requested (pass --wait-for-network to wait for the pod network)';
}

/** The Node's `Ready` and `NetworkUnavailable` condition statuses (`True`/`False`/undefined). */
export function networkConditions(node: V1Node | undefined): { ready?: string; networkUnavailable?: string } {
  const status = (type: string) => node?.status?.conditions?.find((c) => c.type === type)?.status;
  return { ready: status('Ready'), networkUnavailable: status('NetworkUnavailable') };
}

/**
 * `wait-node-network`.
 * @throws TimeoutError `join-network-timeout` after {@link NODE_NETWORK_TIMEOUT_MS}, naming the conditions seen.
 */
export async function waitNodeNetwork(ctx: Context): Promise<StepOutcome> {
  if (ctx.dryRun) return { changed: false, detail: `would wait for Node ${ctx.config.nodeName} Ready with its pod network` };
  const path = kubeconfigPaths(ctx.config).kubelet;
  const { Cluster } = await import('../../k8s/client.ts'); // on first use: `plan` must not load client-node
  const api = new Cluster((await ctx.files.read(path)) ?? '', path);
  const ref = { apiVersion: 'v1', kind: 'Node', metadata: { name: ctx.config.nodeName } };
  let seen = networkConditions(undefined);
  const ok = await pollUntil(
    async () => {
      seen = networkConditions(await api.read<V1Node>(ref).catch(() => undefined));
      return seen.ready === 'True' && seen.networkUnavailable === 'False' ? true : undefined;
    },
    { timeoutMs: NODE_NETWORK_TIMEOUT_MS, signal: ctx.signal },
  );
  if (ok) return { changed: false, detail: `Node ${ctx.config.nodeName} Ready, pod network up (NetworkUnavailable=False)` };
  throw new TimeoutError('join-network-timeout', {
    what: `Node ${ctx.config.nodeName}`,
    why: `the pod network did not come up within ${NODE_NETWORK_TIMEOUT_MS / 1000} s (Ready=${seen.ready ?? 'unknown'}, NetworkUnavailable=${seen.networkUnavailable ?? 'not set'})`,
    fix: 'check the network plugin\'s pod on this node (e.g. `kubectl -n kube-system get pods -l app=flannel -o wide`) and its logs',
  });
}
