/**
 * The join service as cluster objects: kubeception itself (`kubeception serve-join`) as a one-replica
 * Deployment on a control-plane node behind NodePort {@link JOIN_NODE_PORT}, serving kubeadm's token
 * discovery (see lib/join/server.ts). It holds no secret and can read no Secret: its ServiceAccount may
 * only get/list/watch three ConfigMaps, kube-public/cluster-info and kube-system's token index and node
 * identity record (RBAC `resourceNames`; the informers select them by `metadata.name`). Its serving certificate is
 * self-signed, for transport only — it is not from the cluster CA, so it is never valid as the
 * apiserver's (authenticity comes from the token signature and the CA pin the worker checks).
 *
 * The pod runs as `nobody` (65534) on a read-only root; `/tmp` is an emptyDir because tsx, which loads
 * kubeception's TypeScript, keeps its compile cache there. Requests 10m CPU and 192Mi (an idle
 * `serve-join` used ≈190 MiB of pod cgroup memory on the test bed: Node 20, tsx, the Kubernetes
 * client); limited to 1 CPU and 384Mi so a flood cannot take the control-plane node.
 * @see https://kubernetes.io/docs/concepts/security/pod-security-standards/ (restricted)
 */
import type { V1Deployment, V1Role, V1RoleBinding, V1Secret, V1Service, V1ServiceAccount } from '@kubernetes/client-node';
import { KubeceptionError } from '../lib/errors.ts';
import { JOIN_NODE_PORT } from '../lib/constants.ts';
import { CLUSTER_INFO_NAME, CLUSTER_INFO_NAMESPACE } from '../lib/join/cluster-info.ts';
import { TOKEN_INDEX_NAME } from '../lib/join/token-index.ts';
import { NODE_IDENTITIES } from '../lib/join/node-identities.ts';
import type { ResolvedConfig } from '../lib/types.ts';
import { controlPlaneSelector, controlPlaneTolerations, MANAGED_BY, NAMESPACE, type Manifest, type ManifestObject } from './common.ts';

/** Name of the ServiceAccount, Deployment, Service and container; value of `app.kubernetes.io/name`. */
export const JOIN_SERVICE_NAME = 'kubeception-join';
/** The `kubernetes.io/tls` Secret with `tls.crt` and `tls.key` (the transport certificate). */
export const JOIN_TLS_SECRET = 'kubeception-join-tls';
/** The Roles (and RoleBindings) that let the join service read cluster-info and the token index. */
export const JOIN_READER_ROLE = 'kubeception:join-discovery-reader';
/** The Role of older kubeception versions (get on token Secrets); deleted on converge. */
export const LEGACY_TOKEN_READER_ROLE = 'kubeception:join-token-reader';
/** Port `serve-join` listens on inside the pod (the Service's `targetPort`). */
export const JOIN_CONTAINER_PORT = 8443;
/** Port of the Service's ClusterIP. */
export const JOIN_SERVICE_PORT = 443;
/** Where the TLS Secret is mounted (`serve-join --tls-dir`). */
export const JOIN_TLS_DIR = '/etc/kubeception/tls';
/** The image's user: `nobody`. */
export const JOIN_UID = 65534;

/** A Role, RoleBinding or Service, or any object of {@link ManifestObject}. */
export type JoinServiceObject = ManifestObject | Manifest<V1Role> | Manifest<V1RoleBinding> | Manifest<V1Service>;

/** Inputs of {@link joinServiceObjects}, read by the caller. */
export interface JoinServiceInput {
  /** kubeception's image, e.g. `localhost/kubeception:v0.1.0` (pulled `IfNotPresent`). */
  image: string;
  /** PEM text: the transport certificate (self-signed) and its key. */
  tls: { certPem: string; keyPem: string };
}

const labels = (name = JOIN_SERVICE_NAME) => ({ ...MANAGED_BY, 'app.kubernetes.io/name': name });
const metadata = (name: string, namespace = NAMESPACE, app = JOIN_SERVICE_NAME) => ({ name, namespace, labels: labels(app) });
const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');

