/**
 * What "converged" means on a bed control-plane host, measured from the outside rather than from
 * kubeception's own `changed` flags: every file kubeception writes (path, mode, owner, hash), the
 * start of the etcd and kubelet units (ActiveEnterTimestamp, MainPID), every kube-system pod's uid
 * and restart count; the Node Ready; no bootstrap manifest; and the *running* kubelet connected to the
 * final apiserver (its TCP connections, not its kubeconfig file).
 */
import assert from 'node:assert/strict';
import type { Host } from '../bed/bed.ts';
import { assertSameTree, snapshot } from './bed-cli.ts';

export const ADMIN = '/etc/kubernetes/admin.conf';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Every path kubeception writes on a Debian control-plane host (files the kubelet or etcd write themselves are not here). */
export const OWNED_PATHS = [
  '/etc/kubernetes',
  '/etc/default/etcd',
  '/var/lib/etcd/default/kubeception-owner.json',
  '/var/lib/kubelet/config.yaml',
  '/var/lib/kubelet/kubeconfig',
  '/etc/systemd/system/kubelet.service.d',
  '/etc/systemd/system/multi-user.target.wants',
  '/var/lib/kubeception',
];

/** What must not change on a converged re-run. */
export interface HostState {
  files: string;
  units: string;
  pods: string[];
}

/** `ActiveEnterTimestamp` and `MainPID` of the etcd and kubelet units. */
export const unitStarts = (host: Host) =>
  host.execOk(['systemctl', 'show', '-p', 'Id', '-p', 'ActiveEnterTimestamp', '-p', 'MainPID', 'etcd.service', 'kubelet.service']);

/** `name uid restarts` of every kube-system pod, sorted. */
export async function kubeSystemPods(host: Host): Promise<string[]> {
  const out = await host.execOk(['kubectl', `--kubeconfig=${ADMIN}`, '-n', 'kube-system', 'get', 'pods', '-o', 'json'], { timeoutMs: 30_000 });
  return (JSON.parse(out).items as any[])
    .map((p) => `${p.metadata.name} ${p.metadata.uid} ${(p.status.containerStatuses ?? []).reduce((n: number, c: any) => n + c.restartCount, 0)}`)
    .sort();
}

export async function hostState(host: Host): Promise<HostState> {
  return { files: await snapshot(host, OWNED_PATHS), units: await unitStarts(host), pods: await kubeSystemPods(host) };
}

/** Remote ports of the kubelet process's established TCP connections. */
export async function kubeletPeerPorts(host: Host): Promise<number[]> {
  const out = await host.execOk(['ss', '-Htnp', 'state', 'established']);
  return out.split('\n').filter((l) => l.includes('"kubelet"')).map((l) => Number(l.trim().split(/\s+/)[3]?.split(':').pop()));
}

async function eventually<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown = 'never true';
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (err) {
      last = (err as Error).message;
    }
    await sleep(1_000);
  }
  return assert.fail(`${what}: not within ${timeoutMs} ms (last: ${last})`);
}

/**
 * The end state of a bootstrap: Node `nodeName` Ready, no bootstrap manifest, the running kubelet
 * talking to the final apiserver (port 6443) and to nothing on the bootstrap port (6444), and (within
 * 60 s) no bootstrap mirror pod left.
 */
export async function assertBootstrapped(host: Host, nodeName: string): Promise<void> {
  await eventually(`Node ${nodeName} Ready`, async () => {
    const s = await host.execOk(['kubectl', `--kubeconfig=${ADMIN}`, 'get', 'node', nodeName, '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}'], { timeoutMs: 20_000 });
    return s.trim() === 'True' ? true : undefined;
  }, 120_000);
  assert.doesNotMatch(await host.execOk(['ls', '-A', '/etc/kubernetes/manifests']), /bootstrap-/, 'a bootstrap manifest is left');
  assert.match(await host.readFile('/var/lib/kubelet/kubeconfig'), /server: https:\/\/[0-9.]+:6443/);
  const ports = await eventually('the running kubelet connected to the final apiserver only', async () => {
    const p = await kubeletPeerPorts(host);
    return p.includes(6443) && !p.includes(6444) ? p : undefined;
  }, 60_000);
  assert.ok(!ports.includes(6444));
  // The files the kubelet and etcd units read are root's alone (CIS 4.1.1, 4.1.9, 1.1.7; debian's paths).
  const modes = await host.execOk(['stat', '-c', '%a %n', '/var/lib/kubelet/config.yaml', '/etc/systemd/system/kubelet.service.d/20-kubeception.conf', '/etc/default/etcd']);
  assert.deepEqual(modes.trim().split('\n').map((l) => l.split(' ')[0]), ['600', '600', '600'], `unit inputs not 0600:\n${modes}`);
  // The kubelet deletes the removed bootstrap pods' mirror pods on its own schedule after the pivot:
  // part of the end state, so a state compared before and after a re-run is not caught mid-cleanup.
  await eventually('no bootstrap mirror pod left in kube-system', async () => {
    const names = await host.execOk(['kubectl', `--kubeconfig=${ADMIN}`, '-n', 'kube-system', 'get', 'pods', '-o', 'name'], { timeoutMs: 20_000 });
    return /pod\/bootstrap-/.test(names) ? undefined : true;
  }, 60_000);
}

/** Asserts nothing changed between two {@link hostState}s. */
export function assertSameState(before: HostState, after: HostState, what: string): void {
  assertSameTree(before.files, after.files, what);
  assert.equal(after.units, before.units, `${what}: etcd/kubelet were (re)started`);
  assert.deepEqual(after.pods, before.pods, `${what}: a kube-system pod was replaced or restarted`);
}
