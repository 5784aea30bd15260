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

/** Waits (≤ 60 s, polling every 250 ms) until the self-hosted controller-manager leads and signs CSRs. @returns ms waited. @throws after 60 s. */
export async function settledControllerManager(cp: Host): Promise<number> {
  const t0 = Date.now();
  let gone: number | undefined;
  for (let i = 0; i < 240; i++) {
    if (gone === undefined && !/:10357\s/.test((await cp.exec(['ss', '-Hltn'])).stdout)) gone = Date.now();
    const renew = await cp.exec(['kubectl', `--kubeconfig=${ADMIN}`, '-n', 'kube-system', 'get', 'lease', 'kube-controller-manager', '-o', 'jsonpath={.spec.renewTime}']);
    // Same clock: the bed hosts share the machine's.
    if (gone !== undefined && Date.parse(renew.stdout.trim()) > gone) {
      if (await csrSignerSynced(cp, 'deploy/kube-controller-manager')) return Date.now() - t0;
    }
    await sleep(250);
  }
  throw new Error('the self-hosted controller-manager did not take the lease and start its CSR signer within 60 s');
}

/**
 * True once the controller-manager behind `pod` (a `kubectl logs` target in kube-system) has synced
 * its kubelet-client CSR signer's informer. Once it leads, a controller-manager starts its
 * controllers one after another and starts their informers only after the last one (≈ 3 s on the
 * bed): a CSR approved before then waited 2.6 s for its signature, one approved after it 0.07–0.1 s
 * (measured on the bed, five CSRs in a row). The join benchmark waits for this on both sides.
 */
export async function csrSignerSynced(host: Host, pod: string): Promise<boolean> {
  const log = await host.exec(['kubectl', `--kubeconfig=${ADMIN}`, '-n', 'kube-system', 'logs', pod]);
  return log.stdout.includes('"Caches are synced" controller="certificate-csrsigning-kubelet-client"');
}
