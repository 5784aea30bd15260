/**
 * The kube-public `cluster-info` ConfigMap, as kubeadm's `bootstrap-token` phase creates it: a
 * kubeconfig holding only the cluster (the CA data and the apiserver URL), which the
 * controller-manager's bootstrapsigner signs once per token (`jws-kubeconfig-<id>`).
 * @see kubernetes/cmd/kubeadm/app/phases/bootstraptoken/clusterinfo/clusterinfo.go
 */
import { fromYaml, toYaml } from '../util/yaml.ts';

export const CLUSTER_INFO_NAMESPACE = 'kube-public';
export const CLUSTER_INFO_NAME = 'cluster-info';
/** Prefix of the bootstrapsigner's signature keys. */
export const JWS_PREFIX = 'jws-kubeconfig-';

/** The `kubeconfig` text kubeadm puts in cluster-info (one cluster named "", nothing else). */
export function clusterInfoKubeconfig(server: string, caPem: string): string {
  return toYaml({
    apiVersion: 'v1',
    clusters: [{ cluster: { 'certificate-authority-data': Buffer.from(caPem).toString('base64'), server }, name: '' }],
    contexts: null,
    'current-context': '',
    kind: 'Config',
    preferences: {},
    users: null,
  });
}

/** The ConfigMap object (server-side applied; the bootstrapsigner adds the `jws-kubeconfig-*` keys). */
export function clusterInfoConfigMap(server: string, caPem: string) {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: CLUSTER_INFO_NAME, namespace: CLUSTER_INFO_NAMESPACE },
    data: { kubeconfig: clusterInfoKubeconfig(server, caPem) },
  };
}

/** `{ kubeconfig, jws: id → detached JWS }` of the ConfigMap's data; undefined without a kubeconfig. */
export function splitClusterInfo(data: Record<string, string> | undefined): { kubeconfig: string; jws: Record<string, string> } | undefined {
  if (!data?.kubeconfig) return undefined;
  const jws: Record<string, string> = {};
  for (const [k, v] of Object.entries(data)) if (k.startsWith(JWS_PREFIX)) jws[k.slice(JWS_PREFIX.length)] = v;
  return { kubeconfig: data.kubeconfig, jws };
}

/**
 * The server and the CA data (PEM, possibly several certificates) of a cluster-info kubeconfig:
 * kubeadm reads the first cluster. Undefined if either is missing.
 */
export function readClusterInfo(kubeconfig: string): { server: string; caPem: string } | undefined {
  let doc: { clusters?: { cluster?: { server?: unknown; 'certificate-authority-data'?: unknown } }[] } | undefined;
  try {
    doc = fromYaml(kubeconfig, 'cluster-info kubeconfig') as typeof doc;
  } catch {
    return undefined;
  }
  const c = doc?.clusters?.[0]?.cluster;
  if (typeof c?.server !== 'string' || typeof c['certificate-authority-data'] !== 'string') return undefined;
  return { server: c.server, caPem: Buffer.from(c['certificate-authority-data'], 'base64').toString('utf8') };
}
