/**
 * Bootstrap wall time on the bed: kubeception's cold bootstrap (fresh host) and converged re-run
 * (once right after the cold run, once after the control plane settled: bench/settle.ts), per step
 * from its JSON events, next to `kubeadm init` on an identical fresh bed host (kubeadm built
 * from the same module version, same images; etcd: Debian's, started by systemd as external etcd
 * so neither side needs an etcd image). Prints one table and ratios; asserts nothing about time.
 *
 * Usage (root): `npm run bench -- bootstrap [encryptionAlgorithm] [--concurrent]` (default: the
 * config default). Host names: `$BENCH_PREFIX-kc` and `$BENCH_PREFIX-adm` (default prefix `bench`).
 * The CLI runs from the precompiled build (`npm run build` first), as a package install does.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { bootHost, REPO_ROOT, type Host } from '../test/bed/bed.ts';
import { kc, writeConfig } from '../test/helpers/bed-cli.ts';
import { importKubeceptionImage } from '../test/bed/kubeception-image.ts';
import { kubeadmInit } from './kubeadm.ts';
import { settledControllerManager } from './settle.ts';
import { timeline } from './timeline.ts';

const s = (ms: number | undefined) => (ms === undefined ? '' : (ms / 1000).toFixed(1));
const algorithm = process.argv.slice(2).find((a) => !a.startsWith('--'));
const concurrent = process.argv.includes('--concurrent');
const prefix = process.env.BENCH_PREFIX ?? 'bench';

interface Run {
  wall: number;
  steps: Map<string, number | 'skipped'>;
  events: unknown[];
}

async function kubeception(host: Host, label: string): Promise<Run> {
  const t0 = Date.now();
  const r = await kc(host, ['run', 'bootstrap', '--output', 'json', ...(concurrent ? ['--concurrent'] : [])], { timeoutMs: 900_000 });
  const wall = Date.now() - t0;
  if (r.code !== 0) throw new Error(`${label}: kubeception exited ${r.code}\n${r.stderr}`);
  const steps = new Map<string, number | 'skipped'>();
  for (const e of r.events) {
    if (e.event === 'step-done') steps.set(e.step, e.durationMs);
    if (e.event === 'step-skipped') steps.set(e.step, 'skipped');
  }
  return { wall, steps, events: r.events };
}

function table(cold: Run, noop: Run, settled: Run, settleMs: number, adm: number): void {
  const cell = (v: number | 'skipped' | undefined) => (v === 'skipped' ? 'skip' : s(v));
  const sum = (r: Run) => [...r.steps.values()].reduce<number>((a, v) => a + (typeof v === 'number' ? v : 0), 0);
  console.log(`\nbootstrap on the bed (one run each, same machine, same script${algorithm ? `, encryptionAlgorithm ${algorithm}` : ''}${concurrent ? ', --concurrent' : ''}), seconds`);
  const runs = [cold, noop, settled];
  const row = (label: string, cells: string[]) => console.log(`  ${label.padEnd(34)} ${cells.map((c) => c.padStart(9)).join(' ')}`);
  row('step', ['cold', 're-run', 'settled']);
  for (const step of new Set(runs.flatMap((r) => [...r.steps.keys()]))) row(step, runs.map((r) => cell(r.steps.get(step))));
  row('(sum of steps)', runs.map((r) => s(sum(r))));
  row('kubeception wall (process start to exit)', runs.map((r) => (r.wall / 1000).toFixed(2)));
  row('kubeadm init (etcd start included)', [(adm / 1000).toFixed(2)]);
  row('ratio kubeception / kubeadm init', runs.map((r) => (r.wall / adm).toFixed(2)));
  console.log(`  re-run: right after the cold run; settled: once the self-hosted controller-manager led (${s(settleMs)} s after the re-run ended).`);
  console.log(`  cold run's timeline (s from the task's start):\n${timeline(cold.events).map((l) => `    ${l}`).join('\n')}`);
  console.log('  note: kubeception cold includes TLS etcd, the bootstrap control plane, the self-hosted control plane, the pivot and the join service; kubeadm init stops at static pods (external plain-HTTP etcd, no CoreDNS).');
}

execFileSync(process.execPath, [join(REPO_ROOT, 'scripts', 'build.mjs')], { stdio: 'inherit' });
const hosts: Host[] = [];
try {
  const [a, b] = await Promise.all([bootHost({ name: `${prefix}-kc`, kubelet: true }), bootHost({ name: `${prefix}-adm`, kubelet: true })]);
  hosts.push(a!, b!);
  await importKubeceptionImage(a!);
  await writeConfig(a!, { distro: 'debian', networking: { plugin: 'none' }, ...(algorithm && { encryptionAlgorithm: algorithm }) });
  const cold = await kubeception(a!, 'cold');
  const noop = await kubeception(a!, 'converged re-run');
  const settleMs = await settledControllerManager(a!);
  const settled = await kubeception(a!, 'converged re-run, settled');
  const adm = await kubeadmInit(b!);
  table(cold, noop, settled, settleMs, adm);
} finally {
  for (const h of hosts) await h.destroy();
}
