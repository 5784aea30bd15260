/**
 * The flannel pod network, as flannel's own `kube-flannel.yml` deploys it, in kube-system (where the
 * original kubeception and Typhoon run it): ServiceAccount, ClusterRole and ClusterRoleBinding
 * `flannel`, ConfigMap `kube-flannel-cfg` (the CNI config and `net-conf.json`), DaemonSet
 * `kube-flannel-ds`. flanneld runs with `--kube-subnet-mgr`: each node's subnet is its
 * `spec.podCIDR`, which kube-controller-manager allocates from `networking.podSubnet`
 * (`--allocate-node-cidrs`), so `Network` here must be that same range.
 *
 * Host effects of the DaemonSet on every node: `/opt/cni/bin/flannel` (init container
 * `install-cni-plugin`), `/etc/cni/net.d/10-flannel.conflist` (init container `install-cni`),
 * `/run/flannel/subnet.env`, the `flannel.1` VXLAN device (or host-gw routes) and masquerade rules.
 *
 * flanneld reads its ConfigMap only when it starts, so the pod template carries a digest of it
 * ({@link FLANNEL_CONFIG_DIGEST}): a changed backend or CNI config rolls the DaemonSet, node by node.
 * flannel ignores the leases of nodes on another backend, so pods on nodes already rolled and pods on
 * nodes not yet rolled do not reach each other until the roll is done.
 * @see https://github.com/flannel-io/flannel/blob/v0.28.4/Documentation/kube-flannel.yml
 * @see https://github.com/flannel-io/flannel/blob/v0.28.4/Documentation/configuration.md
 */
import { createHash } from 'node:crypto';
import type { V1ClusterRole, V1ClusterRoleBinding, V1ConfigMap, V1DaemonSet, V1ServiceAccount } from '@kubernetes/client-node';
import { parseCidr } from '../../lib/net/cidr.ts';
import type { ResolvedConfig } from '../../lib/types.ts';
import { MANAGED_BY, NAMESPACE, type Manifest } from '../common.ts';
import type { AddonObject } from './coredns.ts';

/** Where the container runtime reads CNI configs and finds CNI plugins (containerd's and CRI-O's defaults). */
export const CNI_CONF_DIR = '/etc/cni/net.d';
export const CNI_BIN_DIR = '/opt/cni/bin';
/** The CNI config flannel's init container writes; the runtime uses the first config in name order. */
export const FLANNEL_CONFLIST = '10-flannel.conflist';
/** The VXLAN device flanneld creates (VNI 1). */
export const FLANNEL_VXLAN_DEVICE = 'flannel.1';
export const FLANNEL_DAEMONSET = 'kube-flannel-ds';

const NAME = 'flannel';
const CFG = 'kube-flannel-cfg';
/** Pod-template annotation: SHA-256 (hex) of the ConfigMap's data (`cni-conf.json`, `net-conf.json`). */
export const FLANNEL_CONFIG_DIGEST = 'kubeception.io/flannel-config-sha256';

/** The ConfigMap's data: the CNI config and `net-conf.json`, as flanneld and its init container read them. */
function flannelConfigData(config: ResolvedConfig): Record<string, string> {
  return { 'cni-conf.json': `${JSON.stringify(flannelCniConf(), null, 2)}\n`, 'net-conf.json': `${JSON.stringify(flannelNetConf(config), null, 2)}\n` };
}

const labels = () => ({ tier: 'node', app: NAME, 'k8s-app': NAME, ...MANAGED_BY });

/** The CNI config: the flannel plugin delegating to bridge (hairpin, default gateway), then portmap. */
export function flannelCniConf(): Record<string, unknown> {
  return {
    name: 'cbr0',
    cniVersion: '0.3.1',
    plugins: [
      { type: 'flannel', delegate: { hairpinMode: true, isDefaultGateway: true } },
      { type: 'portmap', capabilities: { portMappings: true } },
    ],
  };
}

/** `net-conf.json`: the pod network (`podSubnet`, IPv4 or IPv6-only) and the backend. */
export function flannelNetConf(config: ResolvedConfig): Record<string, unknown> {
  const pod = parseCidr(config.networking.podSubnet);
  const v6 = typeof pod !== 'string' && pod.family === 'ipv6';
  const family = v6 ? { EnableIPv4: false, EnableIPv6: true, IPv6Network: config.networking.podSubnet } : { Network: config.networking.podSubnet };
  return { ...family, EnableNFTables: false, Backend: { Type: config.podNetwork.flannel.backend } };
}

