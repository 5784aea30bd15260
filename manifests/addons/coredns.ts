/**
 * The CoreDNS addon, as kubeadm's `addon/coredns` phase installs it: ServiceAccount `coredns`,
 * ClusterRole/ClusterRoleBinding `system:coredns`, ConfigMap `coredns` (the Corefile), Deployment
 * `coredns` and Service `kube-dns` at the tenth address of `serviceSubnet`.
 *
 * Differences from kubeadm's, on purpose: the pods run as a non-root user (65532) with every
 * capability dropped; binding port 53 comes from the namespaced, kubelet-safe sysctl
 * `net.ipv4.ip_unprivileged_port_start=53` instead of `NET_BIND_SERVICE` (which a non-root process
 * only gets from file capabilities on the binary). Otherwise kubeadm's shape: 2 replicas spread over
 * nodes by preferred anti-affinity, `system-cluster-critical`, read-only root, `dnsPolicy: Default`
 * (so `forward . /etc/resolv.conf` reaches the node's upstream resolvers).
 * @see kubernetes/cmd/kubeadm/app/phases/addons/dns/manifests.go
 */
import type { V1ClusterRole, V1ClusterRoleBinding, V1ConfigMap, V1Deployment, V1Service, V1ServiceAccount } from '@kubernetes/client-node';
import { CONTROL_PLANE_LABEL } from '../../lib/constants.ts';
import { clusterDNSIP } from '../../lib/net/cidr.ts';
import type { ResolvedConfig } from '../../lib/types.ts';
import { MANAGED_BY, NAMESPACE, type Manifest } from '../common.ts';

const NAME = 'coredns';
/** The label kube-dns and CoreDNS have always used; the Service selects it. */
const APP = { 'k8s-app': 'kube-dns' } as const;
/** distroless's `nonroot` user and group. */
export const COREDNS_UID = 65532;
export const COREDNS_REPLICAS = 2;

/** Any object the addon builders return. */
export type AddonObject = Manifest<V1ServiceAccount | V1ClusterRole | V1ClusterRoleBinding | V1ConfigMap | V1Deployment | V1Service>;

const labels = () => ({ ...APP, ...MANAGED_BY });

/**
 * kubeadm's Corefile for `dnsDomain`: the kubernetes plugin answers the cluster domain and reverse
 * zones, everything else goes to the node's resolvers; health (8080, lameduck 5 s), ready (8181),
 * metrics (9153), cache 30 s (not for the cluster domain), loop detection, reload, loadbalance.
 */
export function corefile(dnsDomain: string): string {
  return `.:53 {
    errors
    health {
       lameduck 5s
    }
    ready
    kubernetes ${dnsDomain} in-addr.arpa ip6.arpa {
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }
    prometheus :9153
    forward . /etc/resolv.conf {
       max_concurrent 1000
    }
    cache 30 {
       disable success ${dnsDomain}
       disable denial ${dnsDomain}
    }
    loop
    reload
    loadbalance
}
`;
}

function rbac(): AddonObject[] {
  const role: Manifest<V1ClusterRole> = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: 'system:coredns', labels: { ...MANAGED_BY } },
    rules: [
      { apiGroups: [''], resources: ['endpoints', 'services', 'pods', 'namespaces'], verbs: ['list', 'watch'] },
      { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
    ],
  };
  const binding: Manifest<V1ClusterRoleBinding> = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: 'system:coredns', labels: { ...MANAGED_BY } },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:coredns' },
    subjects: [{ kind: 'ServiceAccount', name: NAME, namespace: NAMESPACE }],
  };
  return [{ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: NAME, namespace: NAMESPACE, labels: labels() } }, role, binding];
}

