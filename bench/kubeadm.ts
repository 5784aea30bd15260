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
import { kubeadmInitConfig } from '../test/bed/kubeadm-config.ts';

/**
 * Starts etcd and runs `kubeadm init` of `version` (the host's /usr/local/bin/kubeadm must be that
 * version's: boot it with `kubelet: { version }`) on `host`.
 * @returns wall time in ms, etcd start included. @throws if kubeadm fails (with its last output).
 */
export async function kubeadmInit(host: Host, version = K8S_VERSION): Promise<number> {
  await host.writeFile('/root/kubeadm.yaml', kubeadmInitConfig(host, version));
  const t0 = Date.now();
  await host.execOk(['systemctl', 'start', 'etcd.service']);
  const r = await host.exec(['kubeadm', 'init', '--config', '/root/kubeadm.yaml', '--skip-phases=addon/coredns'], { timeoutMs: 900_000 });
  if (r.code !== 0) throw new Error(`kubeadm init exited ${r.code}\n${r.stderr.slice(-2000)}`);
  return Date.now() - t0;
}
