/**
 * When a kubeception control plane has settled after `run bootstrap`: the bootstrap
 * controller-manager's port is closed, the self-hosted one has renewed the lease since, and its CSR
 * signer's informer has synced ({@link csrSignerSynced}). Until then
 * no CSR is signed (the removed bootstrap instance's lease runs out first, ≈ 10 s) and the
 * self-hosted pods are still starting beside whatever a benchmark times. Both benchmarks that time
 * something after a bootstrap (the converged re-run, the join) wait for this, as the kubeadm side's
 * controller-manager has run since `kubeadm init`.
 */
import type { Host } from '../test/bed/bed.ts';

const ADMIN = '/etc/kubernetes/admin.conf';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits (≤ 60 s, polling every 250 ms) until the self-hosted controller-manager leads and signs a probe CSR. @returns ms waited. @throws after 60 s. */
export async function settledControllerManager(cp: Host): Promise<number> {
  const t0 = Date.now();
  let gone: number | undefined;
  for (const deadline = t0 + 60_000; Date.now() < deadline; ) {
    if (gone === undefined && !/:10357\s/.test((await cp.exec(['ss', '-Hltn'])).stdout)) gone = Date.now();
    const renew = await cp.exec(['kubectl', `--kubeconfig=${ADMIN}`, '-n', 'kube-system', 'get', 'lease', 'kube-controller-manager', '-o', 'jsonpath={.spec.renewTime}']);
    // Same clock: the bed hosts share the machine's.
    if (gone !== undefined && Date.parse(renew.stdout.trim()) > gone) {
      if (await csrSignerSynced(cp)) return Date.now() - t0;
    }
    await sleep(250);
  }
  throw new Error('the self-hosted controller-manager did not take the lease and start its CSR signer within 60 s');
}

/**
 * True once the CSR signer of the controller-manager that leads answers: a probe CSR
 * (`kubernetes.io/kube-apiserver-client`, a throw-away P-256 key made in the host; none of the CSR
 * approvers here handles that signer) created and approved now is signed within 1 s, and is deleted
 * either way. Once it leads, a controller-manager starts its controllers one after another and starts
 * their informers only after the last one (≈ 3 s on the bed): a CSR approved before then waited 2.6 s
 * for its signature, one approved after it 0.07–0.1 s (measured on the bed, five CSRs in a row). The
 * csrsigning controllers (kubelet-client, kubelet-serving, kube-apiserver-client) share one informer
 * start, so this signer stands for the joins' kubelet-client one. By behaviour, not by a log line:
 * v1.37's controller-manager logs "Caches are synced" without the controller's name (until
 * 2026-12-07 this read `controller="certificate-csrsigning-kubelet-client"` from `kubectl logs`,
 * and never matched on v1.37). The join benchmark waits for this on both sides.
 * Host effects: a key and a CSR file under /tmp in the host; API effects: one CSR created, approved, deleted.
 */
export async function csrSignerSynced(host: Host): Promise<boolean> {
  const name = `bench-settle-probe-${Date.now().toString(36)}`;
  const key = `/tmp/${name}.key`;
  const csr = await host.execOk(['sh', '-c', `openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ${key} -subj /CN=${name} 2>/dev/null | base64 -w0; rm -f ${key}`]);
  const obj = { apiVersion: 'certificates.k8s.io/v1', kind: 'CertificateSigningRequest', metadata: { name }, spec: { request: csr.trim(), signerName: 'kubernetes.io/kube-apiserver-client', usages: ['digital signature', 'client auth'], expirationSeconds: 600 } };
  const kubectl = (args: string[], input?: string) => host.exec(['kubectl', `--kubeconfig=${ADMIN}`, ...args], { input });
  try {
    if ((await kubectl(['create', '-f', '-'], JSON.stringify(obj))).code !== 0) return false;
    if ((await kubectl(['certificate', 'approve', name])).code !== 0) return false;
    for (const deadline = Date.now() + 1_000; Date.now() < deadline; await sleep(50))
      if ((await kubectl(['get', 'csr', name, '-o', 'jsonpath={.status.certificate}'])).stdout.trim()) return true;
    return false;
  } finally {
    await kubectl(['delete', 'csr', name, '--ignore-not-found', '--wait=false']);
  }
}