/** The Deployment. `replicas`: default {@link COREDNS_REPLICAS}; the addon step passes the current count so an operator's scaling survives. */
export function coreDNSDeployment(config: ResolvedConfig, replicas = COREDNS_REPLICAS): Manifest<V1Deployment> {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: NAME, namespace: NAMESPACE, labels: labels() },
    spec: {
      replicas,
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } },
      selector: { matchLabels: { ...APP } },
      template: {
        metadata: { labels: labels() },
        spec: {
          priorityClassName: 'system-cluster-critical',
          serviceAccountName: NAME,
          affinity: {
            podAntiAffinity: {
              preferredDuringSchedulingIgnoredDuringExecution: [
                { weight: 100, podAffinityTerm: { labelSelector: { matchExpressions: [{ key: 'k8s-app', operator: 'In', values: ['kube-dns'] }] }, topologyKey: 'kubernetes.io/hostname' } },
              ],
            },
          },
          tolerations: [{ key: 'CriticalAddonsOnly', operator: 'Exists' }, { key: CONTROL_PLANE_LABEL, effect: 'NoSchedule' }],
          nodeSelector: { 'kubernetes.io/os': 'linux' },
          securityContext: {
            runAsNonRoot: true,
            runAsUser: COREDNS_UID,
            runAsGroup: COREDNS_UID,
            seccompProfile: { type: 'RuntimeDefault' },
            sysctls: [{ name: 'net.ipv4.ip_unprivileged_port_start', value: '53' }],
          },
          containers: [{
            name: NAME,
            image: config.dns.image,
            imagePullPolicy: 'IfNotPresent',
            args: ['-conf', '/etc/coredns/Corefile'],
            resources: { limits: { memory: '170Mi' }, requests: { cpu: '100m', memory: '70Mi' } },
            volumeMounts: [{ name: 'config-volume', mountPath: '/etc/coredns', readOnly: true }],
            ports: [
              { containerPort: 53, name: 'dns', protocol: 'UDP' },
              { containerPort: 53, name: 'dns-tcp', protocol: 'TCP' },
              { containerPort: 9153, name: 'metrics', protocol: 'TCP' },
              { containerPort: 8080, name: 'liveness-probe', protocol: 'TCP' },
              { containerPort: 8181, name: 'readiness-probe', protocol: 'TCP' },
            ],
            livenessProbe: { httpGet: { path: '/health', port: 'liveness-probe', scheme: 'HTTP' }, initialDelaySeconds: 60, timeoutSeconds: 5, successThreshold: 1, failureThreshold: 5 },
            readinessProbe: { httpGet: { path: '/ready', port: 'readiness-probe', scheme: 'HTTP' }, periodSeconds: 2 },
            securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, readOnlyRootFilesystem: true },
          }],
          dnsPolicy: 'Default',
          volumes: [{ name: 'config-volume', configMap: { name: NAME, items: [{ key: 'Corefile', path: 'Corefile' }] } }],
        },
      },
    },
  };
}

/** Service `kube-dns` at {@link clusterDNSIP}: 53/UDP, 53/TCP, 9153 metrics (kubeadm's). */
export function kubeDNSService(config: ResolvedConfig): Manifest<V1Service> {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: 'kube-dns',
      namespace: NAMESPACE,
      labels: { ...APP, 'kubernetes.io/cluster-service': 'true', 'kubernetes.io/name': 'CoreDNS', ...MANAGED_BY },
      annotations: { 'prometheus.io/port': '9153', 'prometheus.io/scrape': 'true' },
    },
    spec: {
      clusterIP: clusterDNSIP(config.networking.serviceSubnet),
      selector: { ...APP },
      ports: [
        { name: 'dns', port: 53, protocol: 'UDP', targetPort: 53 },
        { name: 'dns-tcp', port: 53, protocol: 'TCP', targetPort: 53 },
        { name: 'metrics', port: 9153, protocol: 'TCP', targetPort: 9153 },
      ],
    },
  };
}

/**
 * Every CoreDNS object in apply order (RBAC, ConfigMap, Deployment, Service). Pure.
 * @param replicas the Deployment's replica count (default {@link COREDNS_REPLICAS}).
 */
export function coreDNSObjects(config: ResolvedConfig, replicas = COREDNS_REPLICAS): AddonObject[] {
  const configMap: Manifest<V1ConfigMap> = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: NAME, namespace: NAMESPACE, labels: labels() },
    data: { Corefile: corefile(config.networking.dnsDomain) },
  };
  return [...rbac(), configMap, coreDNSDeployment(config, replicas), kubeDNSService(config)];
}
