/**
 * One simulated node's join for the scale bench (bench/scale.ts), on the real join path of each side,
 * up to the Node object a kubelet registers; kwok then keeps that Node Ready (heartbeats, Lease).
 * - kubeception: discovery through the join service (`GET <join URL>/cluster-info?token-id=<id>&node-name=<name>`,
 *   JWS and CA pin verified: lib/join/client.ts `discover`), then the kubelet client CSR
 *   (`system:node:<name>`, the node's own ECDSA P-256 key) posted with the bootstrap token and
 *   approved by kubeception's CSR approver (lib/join/kubelet-csr.ts, as `run join` does).
 * - kubeadm: kubeadm's token discovery against the apiserver (an unauthenticated read of
 *   kube-public/cluster-info, the JWS and the pin verified, then the pinned read kubeadm makes), then
 *   the same CSR, approved by kube-controller-manager's csrapproving controller (kubeadm's
 *   `kubeadm:node-autoapprove-bootstrap` binding).
 * Then the Node is created with the issued certificate (as the kubelet registers itself: the Node
 * authorizer and NodeRestriction admit it), annotated for kwok. Network: the join URL and the
 * apiserver only (bed addresses). Runs inside a bed host (bench/scale-sim.ts).
 */
import { request } from 'node:https';
import { call, discover, verifyPins, type Discovered } from '../lib/join/client.ts';
import { CLUSTER_INFO_NAME, CLUSTER_INFO_NAMESPACE, JWS_PREFIX, readClusterInfo } from '../lib/join/cluster-info.ts';
import { verifyDetached } from '../lib/join/jws.ts';
import { requestKubeletClientCert } from '../lib/join/kubelet-csr.ts';
import { parseToken } from '../lib/join/token.ts';

/** The annotation kwok is told to manage Nodes by (`--manage-nodes-with-annotation-selector`). */
export const KWOK_ANNOTATION = 'kwok.x-k8s.io/node';

export type Side = 'kubeception' | 'kubeadm';

/** Where one node joins. `pin` is `sha256:<hex>` of the cluster CA's SubjectPublicKeyInfo. */
export interface JoinTarget {
  side: Side;
  /** kubeception: the join service URL (`https://<cp>:30000`); kubeadm: the apiserver URL. */
  discoveryUrl: string;
  pin: string;
  /** The kubelet version the Node reports (the cluster's, e.g. `v1.37.2`). */
  kubeletVersion: string;
}

/** Times of one join, ms from its start. */
export interface NodeJoin {
  name: string;
  discoveredMs: number;
  /** CSR POST answered. */
  postedMs: number;
  /** Certificate read (approved and signed). */
  certifiedMs: number;
  /** Node object created. */
  registeredMs: number;
  csrName: string;
}

const ms = (t0: number) => Date.now() - t0;

/** kubeadm's token discovery (cmd/kubeadm/app/discovery/token/token.go): unauthenticated read, JWS, pin, then the pinned read. */
async function kubeadmDiscover(apiserver: string, token: string, pin: string): Promise<Discovered> {
  const t = parseToken(token);
  if (!t) throw new Error('malformed token');
  const url = new URL(`/api/v1/namespaces/${CLUSTER_INFO_NAMESPACE}/configmaps/${CLUSTER_INFO_NAME}`, apiserver);
  const read = async (ca?: string) => {
    const r = await call(url, { timeoutMs: 10_000, ...(ca && { ca }) });
    if (r.status !== 200) throw new Error(`GET ${url.pathname}: HTTP ${r.status}`);
    return (JSON.parse(r.body) as { data?: Record<string, string> }).data ?? {};
  };
  const data = await read();
  const kubeconfig = data.kubeconfig ?? '';
  const jws = data[`${JWS_PREFIX}${t.id}`];
  if (!jws || !(await verifyDetached(jws, kubeconfig, t.id, t.secret))) throw new Error(`cluster-info holds no valid signature for token ${t.id}`);
  const info = readClusterInfo(kubeconfig);
  if (!info) throw new Error('cluster-info has no server or CA');
  const caPem = verifyPins(info.caPem, [pin], apiserver);
  if ((await read(caPem)).kubeconfig !== kubeconfig) throw new Error('cluster-info changed between the unpinned and the pinned read');
  return { server: info.server, caPem };
}

/** POSTs the Node as its kubelet would register it, authenticated with the node's own certificate. */
function registerNode(d: Discovered, cert: { certPem: string; keyPem: string }, name: string, kubeletVersion: string): Promise<void> {
  const resources = { cpu: '16', memory: '64Gi', pods: '110' };
  const body = JSON.stringify({
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, labels: { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64', type: 'kwok' }, annotations: { [KWOK_ANNOTATION]: 'fake' } },
    status: { capacity: resources, allocatable: resources, nodeInfo: { kubeletVersion, kubeProxyVersion: kubeletVersion, architecture: 'amd64', operatingSystem: 'linux' } },
  });
  return new Promise((resolve, reject) => {
    const req = request(new URL('/api/v1/nodes', d.server), { method: 'POST', ca: d.caPem, cert: cert.certPem, key: cert.keyPem, agent: false, timeout: 30_000, headers: { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (c: string) => (text += c));
      res.on('end', () => (res.statusCode === 201 ? resolve() : reject(new Error(`POST /api/v1/nodes ${name}: HTTP ${res.statusCode} ${text.slice(0, 200)}`))));
    });
    req.on('timeout', () => req.destroy(new Error('no answer within 30 s')));
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * Joins node `name` with `token`: discovery, the kubelet client CSR, the Node.
 * @param discoveryGate runs discovery under the caller's concurrency limit.
 * @throws whatever the join path throws (a refused token, a denied CSR, a timeout).
 */
export async function joinNode(target: JoinTarget, name: string, token: string, timeoutMs: number, discoveryGate: <T>(fn: () => Promise<T>) => Promise<T>): Promise<NodeJoin> {
  const t0 = Date.now();
  const d = await discoveryGate(() =>
    target.side === 'kubeception' ? discover(target.discoveryUrl, token, [target.pin], timeoutMs, undefined, name) : kubeadmDiscover(target.discoveryUrl, token, target.pin),
  );
  const discoveredMs = ms(t0);
  const cert = await requestKubeletClientCert({ server: d.server, caPem: d.caPem, token, nodeName: name, timeoutMs: Math.max(1_000, timeoutMs - discoveredMs) });
  const certifiedMs = ms(t0);
  await registerNode(d, cert, name, target.kubeletVersion);
  return { name, discoveredMs, postedMs: discoveredMs + cert.postedMs, certifiedMs, registeredMs: ms(t0), csrName: cert.csrName };
}
