/**
 * Bootstrap wall time on the bed: kubeception's cold bootstrap (fresh host) and no-op re-run, per
 * step from its JSON events, next to `kubeadm init` on an identical fresh bed host (kubeadm built
 * from the same module version, same images; etcd: Debian's, started by systemd as external etcd
 * so neither side needs an etcd image). Prints seconds and ratios; asserts nothing about time.
 *
 * Usage (root): `npm run bench -- bootstrap`
 */
import { bootHost, type Host } from '../test/bed/bed.ts';
import { kc, writeConfig } from '../test/helpers/bed-cli.ts';
import { importKubeceptionImage } from '../test/bed/kubeception-image.ts';
import { kubeadmInit } from './kubeadm.ts';

const s = (ms: number) => (ms / 1000).toFixed(1);

async function kubeception(host: Host, label: string) {
  const t0 = Date.now();
  const r = await kc(host, ['run', 'bootstrap', '--output', 'json'], { timeoutMs: 900_000 });
  const wall = Date.now() - t0;
  if (r.code !== 0) throw new Error(`${label}: kubeception exited ${r.code}\n${r.stderr}`);
  const steps = r.events.filter((e) => e.event === 'step-done' || e.event === 'step-skipped');
  console.log(`\nkubeception ${label}: ${s(wall)} s wall`);
  for (const e of steps) console.log(`  ${e.step.padEnd(32)} ${e.event === 'step-done' ? `${s(e.durationMs).padStart(6)} s${e.changed ? '  (changed)' : ''}` : '  skipped'}`);
  return wall;
}

async function kubeadm(host: Host) {
  const wall = await kubeadmInit(host);
  console.log(`\nkubeadm init (etcd start included): ${s(wall)} s wall`);
  return wall;
}

const hosts: Host[] = [];
try {
  const [a, b] = await Promise.all([bootHost({ name: 'bench-kc', kubelet: true }), bootHost({ name: 'bench-adm', kubelet: true })]);
  hosts.push(a!, b!);
  await importKubeceptionImage(a!);
  await writeConfig(a!, { distro: 'debian', networking: { plugin: 'none' } });
  const cold = await kubeception(a!, 'cold');
  const noop = await kubeception(a!, 'no-op re-run');
  const adm = await kubeadm(b!);
  console.log('\nsummary (same machine, same script, one run each)');
  console.log(`  kubeception cold      ${s(cold).padStart(6)} s   ratio to kubeadm init ${(cold / adm).toFixed(2)}`);
  console.log(`  kubeception no-op     ${s(noop).padStart(6)} s   ratio to kubeadm init ${(noop / adm).toFixed(2)}`);
  console.log(`  kubeadm init          ${s(adm).padStart(6)} s`);
  console.log('  note: kubeception cold includes TLS etcd, the bootstrap control plane, the self-hosted control plane, the pivot and the join service; kubeadm init stops at static pods (external plain-HTTP etcd, no CoreDNS).');
} finally {
  for (const h of hosts) await h.destroy();
}
