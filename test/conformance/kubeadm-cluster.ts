/**
 * The peer of a conformance run: the same bed hosts, binaries and images made into a cluster by
 * `kubeadm init` / `kubeadm join` of the same version (`npm run conformance -- <tier> --peer kubeadm`).
 * etcd is the host's etcd unit (the bed's 3.6 build) as plain-HTTP external etcd, as bench/kubeadm.ts
 * does, or with `etcd: 'stacked'` kubeadm's own default, a local etcd static pod with TLS (its image:
 * test/bed/kubeadm-etcd-image.sh, the bed's etcd build named as kubeadm asks); the pod network is the bed's bridge CNI with a route per peer's pod subnet (kubeadm installs no
 * CNI); kube-proxy and CoreDNS are kubeadm's. On this cgroup v1 machine kubeadm ≥ 1.35 needs its
 * preflight errors ignored (SystemVerification) and `failCgroupV1: false` in the KubeletConfiguration,
 * which init uploads to the `kubelet-config` ConfigMap that joins read. Each worker joins with its own
 * token, given in a JoinConfiguration file (0600), never on a command line.
 */
import type { Host } from '../bed/bed.ts';
import { importImageArchives, routePodSubnets } from '../bed/kubelet.ts';
import { addonImageArchives } from '../bed/addon-images.ts';
import { CACHE_DIR, K8S_VERSION } from '../bed/bed.ts';
import { BED_CRI_SOCKET, kubeadmInitConfig } from '../bed/kubeadm-config.ts';

const CRI = BED_CRI_SOCKET;

const joinConfig = (w: Host, endpoint: string, token: string, hash: string) => `apiVersion: kubeadm.k8s.io/v1beta4
kind: JoinConfiguration
discovery:
  bootstrapToken: { apiServerEndpoint: "${endpoint}", token: "${token}", caCertHashes: ["${hash}"] }
nodeRegistration: { name: ${w.name}, criSocket: ${CRI}, ignorePreflightErrors: [all] }
`;

async function must(host: Host, argv: string[], what: string): Promise<string> {
  const r = await host.exec(argv, { timeoutMs: 900_000 });
  if (r.code !== 0) throw new Error(`${what} on ${host.name} exited ${r.code}\n${r.stdout.slice(-3000)}\n${r.stderr.slice(-3000)}`);
  return r.stdout;
}

/** The archive of kubeadm-etcd-image.sh for `version`: the etcd image kubeadm's stacked etcd asks for. */
export const kubeadmEtcdImage = (version = K8S_VERSION) => `${CACHE_DIR}/images/${version}/kubeadm-etcd.tar`;

/**
 * Makes the kubeadm cluster on `cp` and `workers` (kubelet hosts with the bed's CNI).
 * @param opts.etcd `external` (default): the host's etcd unit; `stacked`: kubeadm's local etcd static pod
 *   (the image of {@link kubeadmEtcdImage} must exist).
 */
export async function kubeadmCluster(cp: Host, workers: Host[], log: (m: string) => void, opts: { etcd?: 'external' | 'stacked' } = {}): Promise<void> {
  const nodes = [cp, ...workers];
  // kubeadm's CoreDNS Deployment asks for the CoreDNS image the bed builds.
  await Promise.all(nodes.map((h) => importImageArchives(h, [addonImageArchives()[0]!])));
  await routePodSubnets(nodes);
  await cp.writeFile('/root/kubeadm.yaml', kubeadmInitConfig(cp, K8S_VERSION, { imagePullPolicy: 'IfNotPresent', kubeProxy: true, etcd: opts.etcd }));
  if (opts.etcd === 'stacked') await importImageArchives(cp, [kubeadmEtcdImage()]);
  else await cp.execOk(['systemctl', 'start', 'etcd.service'], { timeoutMs: 120_000 });
  await must(cp, ['kubeadm', 'init', '--config', '/root/kubeadm.yaml'], 'kubeadm init');
  log('kubeadm init done');
  const hash = (await must(cp, ['sh', '-c', "openssl x509 -pubkey -noout -in /etc/kubernetes/pki/ca.crt | openssl pkey -pubin -outform der | sha256sum | cut -d' ' -f1"], 'CA hash')).trim();
  for (const w of workers) {
    const token = (await must(cp, ['kubeadm', 'token', 'create', '--ttl', '1h'], 'kubeadm token create')).trim();
    await w.writeFile('/root/kubeadm-join.yaml', joinConfig(w, `${cp.ip}:6443`, token, `sha256:${hash}`), 0o600);
    await must(w, ['kubeadm', 'join', '--config', '/root/kubeadm-join.yaml'], 'kubeadm join');
    log(`${w.name} joined (kubeadm)`);
  }
}
