/**
 * Join on the bed. (1) Time from `kubeception run join` to Node Ready, next to `kubeadm join` →
 * Node Ready against a `kubeadm init` control plane on identical hosts (same binaries, same images).
 * (2) Discovery answers/second (`GET /cluster-info?token-id=<id>`, 200s only) under a bounded load
 * (16 connections, ≤ 3000 requests, ≤ 20 s) from a process on a second bed host — never from the root
 * namespace — next to kube-apiserver's `/readyz` on the same node under the same load: once with the
 * service's default per-client limit (100/s: the 429s show it working), once with the limit raised
 * (`--rate-limit 1000000`, the service's capacity; 5 rounds interleaved with the apiserver's, medians
 * compared). Prints seconds, kubeception's per-step times (JSON events) and ratios; asserts nothing.
 *
 * Usage (root): `npm run bench -- join` (host names `<BENCH_PREFIX or bj>-cp`, `-w`, `-acp`, `-aw`).
 */
import { bootHost, REPO_ROOT, type Host } from '../test/bed/bed.ts';
import { importKubeceptionImage } from '../test/bed/kubeception-image.ts';
import { kc, writeConfig } from '../test/helpers/bed-cli.ts';
import { kubeadmInit } from './kubeadm.ts';
import { csrSignerSynced, settledControllerManager } from './settle.ts';
import { timeline } from './timeline.ts';

const s = (ms: number) => (ms / 1000).toFixed(1);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const prefix = process.env.BENCH_PREFIX ?? 'bj';
const ADMIN = '/etc/kubernetes/admin.conf';

async function untilReady(cp: Host, node: string, t0: number): Promise<number> {
  for (let i = 0; i < 600; i++) {
    const r = await cp.exec(['kubectl', `--kubeconfig=${ADMIN}`, 'get', 'node', node, '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}']);
    if (r.stdout.trim() === 'True') return Date.now() - t0;
    await sleep(250);
  }
  throw new Error(`${node} not Ready`);
}

type Load = { requests: number; ok: number; errors: number; okRps: number; statuses: Record<string, number>; p50Ms: string; p99Ms: string };
async function load(from: Host, url: string): Promise<Load> {
  const out = await from.execOk(['node', `${REPO_ROOT}/bench/join-load.mjs`, url, 'GET', '-', '16', '3000', '20'], { timeoutMs: 60_000 });
  return JSON.parse(out.trim().split('\n').pop()!) as Load;
}