/**
 * Checks the inputs before any object is built.
 * @throws KubeceptionError `join-service-input` for an empty image or a TLS field that is not PEM.
 */
export function checkJoinServiceInput(p: JoinServiceInput): void {
  const bad = (what: string, why: string, fix: string) => new KubeceptionError('join-service-input', { what, why, fix });
  if (!p.image.trim()) throw bad('image', 'is empty', 'pass the kubeception image reference');
  for (const [field, text] of Object.entries(p.tls))
    if (!text.includes('-----BEGIN ')) throw bad(`tls.${field}`, 'missing or not PEM', 'pass the join service transport certificate and its key as PEM');
}

/** get/list/watch on the named ConfigMaps of one namespace, and its binding to the join ServiceAccount. */
export function configMapReader(namespace: string, ...configMaps: string[]): [Manifest<V1Role>, Manifest<V1RoleBinding>] {
  return [
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: metadata(JOIN_READER_ROLE, namespace), rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'], resourceNames: configMaps }] },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: metadata(JOIN_READER_ROLE, namespace),
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: JOIN_READER_ROLE },
      subjects: [{ kind: 'ServiceAccount', name: JOIN_SERVICE_NAME, namespace: NAMESPACE }],
    },
  ];
}

/**
 * The restricted pod security context and container hardening shared with the CSR approver. The
 * container's in-cluster client talks to the apiserver of the control-plane node it runs on
 * (`KUBERNETES_SERVICE_HOST` = the pod's `status.hostIP`, the kubelet's `--node-ip`, i.e. the
 * advertise address; port `apiserverPort`), as the controller-manager and scheduler do — not through
 * the `kubernetes` Service, which needs kube-proxy and, during a bootstrap, names the bootstrap
 * apiserver's port until the hand-off.
 */
export function restrictedPod(image: string, name: string, args: string[], resources: { cpu: string; memory: string; cpuLimit: string; memoryLimit: string }, apiserverPort: number) {
  return {
    nodeSelector: controlPlaneSelector(),
    tolerations: controlPlaneTolerations(),
    securityContext: { runAsNonRoot: true, runAsUser: JOIN_UID, runAsGroup: JOIN_UID, fsGroup: JOIN_UID, seccompProfile: { type: 'RuntimeDefault' } },
    container: {
      name, image, imagePullPolicy: 'IfNotPresent', args,
      env: [
        { name: 'KUBERNETES_SERVICE_HOST', valueFrom: { fieldRef: { fieldPath: 'status.hostIP' } } },
        { name: 'KUBERNETES_SERVICE_PORT', value: String(apiserverPort) },
      ],
      resources: { requests: { cpu: resources.cpu, memory: resources.memory }, limits: { cpu: resources.cpuLimit, memory: resources.memoryLimit } },
      securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
    },
  };
}

/** The Deployment: `serve-join` with the transport certificate. */
export function joinDeployment(image: string, apiserverPort: number): Manifest<V1Deployment> {
  const pod = restrictedPod(image, JOIN_SERVICE_NAME, ['serve-join', '--listen', `0.0.0.0:${JOIN_CONTAINER_PORT}`, '--tls-dir', JOIN_TLS_DIR], { cpu: '10m', memory: '192Mi', cpuLimit: '1', memoryLimit: '384Mi' }, apiserverPort);
  return {
    apiVersion: 'apps/v1', kind: 'Deployment', metadata: metadata(JOIN_SERVICE_NAME),
    spec: {
      replicas: 1,
      selector: { matchLabels: { 'app.kubernetes.io/name': JOIN_SERVICE_NAME } },
      template: {
        metadata: { labels: labels() },
        spec: {
          serviceAccountName: JOIN_SERVICE_NAME, automountServiceAccountToken: true,
          nodeSelector: pod.nodeSelector, tolerations: pod.tolerations, securityContext: pod.securityContext,
          containers: [{
            ...pod.container,
            ports: [{ name: 'https', containerPort: JOIN_CONTAINER_PORT, protocol: 'TCP' }],
            readinessProbe: { httpGet: { scheme: 'HTTPS', path: '/readyz', port: JOIN_CONTAINER_PORT }, periodSeconds: 2, failureThreshold: 3 },
            livenessProbe: { httpGet: { scheme: 'HTTPS', path: '/healthz', port: JOIN_CONTAINER_PORT }, periodSeconds: 10, failureThreshold: 6, timeoutSeconds: 5 },
            volumeMounts: [{ name: 'tls', mountPath: JOIN_TLS_DIR, readOnly: true }, { name: 'tmp', mountPath: '/tmp' }],
          }],
          volumes: [{ name: 'tls', secret: { secretName: JOIN_TLS_SECRET, defaultMode: 0o440 } }, { name: 'tmp', emptyDir: { sizeLimit: '64Mi' } }],
        },
      },
    },
  };
}

