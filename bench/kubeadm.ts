/**
 * The peer both bootstrap benchmarks compare against: `kubeadm init` (same v1.34.4 build, same images)
 * on a fresh bed host, with Debian's etcd started by systemd as external etcd (no etcd image here) and
 * without the CoreDNS addon (no CoreDNS image here).
 */
import type { Host } from '../test/bed/bed.ts';

function kubeadmConfig(host: Host): string {
  return `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint: { advertiseAddress: ${host.ip}, bindPort: 6443 }
nodeRegistration: { name: ${host.name}, criSocket: unix:///run/containerd/containerd.sock, ignorePreflightErrors: [all] }
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.34.4
etcd: { external: { endpoints: [http://127.0.0.1:2379] } }
networking: { podSubnet: 10.244.0.0/16, serviceSubnet: 10.96.0.0/12 }
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
failSwapOn: false
`;
}

/**
 * Starts etcd and runs `kubeadm init` on `host`.
 * @returns wall time in ms, etcd start included. @throws if kubeadm fails (with its last output).
 */
export async function kubeadmInit(host: Host): Promise<number> {
  await host.writeFile('/root/kubeadm.yaml', kubeadmConfig(host));
  const t0 = Date.now();
  await host.execOk(['systemctl', 'start', 'etcd.service']);
  const r = await host.exec(['kubeadm', 'init', '--config', '/root/kubeadm.yaml', '--skip-phases=addon/coredns'], { timeoutMs: 900_000 });
  if (r.code !== 0) throw new Error(`kubeadm init exited ${r.code}\n${r.stderr.slice(-2000)}`);
  return Date.now() - t0;
}
