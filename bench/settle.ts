/**
 * When a kubeception control plane has settled after `run bootstrap`: the bootstrap
 * controller-manager's port is closed and the self-hosted one has renewed the lease since. Until
 * then no CSR is signed (the removed bootstrap instance's lease runs out first, ≈ 10 s) and the
 * self-hosted pods are still starting beside whatever a benchmark times. Both benchmarks that time
 * something after a bootstrap (the converged re-run, the join) wait for this, as the kubeadm side's
 * controller-manager leads from its start.
 */
import type { Host } from '../test/bed/bed.ts';

const ADMIN = '/etc/kubernetes/admin.conf';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits (≤ 60 s, polling every 250 ms) until the self-hosted controller-manager leads. @returns ms waited. @throws after 60 s. */
export async function settledControllerManager(cp: Host): Promise<number> {
  const t0 = Date.now();
  let gone: number | undefined;
  for (let i = 0; i < 240; i++) {
    if (gone === undefined && !/:10357\s/.test((await cp.exec(['ss', '-Hltn'])).stdout)) gone = Date.now();
    const renew = await cp.exec(['kubectl', `--kubeconfig=${ADMIN}`, '-n', 'kube-system', 'get', 'lease', 'kube-controller-manager', '-o', 'jsonpath={.spec.renewTime}']);
    // Same clock: the bed hosts share the machine's.
    if (gone !== undefined && Date.parse(renew.stdout.trim()) > gone) return Date.now() - t0;
    await sleep(250);
  }
  throw new Error('the self-hosted controller-manager did not take the lease within 60 s');
}
