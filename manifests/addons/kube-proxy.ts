/**
 * The kube-proxy addon, as kubeadm's `addon/kube-proxy` phase applies it: a ServiceAccount bound to
 * `system:node-proxier`, a ConfigMap with the KubeProxyConfiguration and a kubeconfig that
 * authenticates with the pod's ServiceAccount token, and a privileged `hostNetwork` DaemonSet on
 * every node.
 *
 * Configured for hosts whose `/proc/sys` is read-only (nodes that are themselves containers):
 * kube-proxy then writes no sysctl. `conntrack.maxPerCore: 0` leaves `nf_conntrack_max` alone, zero
 * TCP timeouts leave `nf_conntrack_tcp_timeout_*` alone, and `iptables.localhostNodePorts: false`
 * skips `net.ipv4.conf.all.route_localnet=1`, which kube-proxy otherwise treats as fatal to set (so
 * NodePorts do not answer on 127.0.0.1; they do on every node address).
 * @see https://kubernetes.io/docs/reference/config-api/kube-proxy-config.v1alpha1/
 * @see kubernetes/cmd/kubeadm/app/phases/addons/proxy/manifests.go
 */
import type { V1ClusterRoleBinding, V1ConfigMap, V1DaemonSet, V1ServiceAccount } from '@kubernetes/client-node';
import { ipFamily } from '../../lib/net/cidr.ts';
import { apiserverUrls } from '../../lib/k8s/endpoints.ts';
import type { ResolvedConfig } from '../../lib/types.ts';
import { toYaml } from '../../lib/util/yaml.ts';
import { image, MANAGED_BY, NAMESPACE, type Manifest, type ManifestObject } from '../common.ts';

const NAME = 'kube-proxy';
/** Where the ConfigMap is mounted, and its keys (kubeadm's). */
const CONFIG_DIR = '/var/lib/kube-proxy';
const CONFIG_KEY = 'config.conf';
const KUBECONFIG_KEY = 'kubeconfig.conf';
/** The projected ServiceAccount token volume every pod gets. */
const SA_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** Fresh each call, so no two objects share (and a caller's edit of one cannot change another). */
const labels = () => ({ 'k8s-app': NAME, ...MANAGED_BY });
const metadata = () => ({ name: NAME, namespace: NAMESPACE, labels: labels() });

/**
 * The KubeProxyConfiguration. kube-proxy 1.34 falls back to lenient decoding on an unknown field
 * (it logs and ignores it), so a misspelt field silently does nothing: the tests pin every name.
 * `bindAddress` is `0.0.0.0`, or `::` on an IPv6 control plane (kubeadm's choice), which also moves
 * the healthz default to `[::]:10256`.
 */
export function kubeProxyConfiguration(config: ResolvedConfig): Record<string, unknown> {
  return {
    apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
    kind: 'KubeProxyConfiguration',
    bindAddress: ipFamily(config.localAPIEndpoint.advertiseAddress) === 6 ? '::' : '0.0.0.0',
    clientConnection: { kubeconfig: `${CONFIG_DIR}/${KUBECONFIG_KEY}` },
    clusterCIDR: config.networking.podSubnet,
    mode: 'iptables',
    iptables: { localhostNodePorts: false },
    conntrack: { maxPerCore: 0, tcpEstablishedTimeout: '0s', tcpCloseWaitTimeout: '0s' },
  };
}

/**
 * kube-proxy's kubeconfig: the final apiserver (kube-proxy programs the `kubernetes` Service, so it
 * cannot use it), the cluster CA and token of the pod's ServiceAccount.
 */
export function kubeProxyKubeconfig(config: ResolvedConfig): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'default', cluster: { 'certificate-authority': `${SA_DIR}/ca.crt`, server: apiserverUrls(config).final } }],
    contexts: [{ name: 'default', context: { cluster: 'default', namespace: 'default', user: 'default' } }],
    'current-context': 'default',
    users: [{ name: 'default', user: { tokenFile: `${SA_DIR}/token` } }],
  };
}

function daemonSet(config: ResolvedConfig): Manifest<V1DaemonSet> {
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: metadata(),
    spec: {
      selector: { matchLabels: { 'k8s-app': NAME } },
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } },
      template: {
        metadata: { labels: labels() },
        spec: {
          hostNetwork: true,
          priorityClassName: 'system-node-critical',
          serviceAccountName: NAME,
          nodeSelector: { 'kubernetes.io/os': 'linux' },
          tolerations: [{ operator: 'Exists' }],
          containers: [{
            name: NAME,
            image: image(config, NAME),
            imagePullPolicy: 'IfNotPresent',
            command: ['/usr/local/bin/kube-proxy', `--config=${CONFIG_DIR}/${CONFIG_KEY}`, '--hostname-override=$(NODE_NAME)'],
            env: [{ name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } }],
            securityContext: { privileged: true },
            volumeMounts: [
              { name: NAME, mountPath: CONFIG_DIR, readOnly: true },
              // iptables takes a flock on it: read-write.
              { name: 'xtables-lock', mountPath: '/run/xtables.lock' },
              { name: 'lib-modules', mountPath: '/lib/modules', readOnly: true },
            ],
          }],
          volumes: [
            { name: NAME, configMap: { name: NAME } },
            { name: 'xtables-lock', hostPath: { path: '/run/xtables.lock', type: 'FileOrCreate' } },
            { name: 'lib-modules', hostPath: { path: '/lib/modules' } },
          ],
        },
      },
    },
  };
}

/**
 * kube-proxy's objects in apply order: ServiceAccount, ClusterRoleBinding `kubeadm:node-proxier`,
 * ConfigMap `kube-proxy` (`config.conf`, `kubeconfig.conf` as YAML), DaemonSet.
 */
export function kubeProxyObjects(config: ResolvedConfig): ManifestObject[] {
  const sa: Manifest<V1ServiceAccount> = { apiVersion: 'v1', kind: 'ServiceAccount', metadata: metadata() };
  const binding: Manifest<V1ClusterRoleBinding> = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: 'kubeadm:node-proxier', labels: { ...MANAGED_BY } },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:node-proxier' },
    subjects: [{ kind: 'ServiceAccount', name: NAME, namespace: NAMESPACE }],
  };
  const configMap: Manifest<V1ConfigMap> = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: metadata(),
    data: { [CONFIG_KEY]: toYaml(kubeProxyConfiguration(config)), [KUBECONFIG_KEY]: toYaml(kubeProxyKubeconfig(config)) },
  };
  return [sa, binding, configMap, daemonSet(config)];
}
