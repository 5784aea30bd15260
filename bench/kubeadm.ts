/**
 * The peer both bootstrap benchmarks compare against: `kubeadm init` (the bed's build of the same
 * version, same images) on a fresh bed host, with the host's etcd unit (the bed's etcd) started by
 * systemd as external etcd (no etcd image here) and without the CoreDNS addon.
 *
 * On this cgroup v1 machine kubeadm ≥ 1.35 with a kubelet ≥ 1.35 fails its `SystemVerification`
 * preflight and the kubelet refuses to start unless `failCgroupV1: false` (KEP-5573: the default
 * turned true in 1.35); the config ignores every preflight error (`all`, SystemVerification included: kubeadm refuses `all` next to single ids) and sets
 * `failCgroupV1: false` in the KubeletConfiguration, which kubeadm also uploads to the cluster's
 * `kubelet-config` ConfigMap (so `kubeadm join` and `kubeadm upgrade` keep it).
 */
import { K8S_VERSION, type Host } from '../test/bed/bed.ts';

function kubeadmConfig(host: Host, version: string): string {
  return `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint: { advertiseAddress: ${host.ip}, bindPort: 6443 }
nodeRegistration: { name: ${host.name}, criSocket: unix:///run/containerd/containerd.sock, ignorePreflightErrors: [all] }
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: ${version}
etcd: { external: { endpoints: [http://127.0.0.1:2379] } }
networking: { podSubnet: 10.244.0.0/16, serviceSubnet: 10.96.0.0/12 }
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
failSwapOn: false
failCgroupV1: false
`;
}

/**
 * Starts etcd and runs `kubeadm init` of `version` (the host's /usr/local/bin/kubeadm must be that
 * version's: boot it with `kubelet: { version }`) on `host`.
 * @returns wall time in ms, etcd start included. @throws if kubeadm fails (with its last output).
 */
export async function kubeadmInit(host: Host, version = K8S_VERSION): Promise<number> {
  await host.writeFile('/root/kubeadm.yaml', kubeadmConfig(host, version));
  const t0 = Date.now();
  await host.execOk(['systemctl', 'start', 'etcd.service']);
  const r = await host.exec(['kubeadm', 'init', '--config', '/root/kubeadm.yaml', '--skip-phases=addon/coredns'], { timeoutMs: 900_000 });
  if (r.code !== 0) throw new Error(`kubeadm init exited ${r.code}\n${r.stderr.slice(-2000)}`);
  return Date.now() - t0;
}
