/**
 * Scale by simulation: `SCALE_NODES` (default 1000) simulated nodes join one bed control plane
 * bootstrapped by kubeception, then (after it is destroyed: never both at once, 2 cores) one made by
 * `kubeadm init` of the same version on an identical fresh host. Each node takes its side's real
 * join path, with its own bootstrap token and key (bench/scale-node.ts): kubeception's join service
 * and CSR approver, or kubeadm's discovery and kube-controller-manager's csrapproving controller;
 * kwok (test/bed/build-kwok.sh) then keeps the Nodes Ready. Nodes join in bursts of `SCALE_BURST`
 * (default 100) from a driver in a second bed host (bench/scale-sim.ts; never from the root namespace).
 *
 * Measures: join throughput (Ready Nodes / s, first token → last Ready), join → Ready and CSR
 * created → Approved p50/p99, kube-apiserver and etcd RSS at 0 and at N nodes (after
 * `SCALE_SETTLE_S`, default 30), and the wall time of `kubeception status` / `kubeception upgrade
 * plan` (kubeadm: `kubeadm upgrade plan <version>`) at 0 and N nodes. Prints a table with ratios
 * kubeception / kubeadm and one `RESULT {json}` line; asserts nothing.
 *
 * All simulated nodes share the driver host's address: the join service's per-client limit (100
 * requests/s) is raised on the kubeception side as bench/join.ts does, since a real fleet has an
 * address per node. Bounded: `SCALE_TIME_LIMIT_S` (default 1800) per side for the joins.
 *
 * Usage (root, under the bed lock): `npm run bench -- scale`. Hosts `<BENCH_PREFIX or sc>-kc`,
 * `-kcsim`, `-adm`, `-admsim`; the driver's progress and per-node results in `SCALE_OUT_DIR` (default
 * /tmp/kc-scale-<prefix>), `kubeception.log`/`.json`, `kubeadm.log`/`.json`.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { bootHost, K8S_VERSION, REPO_ROOT, type Host } from '../test/bed/bed.ts';
import { importKubeceptionImage } from '../test/bed/kubeception-image.ts';
import { kc, writeConfig } from '../test/helpers/bed-cli.ts';
import { printedJoin } from '../test/helpers/join-command.ts';
import { spkiSha256 } from '../lib/pki/x509.ts';
import { kubeadmInit } from './kubeadm.ts';
import { csrSignerSynced, settledControllerManager } from './settle.ts';
import { startKwok } from './scale-kwok.ts';
import { printReport, type Rss, type SideResult, type Timed } from './scale-report.ts';
import type { SimResult, SimSettings } from './scale-sim.ts';
import type { Side } from './scale-node.ts';

const prefix = process.env.BENCH_PREFIX ?? 'sc';
const NODES = Number(process.env.SCALE_NODES ?? 1000);
const BURST = Number(process.env.SCALE_BURST ?? 100);
const TIME_LIMIT_MS = Number(process.env.SCALE_TIME_LIMIT_S ?? 1800) * 1000;
const SETTLE_MS = Number(process.env.SCALE_SETTLE_S ?? 30) * 1000;
/** Where the driver writes its progress and per-node results (bound into the driver's host). */
const OUT_DIR = process.env.SCALE_OUT_DIR ?? `/tmp/kc-scale-${prefix}`;
const ADMIN = '/etc/kubernetes/admin.conf';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const arg = (args: string[], flag: string) => args[args.indexOf(flag) + 1]!;

/** Sums RSS (ps, KiB) of every kube-apiserver and etcd process in `cp` (its containers' included). */
async function rss(cp: Host): Promise<Rss> {
  const sum = async (comm: string) => {
    const kib = (await cp.exec(['ps', '-C', comm, '-o', 'rss='])).stdout.split('\n').map(Number).filter((x) => x > 0);
    return { mib: kib.reduce((a, b) => a + b, 0) / 1024, count: kib.length };
  };
  const [a, e] = [await sum('kube-apiserver'), await sum('etcd')];
  return { apiserverMiB: a.mib, apiservers: a.count, etcdMiB: e.mib, etcds: e.count };
}

/** Wall time of `fn`; a failed command's last output lines are kept (and printed). */
async function timed(what: string, fn: () => Promise<{ code: number; stdout: string; stderr: string }>): Promise<Timed> {
  const t0 = Date.now();
  const r = await fn();
  const ms = Date.now() - t0;
  if (r.code === 0) return { ms, code: 0 };
  const tail = `${r.stdout}\n${r.stderr}`.trim().split('\n').slice(-8).join('\n');
  console.log(`  ${what} exited ${r.code} after ${(ms / 1000).toFixed(2)} s:\n${tail.replace(/^/gm, '    ')}`);
  return { ms, code: r.code, tail };
}

/** `status` and `upgrade plan` on `cp`, one after the other. */
async function tools(cp: Host, side: Side): Promise<{ status: Timed; plan: Timed }> {
  if (side === 'kubeadm') return { status: undefined, plan: await timed('kubeadm upgrade plan', () => cp.exec(['kubeadm', 'upgrade', 'plan', K8S_VERSION, '--ignore-preflight-errors=all'], { timeoutMs: 600_000 })) };
  return { status: await timed('kubeception status', () => kc(cp, ['status'], { timeoutMs: 600_000 })), plan: await timed('kubeception upgrade plan', () => kc(cp, ['upgrade', 'plan'], { timeoutMs: 600_000 })) };
}

