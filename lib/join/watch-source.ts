/**
 * The join service's {@link DiscoverySource} in the pod: three informers (list once, then watch) on
 * exactly three ConfigMaps — kube-public/cluster-info and kube-system's token index and node identity
 * record — selected by name, so the ServiceAccount's Roles can name them (`resourceNames`) and grant
 * nothing else.
 */
import { Cluster } from '../k8s/client.ts';
import { CLUSTER_INFO_NAME, CLUSTER_INFO_NAMESPACE, splitClusterInfo } from './cluster-info.ts';
import { parseIndex, TOKEN_INDEX_NAME, type TokenIndex } from './token-index.ts';
import { NODE_IDENTITIES, parseIdentities, type Identities } from './node-identities.ts';
import type { DiscoverySource } from './server.ts';

type ConfigMap = { metadata?: { name?: string }; data?: Record<string, string> };

/**
 * Starts the informers with the pod's ServiceAccount (or `kubeconfig` text).
 * @param log one line per failed or timed-out list/watch (object names only, never contents).
 */
export function watchDiscoverySource(kubeconfig = 'in-cluster', log: (line: string) => void = () => undefined): DiscoverySource & { stop(): void } {
  const api = new Cluster(kubeconfig, kubeconfig === 'in-cluster' ? 'service account' : 'kubeconfig');
  let info: ReturnType<typeof splitClusterInfo>;
  let index: TokenIndex = new Map();
  let identities: Identities = parseIdentities(undefined);
  const cm = (namespace: string, name: string, onChange: (c: ConfigMap | undefined) => void) => {
    const w = api.watch<ConfigMap>({ apiVersion: 'v1', kind: 'ConfigMap', namespace, path: `/api/v1/namespaces/${namespace}/configmaps`, fieldSelector: `metadata.name=${name}` }, () => onChange(w.get(name)), { log });
    return w;
  };
  const ci = cm(CLUSTER_INFO_NAMESPACE, CLUSTER_INFO_NAME, (c) => (info = splitClusterInfo(c?.data)));
  const ix = cm('kube-system', TOKEN_INDEX_NAME, (c) => (index = parseIndex(c?.data)));
  const id = cm('kube-system', NODE_IDENTITIES, (c) => (identities = parseIdentities(c?.data)));
  return {
    ready: () => ci.synced() && ix.synced() && id.synced(),
    clusterInfo: () => info,
    index: () => index,
    identities: () => identities,
    stop: () => {
      ci.stop();
      ix.stop();
      id.stop();
    },
  };
}
