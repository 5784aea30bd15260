/**
 * The join service as cluster objects: kubeception itself (`kubeception serve-join`) as a one-replica
 * Deployment on a control-plane node, serving HTTPS with a certificate from the cluster CA behind
 * NodePort {@link JOIN_NODE_PORT}, where `kubeception run join --url https://<node>:30000` finds it.
 * It reads bootstrap-token Secrets with its ServiceAccount, and only the ones named here.
 *
 * The pod runs as `nobody` (65534) on a read-only root; `/tmp` is an emptyDir because tsx, which loads
 * kubeception's TypeScript, keeps its compile cache there and fails without it. The TLS Secret's files
 * are mode 0440, group 65534 (`fsGroup`). Requests 10m CPU and 192Mi: an idle `serve-join` used
 * ≈190 MiB of pod cgroup memory (RSS ≈220 MiB: Node 20, tsx's loader thread, the Kubernetes client)
 * on the test bed; it is ready ≈6 s after the container starts (tsx compiles the sources on each start).
 * @see https://kubernetes.io/docs/concepts/security/pod-security-standards/ (restricted)
 */
import type { V1Deployment, V1Role, V1RoleBinding, V1Secret, V1Service, V1ServiceAccount } from '@kubernetes/client-node';
import { KubeceptionError } from '../lib/errors.ts';
import { JOIN_NODE_PORT } from '../lib/constants.ts';
import { apiserverUrls } from '../lib/k8s/endpoints.ts';
import type { ResolvedConfig } from '../lib/types.ts';
import { controlPlaneSelector, controlPlaneTolerations, MANAGED_BY, NAMESPACE, type Manifest, type ManifestObject } from './common.ts';

/** Name of the ServiceAccount, Deployment, Service and container; value of `app.kubernetes.io/name`. */
export const JOIN_SERVICE_NAME = 'kubeception-join';
/** The `kubernetes.io/tls` Secret with `tls.crt`, `tls.key` and `ca.crt`. */
export const JOIN_TLS_SECRET = 'kubeception-join-tls';
/** The Role (and RoleBinding) that lets the join service read the named token Secrets. */
export const JOIN_TOKEN_READER_ROLE = 'kubeception:join-token-reader';
/** Port `serve-join` listens on inside the pod (the Service's `targetPort`). */
export const JOIN_CONTAINER_PORT = 8443;
/** Port of the Service's ClusterIP. */
export const JOIN_SERVICE_PORT = 443;
/** Where the TLS Secret is mounted (`serve-join --tls-dir`). */
export const JOIN_TLS_DIR = '/etc/kubeception/tls';
/** The image's user: `nobody`. */
export const JOIN_UID = 65534;
/**
 * The only `resourceNames` entry when there is no token: a name no bootstrap token can have (ids are
 * 6 characters), because an empty `resourceNames` list grants every Secret in the namespace.
 */
export const NO_TOKEN_SECRET = 'bootstrap-token-none';

/** What a bootstrap token's Secret is called: `bootstrap-token-<id>`, id `[a-z0-9]{6}`. */
const TOKEN_SECRET_RE = /^bootstrap-token-[a-z0-9]{6}$/;

/** A Role, RoleBinding or Service, or any object of {@link ManifestObject}. */
export type JoinServiceObject = ManifestObject | Manifest<V1Role> | Manifest<V1RoleBinding> | Manifest<V1Service>;

/** Inputs of {@link joinServiceObjects}, read by the caller. */
export interface JoinServiceInput {
  /** kubeception's image, e.g. `localhost/kubeception:v0.1.0` (pulled `IfNotPresent`). */
  image: string;
  /** PEM text: the serving certificate and key (signed by the cluster CA) and the cluster CA certificate. */
  tls: { certPem: string; keyPem: string; caPem: string };
  /** Secrets the service may read: `bootstrap-token-<id>` each; empty for none. */
  tokenSecretNames: string[];
}

const labels = () => ({ ...MANAGED_BY, 'app.kubernetes.io/name': JOIN_SERVICE_NAME });
const metadata = (name: string) => ({ name, namespace: NAMESPACE, labels: labels() });
const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');

function inputError(what: string, why: string, fix: string): KubeceptionError {
  return new KubeceptionError('join-service-input', { what, why, fix });
}

/**
 * Checks the inputs before any object is built.
 * @throws KubeceptionError `join-service-input` for an empty image, a TLS field that is not PEM, or a
 * token Secret name that is not `bootstrap-token-<[a-z0-9]{6}>` (the Role must never name other Secrets).
 */
export function checkJoinServiceInput(p: JoinServiceInput): void {
  if (!p.image.trim()) throw inputError('image', 'is empty', 'pass the kubeception image reference');
  for (const [field, text] of Object.entries(p.tls))
    if (!text.includes('-----BEGIN ')) throw inputError(`tls.${field}`, 'missing or not PEM', 'pass the join service certificate, its key and the cluster CA certificate as PEM');
  for (const name of p.tokenSecretNames)
    if (!TOKEN_SECRET_RE.test(name)) throw inputError(`tokenSecretNames: ${name}`, 'is not a bootstrap token Secret name (bootstrap-token-<6 of [a-z0-9]>)', 'pass only the names of bootstrap token Secrets');
}