/** A control plane of `side` on `cp`, settled. @returns the discovery URL and CA pin the nodes use. */
async function controlPlane(cp: Host, side: Side): Promise<{ discoveryUrl: string; pin: string }> {
  if (side === 'kubeadm') {
    await kubeadmInit(cp);
    for (const deadline = Date.now() + 30_000; !(await csrSignerSynced(cp)); await sleep(250)) {
      if (Date.now() > deadline) {
        console.log("  (kubeadm's controller-manager did not sign a probe CSR within 30 s; the settle time before the joins covers it)");
        break;
      }
    }
    return { discoveryUrl: `https://${cp.ip}:6443`, pin: spkiSha256(await cp.readFile('/etc/kubernetes/pki/ca.crt')) };
  }
  await importKubeceptionImage(cp);
  await writeConfig(cp, { distro: 'debian', networking: { plugin: 'none' } });
  const boot = await kc(cp, ['run', 'bootstrap'], { timeoutMs: 900_000 });
  if (boot.code !== 0) throw new Error(`bootstrap failed: ${boot.stderr}`);
  const printed = printedJoin(boot.stdout);
  // Not fatal: the settle time before the joins covers a controller-manager that is late.
  await settledControllerManager(cp).catch((err: Error) => console.log(`  (${err.message}; the settle time before the joins covers it)`));
  // Every simulated node shares the driver's address; a real fleet has one per node (see the header).
  await cp.execOk(['kubectl', `--kubeconfig=${ADMIN}`, '-n', 'kube-system', 'patch', 'deployment', 'kubeception-join', '--type=json', '-p', JSON.stringify([{ op: 'add', path: '/spec/template/spec/containers/0/args/-', value: '--rate-limit=1000000' }])]);
  await cp.execOk(['kubectl', `--kubeconfig=${ADMIN}`, '-n', 'kube-system', 'rollout', 'status', 'deployment/kubeception-join', '--timeout=180s'], { timeoutMs: 200_000 });
  return { discoveryUrl: arg(printed.args, '--url'), pin: arg(printed.args, '--ca-cert-hash') };
}

async function runSide(side: Side): Promise<SideResult> {
  const short = side === 'kubeception' ? 'kc' : 'adm';
  const hosts: Host[] = [];
  for (const ext of ['log', 'json']) rmSync(join(OUT_DIR, `${side}.${ext}`), { force: true });
  try {
    const [cp, sim] = await Promise.all([bootHost({ name: `${prefix}-${short}`, kubelet: true }), bootHost({ name: `${prefix}-${short}sim`, extraBinds: [{ src: OUT_DIR }] })]);
    hosts.push(cp!, sim!);
    const { discoveryUrl, pin } = await controlPlane(cp!, side);
    await sim!.writeFile('/root/admin.conf', await cp!.readFile(ADMIN), 0o600);
    await startKwok(sim!, '/root/admin.conf');
    await sleep(SETTLE_MS);
    const rssBefore = await rss(cp!);
    const before = await tools(cp!, side);
    console.log(`${new Date().toISOString()} ${side}: control plane ready; joining ${NODES} nodes in bursts of ${BURST}`);
    const settings: SimSettings = { side, nodes: NODES, burst: BURST, timeLimitMs: TIME_LIMIT_MS, namePrefix: `sim-${short}`, adminKubeconfig: '/root/admin.conf', discoveryUrl, pin, outDir: OUT_DIR };
    const r = await sim!.exec(['node', '--import', 'tsx', join(REPO_ROOT, 'bench', 'scale-sim.ts')], { cwd: REPO_ROOT, env: { SCALE_SIM: JSON.stringify(settings), TSX_DISABLE_CACHE: '1' }, timeoutMs: TIME_LIMIT_MS + 600_000 });
    process.stdout.write(r.stderr);
    if (r.code !== 0) throw new Error(`the driver exited ${r.code}`);
    const result = JSON.parse(r.stdout.trim().split('\n').pop()!) as SimResult;
    await sleep(SETTLE_MS);
    const rssAfter = await rss(cp!);
    const after = await tools(cp!, side);
    return { side, sim: result, rss: { before: rssBefore, after: rssAfter }, status: { before: before.status, after: after.status }, plan: { before: before.plan, after: after.plan } };
  } finally {
    for (const h of hosts) await h.destroy();
  }
}

execFileSync('bash', [join(REPO_ROOT, 'test', 'bed', 'build-kwok.sh')], { stdio: 'inherit' });
mkdirSync(OUT_DIR, { recursive: true });
console.log(`driver progress and per-node results: ${OUT_DIR}/<side>.log, <side>.json`);
const kubeception = await runSide('kubeception');
const kubeadm = await runSide('kubeadm');
printReport(kubeception, kubeadm, { nodes: NODES, burst: BURST });
const { sim: _a, ...kcRest } = kubeception;
const { sim: _b, ...admRest } = kubeadm;
console.log(`RESULT ${JSON.stringify({ nodes: NODES, burst: BURST, kubeception: { ...kcRest, bursts: kubeception.sim.bursts }, kubeadm: { ...admRest, bursts: kubeadm.sim.bursts } })}`);
