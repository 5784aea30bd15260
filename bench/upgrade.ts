/**
 * Upgrade wall time and API availability on the bed: `kubeception upgrade apply v1.35.4` on a
 * kubeception v1.34.4 control plane, next to `kubeadm upgrade apply v1.35.4` (kubeadm v1.35.4, built
 * from the same module version) on a `kubeadm init` v1.34.4 control plane on an identical fresh bed
 * host, one after the other (never at once: 2 cores). During each upgrade a prober inside the host
 * opens a new TLS connection to its /readyz every 100 ms; the longest gap without a 200 is printed.
 * etcd is Debian's on both (kubeadm: external, not upgraded). Asserts nothing about time.
 *
 * Usage (root): `npm run bench -- upgrade`. Host names `$BENCH_PREFIX-ukc`, `$BENCH_PREFIX-uadm`.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { bootHost, CACHE_DIR, REPO_ROOT, type Host } from '../test/bed/bed.ts';
import { kc, writeConfig } from '../test/helpers/bed-cli.ts';
import { startProber, type Gap } from '../test/helpers/prober.ts';
import { importKubeceptionImage } from '../test/bed/kubeception-image.ts';
import { importUpgradeImages, UPGRADE_VERSION } from '../test/bed/upgrade.ts';
import { kubeadmInit } from './kubeadm.ts';

const FROM = 'v1.34.4';
const prefix = process.env.BENCH_PREFIX ?? 'bench';
const s = (ms: number) => (ms / 1000).toFixed(1);

interface Result {
  wallMs: number;
  gap: Gap;
  steps?: Map<string, number>;
}

async function kubeception(host: Host): Promise<Result> {
  await writeConfig(host, { distro: 'debian', networking: { plugin: 'none' }, kubernetesVersion: FROM });
  // 1.34 is kept for existing clusters only: this one is made on purpose, to upgrade it.
  const b = await kc(host, ['run', 'bootstrap', '--ignore-preflight-errors', 'KubernetesVersionSupport'], { timeoutMs: 900_000 });
  if (b.code !== 0) throw new Error(`bootstrap exited ${b.code}\n${b.stderr}`);
  const prober = await startProber(host, `https://${host.ip}:6443/readyz`);
  const t0 = Date.now();
  const r = await kc(host, ['upgrade', 'apply', UPGRADE_VERSION, '--output', 'json'], { timeoutMs: 1_800_000 });
  const wallMs = Date.now() - t0;
  const gap = await prober.stop();
  if (r.code !== 0) throw new Error(`upgrade apply exited ${r.code}\n${r.stderr}`);
  const steps = new Map<string, number>();
  for (const e of r.events) {
    if (e.event === 'step-done') steps.set(e.step, e.durationMs);
    if (e.event === 'log' && e.level === 'warn') console.log(`  kubeception warning (${e.step}): ${e.message}`);
  }
  return { wallMs, gap, steps };
}

async function kubeadm(host: Host): Promise<Result> {
  await kubeadmInit(host, FROM);
  const prober = await startProber(host, `https://${host.ip}:6443/readyz`);
  const t0 = Date.now();
  const bin = join(CACHE_DIR, 'k8s', UPGRADE_VERSION, 'bin', 'kubeadm');
  const r = await host.exec([bin, 'upgrade', 'apply', UPGRADE_VERSION, '--yes', '--etcd-upgrade=false', '--ignore-preflight-errors=all'], { timeoutMs: 1_800_000 });
  const wallMs = Date.now() - t0;
  const gap = await prober.stop();
  if (r.code !== 0) throw new Error(`kubeadm upgrade apply exited ${r.code}\n${r.stdout.slice(-3000)}\n${r.stderr.slice(-3000)}`);
  return { wallMs, gap };
}

execFileSync(process.execPath, [join(REPO_ROOT, 'scripts', 'build.mjs')], { stdio: 'inherit' });
// The bed's setup builds no kubeadm of the upgrade version (no test needs it): build it here, cached.
execFileSync('bash', [join(REPO_ROOT, 'test', 'bed', 'build-k8s.sh')], { stdio: 'inherit', env: { ...process.env, K8S_VERSION: UPGRADE_VERSION, K8S_BINARIES: 'kubeadm' } });
const hosts: Host[] = [];
try {
  const [a, b] = await Promise.all([bootHost({ name: `${prefix}-ukc`, kubelet: { version: FROM } }), bootHost({ name: `${prefix}-uadm`, kubelet: { version: FROM } })]);
  hosts.push(a!, b!);
  await Promise.all([importKubeceptionImage(a!), importUpgradeImages(a!), importUpgradeImages(b!)]);
  const k = await kubeception(a!);
  const adm = await kubeadm(b!);
  console.log(`\nupgrade ${FROM} → ${UPGRADE_VERSION} on a single control-plane node (one run each, same machine, same script), seconds`);
  for (const [step, ms] of k.steps ?? []) console.log(`  kubeception ${step.padEnd(30)} ${s(ms).padStart(7)}`);
  console.log(`  ${''.padEnd(42)} ${'wall'.padStart(7)} ${'longest /readyz gap'.padStart(20)} ${'failed probes'.padStart(14)}`);
  console.log(`  ${'kubeception upgrade apply'.padEnd(42)} ${s(k.wallMs).padStart(7)} ${`${s(k.gap.gapMs)} s`.padStart(20)} ${`${k.gap.failed}/${k.gap.total}`.padStart(14)}`);
  console.log(`  ${'kubeadm upgrade apply (etcd not upgraded)'.padEnd(42)} ${s(adm.wallMs).padStart(7)} ${`${s(adm.gap.gapMs)} s`.padStart(20)} ${`${adm.gap.failed}/${adm.gap.total}`.padStart(14)}`);
  console.log(`  ratio kubeception / kubeadm: wall ${(k.wallMs / adm.wallMs).toFixed(2)}, longest gap ${adm.gap.gapMs ? (k.gap.gapMs / adm.gap.gapMs).toFixed(2) : 'n/a'}`);
  console.log('  note: kubeception also takes an etcd snapshot and a backup of the objects, rolls kube-proxy and CoreDNS, and refreshes the recovery manifest; kubeadm restarts its static pods in place.');
} finally {
  for (const h of hosts) await h.destroy();
}
