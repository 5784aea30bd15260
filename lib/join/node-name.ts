/**
 * The "node name taken" check kubeadm's join does before the kubelet starts: with the bootstrap
 * token, against the *verified* apiserver (TLS trusting only the verified CA), GET the Node of this
 * name (the `kubeadm:get-nodes` ClusterRole lets bootstrap tokens do it). A Node of that name — Ready
 * or not, control plane or worker — is not to be taken over: exit 2 (kubeadm refuses only a Ready one;
 * a NotReady Node may be a rebooting machine whose identity a token must not buy). The cluster-side
 * CSR approver checks the same again, so a worker that skips this client gets no certificate either.
 * @see kubernetes/cmd/kubeadm/app/cmd/phases/join/kubelet.go (runKubeletStartJoinPhase)
 */
import { KubeceptionError } from '../errors.ts';
import { call, JoinRefused, tokenRejected } from './client.ts';

/** A Node as far as this check reads it. */
export interface NodeLike {
  metadata?: { labels?: Record<string, string> };
  status?: { conditions?: { type?: string; status?: string }[] };
}

export const CONTROL_PLANE_LABEL = 'node-role.kubernetes.io/control-plane';

/** Why `node` must not be taken by a joining machine, or undefined when there is no such Node. */
export function nameTakenReason(name: string, node: NodeLike | undefined): string | undefined {
  if (!node) return undefined;
  if (node.metadata?.labels && CONTROL_PLANE_LABEL in node.metadata.labels) return `Node ${name} is a control-plane node`;
  const ready = node.status?.conditions?.find((c) => c.type === 'Ready')?.status;
  return `a Node named ${name} exists (${ready === 'True' ? 'Ready' : 'not Ready'})`;
}

/**
 * @throws JoinRefused `join-node-name-taken` (exit 2); `join-token-rejected` if the apiserver refuses
 * the token; KubeceptionError `join-node-check` for anything else.
 */
export async function checkNodeName(server: string, caPem: string, token: string, name: string): Promise<void> {
  const url = new URL(`/api/v1/nodes/${encodeURIComponent(name)}`, server);
  let r: Awaited<ReturnType<typeof call>>;
  try {
    r = await call(url, { ca: caPem, bearer: token, timeoutMs: 10_000 });
  } catch (err) {
    throw new KubeceptionError('join-node-check', { what: server, why: `the verified apiserver did not answer: ${(err as Error).message}`, fix: 'check that this host reaches the apiserver address in cluster-info (controlPlaneEndpoint or the advertise address)', cause: err });
  }
  if (r.status === 404) return;
  if (r.status === 401) throw tokenRejected(token);
  if (r.status !== 200) throw new KubeceptionError('join-node-check', { what: url.href, why: `HTTP ${r.status}: ${r.body.slice(0, 200)}`, fix: 'the bootstrap token group needs `get nodes` (ClusterRoleBinding kubeadm:get-nodes); re-run bootstrap on the control plane' });
  const reason = nameTakenReason(name, JSON.parse(r.body) as NodeLike);
  if (reason)
    throw new JoinRefused('join-node-name-taken', {
      what: `node name ${name}`,
      why: `${reason}: a token buys one new node, never an existing identity`,
      fix: `give this host another name (nodeName in kubeception.config.ts, or its host name), or, if the machine that had it is gone, delete its Node first (\`kubectl delete node ${name}\`)`,
    });
}
