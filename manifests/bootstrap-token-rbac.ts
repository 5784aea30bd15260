/**
 * RBAC for TLS bootstrapping with bootstrap tokens, as kubeadm's `bootstrap-token` phase creates it:
 * a joining kubelet authenticates with a token (user `system:bootstrap:<id>`, groups
 * `system:bootstrappers` and the token's `auth-extra-groups`), posts a CSR for its client
 * certificate, and kube-controller-manager's csrapprover approves it; later the node renews that
 * certificate itself (`system:nodes`). kubeadm's `kubeadm:get-nodes` binding is left out: only
 * `kubeadm join` reads the Node before the kubelet starts.
 * @see kubernetes/cmd/kubeadm/app/phases/bootstraptoken/node/tlsbootstrap.go
 * @see https://kubernetes.io/docs/reference/access-authn-authz/kubelet-tls-bootstrapping/
 */
import type { V1ClusterRoleBinding } from '@kubernetes/client-node';
import { BOOTSTRAP_TOKEN_GROUP, NODES_GROUP } from '../lib/constants.ts';
import { MANAGED_BY, type Manifest } from './common.ts';

/** The extra group of kubeception's bootstrap tokens (kubeadm's `NodeBootstrapTokenAuthGroup`). */
export { BOOTSTRAP_TOKEN_GROUP };

/** Binding name → [ClusterRole (from the apiserver's RBAC bootstrap policy), Group]. kubeadm's names. */
export const BOOTSTRAP_TOKEN_BINDINGS = {
  /** Lets bootstrap tokens create CSRs (kubeadm's `NodeKubeletBootstrap`). */
  'kubeadm:kubelet-bootstrap': ['system:node-bootstrapper', BOOTSTRAP_TOKEN_GROUP],
  /** Lets the csrapprover approve those CSRs for a node client certificate. */
  'kubeadm:node-autoapprove-bootstrap': ['system:certificates.k8s.io:certificatesigningrequests:nodeclient', BOOTSTRAP_TOKEN_GROUP],
  /** Lets the csrapprover approve a node's renewal of its own client certificate. */
  'kubeadm:node-autoapprove-certificate-rotation': ['system:certificates.k8s.io:certificatesigningrequests:selfnodeclient', NODES_GROUP],
} as const satisfies Record<string, readonly [string, string]>;

/**
 * kubeadm's three ClusterRoleBindings for TLS bootstrapping, in {@link BOOTSTRAP_TOKEN_BINDINGS}
 * order. Cluster-scoped, labelled {@link MANAGED_BY}. Pure: same call, deep-equal objects.
 */
export function bootstrapTokenRbac(): Manifest<V1ClusterRoleBinding>[] {
  return Object.entries(BOOTSTRAP_TOKEN_BINDINGS).map(([name, [role, group]]) => ({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name, labels: { ...MANAGED_BY } },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: group }],
  }));
}