/**
 * The Role's `resourceNames`: the names sorted and deduplicated (deterministic whatever the input
 * order), or [{@link NO_TOKEN_SECRET}] when there are none. Never empty.
 */
export function tokenResourceNames(names: readonly string[]): string[] {
  return names.length ? [...new Set(names)].sort() : [NO_TOKEN_SECRET];
}

/** `get` on the named Secrets in kube-system, nothing else (no list/watch: names are known). */
export function tokenReaderRole(names: readonly string[]): Manifest<V1Role> {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: metadata(JOIN_TOKEN_READER_ROLE),
    rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['get'], resourceNames: tokenResourceNames(names) }],
  };
}

function tokenReaderBinding(): Manifest<V1RoleBinding> {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: metadata(JOIN_TOKEN_READER_ROLE),
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: JOIN_TOKEN_READER_ROLE },
    subjects: [{ kind: 'ServiceAccount', name: JOIN_SERVICE_NAME, namespace: NAMESPACE }],
  };
}

/** The `kubernetes.io/tls` Secret, base64 `data` (what the apiserver stores, so re-applying is a no-op). */
function tlsSecret(tls: JoinServiceInput['tls']): Manifest<V1Secret> {
  return {
    apiVersion: 'v1', kind: 'Secret', metadata: metadata(JOIN_TLS_SECRET), type: 'kubernetes.io/tls',
    data: { 'tls.crt': b64(tls.certPem), 'tls.key': b64(tls.keyPem), 'ca.crt': b64(tls.caPem) },
  };
}

/** The Deployment: `serve-join` handing workers the final apiserver URL (IPv6 bracketed). */
export function joinDeployment(config: ResolvedConfig, image: string): Manifest<V1Deployment> {
  const args = ['serve-join', '--listen', `0.0.0.0:${JOIN_CONTAINER_PORT}`, '--tls-dir', JOIN_TLS_DIR, '--apiserver', apiserverUrls(config).final];
  return {
    apiVersion: 'apps/v1', kind: 'Deployment', metadata: metadata(JOIN_SERVICE_NAME),
    spec: {
      replicas: 1,
      selector: { matchLabels: { 'app.kubernetes.io/name': JOIN_SERVICE_NAME } },
      template: {
        metadata: { labels: labels() },
        spec: {
          serviceAccountName: JOIN_SERVICE_NAME,
          automountServiceAccountToken: true,
          nodeSelector: controlPlaneSelector(),
          tolerations: controlPlaneTolerations(),
          securityContext: { runAsNonRoot: true, runAsUser: JOIN_UID, runAsGroup: JOIN_UID, fsGroup: JOIN_UID, seccompProfile: { type: 'RuntimeDefault' } },
          containers: [{
            name: JOIN_SERVICE_NAME,
            image,
            imagePullPolicy: 'IfNotPresent',
            args,
            ports: [{ name: 'https', containerPort: JOIN_CONTAINER_PORT, protocol: 'TCP' }],
            readinessProbe: { tcpSocket: { port: JOIN_CONTAINER_PORT }, periodSeconds: 2, failureThreshold: 3 },
            resources: { requests: { cpu: '10m', memory: '192Mi' } },
            securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
            volumeMounts: [{ name: 'tls', mountPath: JOIN_TLS_DIR, readOnly: true }, { name: 'tmp', mountPath: '/tmp' }],
          }],
          volumes: [
            { name: 'tls', secret: { secretName: JOIN_TLS_SECRET, defaultMode: 0o440 } },
            { name: 'tmp', emptyDir: { sizeLimit: '64Mi' } },
          ],
        },
      },
    },
  };
}

/** NodePort {@link JOIN_NODE_PORT} (and ClusterIP port 443) → the pod's 8443. */
function joinServiceNodePort(): Manifest<V1Service> {
  return {
    apiVersion: 'v1', kind: 'Service', metadata: metadata(JOIN_SERVICE_NAME),
    spec: {
      type: 'NodePort',
      selector: { 'app.kubernetes.io/name': JOIN_SERVICE_NAME },
      ports: [{ name: 'https', protocol: 'TCP', port: JOIN_SERVICE_PORT, targetPort: JOIN_CONTAINER_PORT, nodePort: JOIN_NODE_PORT }],
    },
  };
}

/**
 * Every join-service object, in apply order: ServiceAccount, Role, RoleBinding, TLS Secret,
 * Deployment, Service; all in kube-system, labelled {@link MANAGED_BY} and
 * `app.kubernetes.io/name: kubeception-join`. Pure: the same input gives deep-equal objects.
 * Re-apply with the current token names whenever a token is created or deleted.
 * @throws KubeceptionError `join-service-input`, see {@link checkJoinServiceInput}.
 */
export function joinServiceObjects(config: ResolvedConfig, p: JoinServiceInput): JoinServiceObject[] {
  checkJoinServiceInput(p);
  const serviceAccount: Manifest<V1ServiceAccount> = { apiVersion: 'v1', kind: 'ServiceAccount', metadata: metadata(JOIN_SERVICE_NAME) };
  return [
    serviceAccount,
    tokenReaderRole(p.tokenSecretNames),
    tokenReaderBinding(),
    tlsSecret(p.tls),
    joinDeployment(config, p.image),
    joinServiceNodePort(),
  ];
}