/**
 * NodePort {@link JOIN_NODE_PORT} (and ClusterIP port 443) → the pod's 8443, with
 * `externalTrafficPolicy: Local`: kube-proxy does not masquerade NodePort traffic, so the join
 * service sees each worker's own address and its per-client rate limit and connection cap
 * (lib/join/server.ts) apply per worker, not per node the traffic entered through (with `Cluster`,
 * every worker entering through one node shared one budget). The price: the NodePort answers only
 * on a node that runs the join pod (one replica, on a control-plane node); kube-proxy drops it on
 * the others. Join through that node's address (the printed command names the advertise address of
 * a single control plane) or through a controlPlaneEndpoint load balancer that health-checks port
 * 30000 on every control-plane node, so it sends joins only where the pod runs.
 * @see https://kubernetes.io/docs/tasks/access-application-cluster/create-external-load-balancer/#preserving-the-client-source-ip
 */
function joinServiceNodePort(): Manifest<V1Service> {
  return {
    apiVersion: 'v1', kind: 'Service', metadata: metadata(JOIN_SERVICE_NAME),
    spec: { type: 'NodePort', externalTrafficPolicy: 'Local', selector: { 'app.kubernetes.io/name': JOIN_SERVICE_NAME }, ports: [{ name: 'https', protocol: 'TCP', port: JOIN_SERVICE_PORT, targetPort: JOIN_CONTAINER_PORT, nodePort: JOIN_NODE_PORT }] },
  };
}

/**
 * Every join-service object, in apply order: ServiceAccount, the two reader Roles and RoleBindings
 * (kube-public, kube-system), TLS Secret, Deployment, Service; labelled {@link MANAGED_BY} and
 * `app.kubernetes.io/name: kubeception-join`. Pure: the same input gives deep-equal objects.
 * @throws KubeceptionError `join-service-input`, see {@link checkJoinServiceInput}.
 */
export function joinServiceObjects(config: ResolvedConfig, p: JoinServiceInput): JoinServiceObject[] {
  checkJoinServiceInput(p);
  const serviceAccount: Manifest<V1ServiceAccount> = { apiVersion: 'v1', kind: 'ServiceAccount', metadata: metadata(JOIN_SERVICE_NAME) };
  const tlsSecret: Manifest<V1Secret> = { apiVersion: 'v1', kind: 'Secret', metadata: metadata(JOIN_TLS_SECRET), type: 'kubernetes.io/tls', data: { 'tls.crt': b64(p.tls.certPem), 'tls.key': b64(p.tls.keyPem) } };
  return [
    serviceAccount,
    ...configMapReader(CLUSTER_INFO_NAMESPACE, CLUSTER_INFO_NAME),
    ...configMapReader(NAMESPACE, TOKEN_INDEX_NAME, NODE_IDENTITIES),
    tlsSecret,
    joinDeployment(p.image, config.localAPIEndpoint.bindPort),
    joinServiceNodePort(),
  ];
}
