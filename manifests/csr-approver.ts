/**
 * kubeception's CSR approver as cluster objects (see lib/join/csr-approver.ts): a one-replica
 * Deployment of kubeception's image (`kubeception approve-csrs`) on a control-plane node, with no
 * port and no Service. Its ServiceAccount may read CSRs, get and list Nodes, approve (or deny) only for
 * the signers `kubernetes.io/kube-apiserver-client-kubelet` and `kubernetes.io/kubelet-serving`, and
 * get and update exactly one ConfigMap, kube-system's node identity record (a Role with
 * `resourceNames`); it can read no Secret. `KUBECEPTION_RESERVED_SANS` carries the apiserver's shared
 * SANs, which it refuses in kubelet serving certificates.
 * @see https://kubernetes.io/docs/reference/access-authn-authz/certificate-signing-requests/#authorization
 */
import type { V1ClusterRole, V1ClusterRoleBinding, V1Deployment, V1Role, V1RoleBinding, V1ServiceAccount } from '@kubernetes/client-node';
// From constants, not lib/join/csr-approver.ts: importing the approver would load the apiserver
// client and the CSR parser into every command that builds manifests (plan, bootstrap).
import { KUBELET_CLIENT_SIGNER, KUBELET_SERVING_SIGNER, RESERVED_SANS_ENV } from '../lib/constants.ts';
import { NODE_IDENTITIES } from '../lib/join/node-identities.ts';
import { MANAGED_BY, NAMESPACE, type Manifest } from './common.ts';
import { restrictedPod } from './join-service.ts';

export const CSR_APPROVER_NAME = 'kubeception-csr-approver';
/** ClusterRole and ClusterRoleBinding name. */
export const CSR_APPROVER_ROLE = 'kubeception:csr-approver';

const labels = () => ({ ...MANAGED_BY, 'app.kubernetes.io/name': CSR_APPROVER_NAME });

/**
 * ServiceAccount, ClusterRole, ClusterRoleBinding, Role and RoleBinding (the identity record), Deployment. Pure.
 * @param reservedSans names and IPs no kubelet serving certificate may carry (the apiserver's shared SANs).
 */
export function csrApproverObjects(image: string, apiserverPort: number, reservedSans: readonly string[] = []): (Manifest<V1ServiceAccount> | Manifest<V1ClusterRole> | Manifest<V1ClusterRoleBinding> | Manifest<V1Role> | Manifest<V1RoleBinding> | Manifest<V1Deployment>)[] {
  const pod = restrictedPod(image, CSR_APPROVER_NAME, ['approve-csrs'], { cpu: '5m', memory: '160Mi', cpuLimit: '500m', memoryLimit: '320Mi' }, apiserverPort);
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: CSR_APPROVER_NAME, namespace: NAMESPACE, labels: labels() } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: CSR_APPROVER_ROLE, labels: labels() },
      rules: [
        { apiGroups: ['certificates.k8s.io'], resources: ['certificatesigningrequests'], verbs: ['get', 'list', 'watch'] },
        { apiGroups: ['certificates.k8s.io'], resources: ['certificatesigningrequests/approval'], verbs: ['update'] },
        { apiGroups: ['certificates.k8s.io'], resources: ['signers'], verbs: ['approve'], resourceNames: [KUBELET_CLIENT_SIGNER, KUBELET_SERVING_SIGNER] },
        // list: a serving certificate may name no other Node's address.
        { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: CSR_APPROVER_ROLE, labels: labels() },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: CSR_APPROVER_ROLE },
      subjects: [{ kind: 'ServiceAccount', name: CSR_APPROVER_NAME, namespace: NAMESPACE }],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: CSR_APPROVER_ROLE, namespace: NAMESPACE, labels: labels() },
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'update'], resourceNames: [NODE_IDENTITIES] }],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: CSR_APPROVER_ROLE, namespace: NAMESPACE, labels: labels() },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: CSR_APPROVER_ROLE },
      subjects: [{ kind: 'ServiceAccount', name: CSR_APPROVER_NAME, namespace: NAMESPACE }],
    },
    {
      apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: CSR_APPROVER_NAME, namespace: NAMESPACE, labels: labels() },
      spec: {
        replicas: 1,
        selector: { matchLabels: { 'app.kubernetes.io/name': CSR_APPROVER_NAME } },
        template: {
          metadata: { labels: labels() },
          spec: {
            serviceAccountName: CSR_APPROVER_NAME, automountServiceAccountToken: true,
            nodeSelector: pod.nodeSelector, tolerations: pod.tolerations, securityContext: pod.securityContext,
            containers: [{ ...pod.container, env: [...pod.container.env, { name: RESERVED_SANS_ENV, value: reservedSans.join(',') }], volumeMounts: [{ name: 'tmp', mountPath: '/tmp' }] }],
            volumes: [{ name: 'tmp', emptyDir: { sizeLimit: '64Mi' } }],
          },
        },
      },
    },
  ];
}