const hosts: Host[] = [];
try {
  const [cp, w, acp, aw] = await Promise.all(['cp', 'w', 'acp', 'aw'].map((n) => bootHost({ name: `${prefix}-${n}`, kubelet: true })));
  hosts.push(cp!, w!, acp!, aw!);
  await importKubeceptionImage(cp!);
  for (const h of [cp!, w!]) await writeConfig(h, { distro: 'debian', networking: { plugin: 'none' } });
  const boot = await kc(cp!, ['run', 'bootstrap'], { timeoutMs: 900_000 });
  if (boot.code !== 0) throw new Error(`bootstrap failed: ${boot.stderr}`);
  const args = boot.stdout.split('\n').find((l) => l.includes('kubeception run join'))!.trim().split(/\s+/).slice(4);
  const id = args[args.indexOf('--token') + 1]!.slice(0, 6);
  // Steady state on both sides: right after a bootstrap the self-hosted controller-manager waits out
  // the removed bootstrap one's lease (8 s), and no CSR is signed meanwhile; then it starts its
  // controllers (≈ 3 s before its CSR signer's informer syncs). Each side's join is timed once its
  // controller-manager's CSR signer has synced (bench/settle.ts).
  const handOff = await settledControllerManager(cp!);
  console.log(`  (the self-hosted controller-manager led and its CSR signer had synced ${s(handOff)} s after the bootstrap ended)`);

  let t0 = Date.now();
  const j = await kc(w!, ['run', 'join', ...args, '--output', 'json'], { timeoutMs: 300_000 });
  const kcExit = Date.now() - t0;
  if (j.code !== 0) throw new Error(`join failed: ${j.stderr}`);
  const kcReady = await untilReady(cp!, `${prefix}-w`, t0);
  // When the approver (in the cluster, its own log's timestamps; same clock) approved the CSR, from the CLI's start.
  const csrName = /CSR (node-csr-\S+)/.exec(j.stdout)?.[1];
  const approverLog = await cp!.exec(['kubectl', `--kubeconfig=${ADMIN}`, '-n', 'kube-system', 'logs', 'deploy/kubeception-csr-approver']);
  const approved = approverLog.stdout.split('\n').find((l) => csrName && l.includes(csrName) && l.includes('approved'));
  const approvedAt = approved ? (Date.parse(approved.split(' ')[0]!) - t0) / 1000 : undefined;
  const journal = await w!.exec(['journalctl', '-u', 'kubelet', '-o', 'short-unix', '--no-pager']);
  const milestones = [/Started kubelet\.service/, /"Starting kubelet main sync loop"/, /"Successfully registered node"/, /"Fast updating node status as it just became ready"/];
  const seen = milestones.map((m) => journal.stdout.split('\n').find((l) => m.test(l))).map((l) => (l ? `${((Number(l.split(' ')[0]) * 1000 - t0) / 1000).toFixed(2)} ${/"([^"]+)"|Started kubelet\.service/.exec(l)?.[0] ?? ''}` : '?'));
  const steps = j.stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l)).filter((e) => e.event === 'step-done' || e.event === 'step-skipped');

  // Peer: kubeadm init + kubeadm join on two identical fresh hosts (external etcd: Debian's, no TLS).
  await kubeadmInit(acp!);
  const admJoin = (await acp!.execOk(['kubeadm', 'token', 'create', '--print-join-command'])).trim().split(/\s+/).slice(1);
  // As on the kubeception side: its controller-manager signs CSRs at once.
  for (let i = 0; !(await csrSignerSynced(acp!, `kube-controller-manager-${prefix}-acp`)); i++) {
    if (i > 240) throw new Error("kubeadm's controller-manager did not sync its CSR signer within 60 s");
    await sleep(250);
  }
  t0 = Date.now();
  await aw!.execOk(['kubeadm', ...admJoin, '--ignore-preflight-errors=all', `--node-name=${prefix}-aw`], { timeoutMs: 300_000 });
  const admReady = await untilReady(acp!, `${prefix}-aw`, t0);

  const discovery = `https://${cp!.ip}:30000/cluster-info?token-id=${id}`;
  const limited = await load(w!, discovery);
  await cp!.execOk(['kubectl', `--kubeconfig=${ADMIN}`, '-n', 'kube-system', 'patch', 'deployment', 'kubeception-join', '--type=json', '-p', JSON.stringify([{ op: 'add', path: '/spec/template/spec/containers/0/args/-', value: '--rate-limit=1000000' }])]);
  await cp!.execOk(['kubectl', `--kubeconfig=${ADMIN}`, '-n', 'kube-system', 'rollout', 'status', 'deployment/kubeception-join', '--timeout=180s'], { timeoutMs: 200_000 });
  await sleep(3_000);
  // Interleaved rounds (discovery, apiserver, discovery, …): each round is ~2 s, so one round alone
  // is at the mercy of whatever else the 2 cores do; the median of 5 of each is compared.
  const rounds: { capacity: Load; api: Load }[] = [];
  for (let i = 0; i < 5; i++) rounds.push({ capacity: await load(w!, discovery), api: await load(w!, `https://${cp!.ip}:6443/readyz`) });
  const median = (xs: Load[]) => [...xs].sort((a, b) => a.okRps - b.okRps)[Math.floor(xs.length / 2)]!;
  const capacity = median(rounds.map((r) => r.capacity));
  const api = median(rounds.map((r) => r.api));

  console.log('\njoin → Node Ready (one run each, same machine, same script)');
  console.log(`  kubeception run join   ${s(kcReady).padStart(6)} s   ratio to kubeadm join ${(kcReady / admReady).toFixed(2)}`);
  console.log(`  kubeadm join           ${s(admReady).padStart(6)} s`);
  console.log('  kubeception steps: ' + steps.map((e) => `${e.step} ${e.event === 'step-skipped' ? 'skipped' : `${s(e.durationMs)} s`}`).join(', '));
  console.log(`  timeline (s from the task's start; the CLI exited at ${s(kcExit)} s and the Node was Ready at ${s(kcReady)} s from its start):\n${timeline(j.stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l))).map((l) => `    ${l}`).join('\n')}`);
  console.log(`  the worker's kubelet (journal, s from the CLI's start): ${seen.join('; ')}`);
  console.log(`  kubelet-client-cert: ${steps.find((e) => e.step === 'kubelet-client-cert')?.detail ?? '(no detail)'}; the approver approved it at ${approvedAt?.toFixed(2) ?? '?'} s from the CLI's start`);
  console.log('\nanswers/second (200s) from a second bed host (16 connections, ≤3000 requests, ≤20 s per round; limit raised: median of 5 interleaved rounds)');
  console.log(`  rounds (discovery/apiserver req/s): ${rounds.map((r) => `${r.capacity.okRps}/${r.api.okRps}`).join(', ')}`);
  for (const [name, r] of [['discovery, default limit (100/s per client)', limited], ['discovery, limit raised (capacity)', capacity], ['kube-apiserver GET /readyz', api]] as const)
    console.log(`  ${name.padEnd(44)} ${String(r.okRps).padStart(7)} req/s  p50 ${r.p50Ms} ms  p99 ${r.p99Ms} ms  statuses ${JSON.stringify(r.statuses)} errors ${r.errors}`);
  console.log(`  ratio discovery capacity / apiserver /readyz: ${(capacity.okRps / api.okRps).toFixed(2)}`);
} finally {
  for (const h of hosts) await h.destroy();
}
