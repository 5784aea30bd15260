/**
 * The kubeadm configuration the bed's kubeadm peers use (bench/kubeadm.ts, the conformance peer
 * test/conformance/kubeadm-cluster.ts, the CIS peer test/cis/run.ts): `kubeadm init` on one bed host with
 * the host's etcd unit as plain-HTTP external etcd (or, with `etcd: 'stacked'`, kubeadm's default: a
 * local etcd static pod with its own TLS, from test/bed/kubeadm-etcd-image.sh's image), containerd, the
 * bed's pod and service ranges, and the kubelet settings this cgroup v1 machine needs (`failCgroupV1: false`, a systemd cgroup driver, swap allowed). kubeadm's own
 * types: kubeadm.k8s.io/v1beta4, kubelet.config.k8s.io/v1beta1, kubeproxy.config.k8s.io/v1alpha1.
 */
import type { Host } from './bed.ts';

/** The bed's containerd socket, as kubeadm's `criSocket`. */
export const BED_CRI_SOCKET = 'unix:///run/containerd/containerd.sock';

/**
 * A multi-document kubeadm config (InitConfiguration, ClusterConfiguration, KubeletConfiguration and,
 * with `kubeProxy`, a KubeProxyConfiguration that leaves the bed's conntrack limits alone).
 * @param opts.imagePullPolicy the node registration's (default: kubeadm's).
 * @param opts.etcd `external` (default): the host's etcd unit at http://127.0.0.1:2379; `stacked`: no
 *   `etcd` section, so kubeadm runs its local etcd static pod (its CIS-relevant default).
 */
export function kubeadmInitConfig(host: Host, version: string, opts: { imagePullPolicy?: 'IfNotPresent'; kubeProxy?: boolean; etcd?: 'external' | 'stacked' } = {}): string {
  const pull = opts.imagePullPolicy ? `, imagePullPolicy: ${opts.imagePullPolicy}` : '';
  return `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint: { advertiseAddress: ${host.ip}, bindPort: 6443 }
nodeRegistration: { name: ${host.name}, criSocket: ${BED_CRI_SOCKET}, ignorePreflightErrors: [all]${pull} }
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: ${version}
${opts.etcd === 'stacked' ? '' : 'etcd: { external: { endpoints: [http://127.0.0.1:2379] } }\n'}networking: { podSubnet: 10.244.0.0/16, serviceSubnet: 10.96.0.0/12 }
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
failSwapOn: false
failCgroupV1: false
${opts.kubeProxy ? `---
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
conntrack: { maxPerCore: 0 }
` : ''}`;
}