function daemonSet(config: ResolvedConfig): Manifest<V1DaemonSet> {
  const { image, cniPluginImage } = config.podNetwork.flannel;
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name: FLANNEL_DAEMONSET, namespace: NAMESPACE, labels: labels() },
    spec: {
      selector: { matchLabels: { app: NAME } },
      template: {
        metadata: { labels: labels(), annotations: { [FLANNEL_CONFIG_DIGEST]: createHash('sha256').update(JSON.stringify(flannelConfigData(config))).digest('hex') } },
        spec: {
          affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/os', operator: 'In', values: ['linux'] }] }] } } },
          hostNetwork: true,
          priorityClassName: 'system-node-critical',
          tolerations: [{ operator: 'Exists', effect: 'NoSchedule' }],
          serviceAccountName: NAME,
          initContainers: [
            { name: 'install-cni-plugin', image: cniPluginImage, imagePullPolicy: 'IfNotPresent', command: ['cp'], args: ['-f', '/flannel', `${CNI_BIN_DIR}/flannel`], volumeMounts: [{ name: 'cni-plugin', mountPath: CNI_BIN_DIR }] },
            {
              name: 'install-cni', image, imagePullPolicy: 'IfNotPresent', command: ['cp'], args: ['-f', '/etc/kube-flannel/cni-conf.json', `${CNI_CONF_DIR}/${FLANNEL_CONFLIST}`],
              volumeMounts: [{ name: 'cni', mountPath: CNI_CONF_DIR }, { name: 'flannel-cfg', mountPath: '/etc/kube-flannel/' }],
            },
          ],
          containers: [{
            name: 'kube-flannel',
            image,
            imagePullPolicy: 'IfNotPresent',
            command: ['/opt/bin/flanneld'],
            args: ['--ip-masq', '--kube-subnet-mgr'],
            resources: { requests: { cpu: '100m', memory: '50Mi' } },
            securityContext: { privileged: false, capabilities: { add: ['NET_ADMIN', 'NET_RAW'] } },
            env: [
              { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
              { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
              { name: 'EVENT_QUEUE_DEPTH', value: '5000' },
              { name: 'CONT_WHEN_CACHE_NOT_READY', value: 'false' },
            ],
            volumeMounts: [
              { name: 'run', mountPath: '/run/flannel' },
              { name: 'flannel-cfg', mountPath: '/etc/kube-flannel/' },
              { name: 'xtables-lock', mountPath: '/run/xtables.lock' },
            ],
          }],
          volumes: [
            { name: 'run', hostPath: { path: '/run/flannel' } },
            { name: 'cni-plugin', hostPath: { path: CNI_BIN_DIR } },
            { name: 'cni', hostPath: { path: CNI_CONF_DIR } },
            { name: 'flannel-cfg', configMap: { name: CFG } },
            { name: 'xtables-lock', hostPath: { path: '/run/xtables.lock', type: 'FileOrCreate' } },
          ],
        },
      },
    },
  };
}

/** Every flannel object in apply order (RBAC, ConfigMap, DaemonSet). Pure. */
export function flannelObjects(config: ResolvedConfig): AddonObject[] {
  const sa: Manifest<V1ServiceAccount> = { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: NAME, namespace: NAMESPACE, labels: labels() } };
  const role: Manifest<V1ClusterRole> = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: NAME, labels: { 'k8s-app': NAME, ...MANAGED_BY } },
    rules: [
      { apiGroups: [''], resources: ['pods'], verbs: ['get'] },
      { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'watch'] },
      { apiGroups: [''], resources: ['nodes/status'], verbs: ['patch'] },
    ],
  };
  const binding: Manifest<V1ClusterRoleBinding> = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: NAME, labels: { 'k8s-app': NAME, ...MANAGED_BY } },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: NAME },
    subjects: [{ kind: 'ServiceAccount', name: NAME, namespace: NAMESPACE }],
  };
  const cm: Manifest<V1ConfigMap> = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: CFG, namespace: NAMESPACE, labels: labels() },
    data: flannelConfigData(config),
  };
  return [sa, role, binding, cm, daemonSet(config)];
}
