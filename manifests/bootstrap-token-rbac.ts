/**
 * RBAC for TLS bootstrapping with bootstrap tokens, as kubeadm's `bootstrap-token` phase creates it,
 * with one deliberate difference: kubeadm's blanket auto-approval of new-node client CSRs
 * (`kubeadm:node-autoapprove-bootstrap`, ClusterRole `...:nodeclient` for the token group) is left
 * out — kubeception's own CSR approver (manifests/csr-approver.ts) approves those, and only for a
 * node name that is not a control-plane node or a Ready Node. A joining kubelet authenticates with a
 * token (user `system:bootstrap:<id>`, groups `system:bootstrappers` and the token's
 * `auth-extra-groups`) and posts a CSR; later the node renews its certificate itself (`system:nodes`,
 * approved by the controller-manager's csrapprover). `kubeadm:get-nodes` lets the joining worker
 * check, with its token, that its node name is not taken (kubeadm does the same).
 * @see kubernetes/cmd/kubeadm/app/phases/bootstraptoken/node/tlsbootstrap.go
 * @see https://kubernetes.io/docs/reference/access-authn-authz/kubelet-tls-bootstrapping/
 */
import type { V1ClusterRole, V1ClusterRoleBinding } from '@kubernetes/client-node';
import { BOOTSTRAP_TOKEN_GROUP, NODES_GROUP } from '../lib/constants.ts';
import { MANAGED_BY, type Manifest } from './common.ts';

/** The extra group of kubeception's bootstrap tokens (kubeadm's `NodeBootstrapTokenAuthGroup`). */
export { BOOTSTRAP_TOKEN_GROUP };

/** kubeadm's ClusterRole (and binding) name for `get nodes` by bootstrap tokens. */
export const GET_NODES = 'kubeadm:get-nodes';

/** Binding name → [ClusterRole, Group]. kubeadm's names. */
export const BOOTSTRAP_TOKEN_BINDINGS = {
  /** Lets bootstrap tokens create CSRs (kubeadm's `NodeKubeletBootstrap`). */
  'kubeadm:kubelet-bootstrap': ['system:node-bootstrapper', BOOTSTRAP_TOKEN_GROUP],
  /** Lets the csrapprover approve a node's renewal of its own client certificate. */
  'kubeadm:node-autoapprove-certificate-rotation': ['system:certificates.k8s.io:certificatesigningrequests:selfnodeclient', NODES_GROUP],
  /** Lets a joining worker read the Node of its name (kubeadm's `NodesKubeadmConfigClusterRoleName` peer). */
  [GET_NODES]: [GET_NODES, BOOTSTRAP_TOKEN_GROUP],
} as const satisfies Record<string, readonly [string, string]>;

/** Bindings older kubeception versions (and kubeadm) created that must not exist: deleted on converge. */
export const REMOVED_BOOTSTRAP_BINDINGS = ['kubeadm:node-autoapprove-bootstrap'] as const;

/**
 * The `kubeadm:get-nodes` ClusterRole, then the bindings in {@link BOOTSTRAP_TOKEN_BINDINGS} order.
 * Cluster-scoped, labelled {@link MANAGED_BY}. Pure: same call, deep-equal objects.
 */
export function bootstrapTokenRbac(): (Manifest<V1ClusterRole> | Manifest<V1ClusterRoleBinding>)[] {
  const getNodes: Manifest<V1ClusterRole> = {
    apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: GET_NODES, labels: { ...MANAGED_BY } },
    rules: [{ apiGroups: [''], resources: ['nodes'], verbs: ['get'] }],
  };
  return [getNodes, ...Object.entries(BOOTSTRAP_TOKEN_BINDINGS).map(([name, [role, group]]): Manifest<V1ClusterRoleBinding> => ({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name, labels: { ...MANAGED_BY } },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: group }],
  }))];
}
