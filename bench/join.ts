/**
 * Join on the bed. (1) Time from `kubeception run join` to Node Ready, next to `kubeadm join` →
 * Node Ready against a `kubeadm init` control plane on identical hosts (same binaries, same images),
 * each side with a token signed before the join and with a token created just before it (the
 * bootstrapsigner signs it while discovery waits: kubeadm asks cluster-info every 5 s, kubeception
 * every 0.25 s).
 * (2) Discovery answers/second (`GET /cluster-info?token-id=<id>`, 200s only) under a bounded load
 * (16 connections, ≤ 3000 requests, ≤ 20 s) from a process on a second bed host — never from the root
 * namespace — next to kube-apiserver's `/readyz` on the same node under the same load: once with the
 * service's default per-client limit (100/s: the 429s show it working), once with the limit raised
 * (`--rate-limit 1000000`, the service's capacity; 5 rounds interleaved with the apiserver's, medians
 * compared). Prints seconds, kubeception's per-step times (JSON events) and ratios; asserts nothing.
 *
 * Usage (root): `npm run bench -- join` (host names `<BENCH_PREFIX or bj>-cp`, `-w`, `-acp`, `-aw`; `BENCH_JOIN_ROUNDS`, default 3).
 */
import { bootHost, REPO_ROOT, type Host } from '../test/bed/bed.ts';
import { importKubeceptionImage } from '../test/bed/kubeception-image.ts';
import { kc, writeConfig } from '../test/helpers/bed-cli.ts';
import { printedJoin, type PrintedJoin } from '../test/helpers/join-command.ts';
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

/** Waits (≤ 30 s) until the cluster-info ConfigMap of `cp` holds the bootstrapsigner's signature for token `id`. @returns ms waited. */
async function signed(cp: Host, id: string): Promise<number> {
  const t0 = Date.now();
  for (let i = 0; i < 120; i++) {
    const r = await cp.exec(['kubectl', `--kubeconfig=${ADMIN}`, '-n', 'kube-public', 'get', 'configmap', 'cluster-info', '-o', `jsonpath={.data.jws-kubeconfig-${id}}`]);
    if (r.stdout.trim()) return Date.now() - t0;
    await sleep(250);
  }
  throw new Error(`token ${id} not signed within 30 s`);
}

/** `kubeadm join …` argv (without `kubeadm`) from a new token; the token's id. */
async function kubeadmToken(acp: Host): Promise<{ argv: string[]; id: string; ms: number }> {
  const t0 = Date.now();
  const argv = (await acp.execOk(['kubeadm', 'token', 'create', '--print-join-command'])).trim().split(/\s+/).slice(1);
  return { argv, id: argv[argv.indexOf('--token') + 1]!.slice(0, 6), ms: Date.now() - t0 };
}

/** The `kubeception run join` command (arguments, token in its environment) from `kubeception token create --print-join-command` on `cp`. */
async function kubeceptionToken(cp: Host): Promise<{ join: PrintedJoin; id: string; ms: number }> {
  const t0 = Date.now();
  const r = await kc(cp, ['token', 'create', '--print-join-command']);
  if (r.code !== 0) throw new Error(`token create failed: ${r.stderr}`);
  const join = printedJoin(r.stdout);
  return { join, id: join.token.slice(0, 6), ms: Date.now() - t0 };
}

/** Runs `kubeadm join` (-v=1: its discovery logs each poll of cluster-info) on `aw`. @returns ms to Node Ready and the number of cluster-info polls. */
async function kubeadmJoin(acp: Host, aw: Host, argv: string[]): Promise<{ ready: number; polls: number }> {
  const t0 = Date.now();
  const r = await aw.exec(['kubeadm', ...argv, '--ignore-preflight-errors=all', `--node-name=${aw.name}`, '-v=1'], { timeoutMs: 300_000 });
  if (r.code !== 0) throw new Error(`kubeadm join exited ${r.code}\n${r.stderr.slice(-2000)}`);
  const ready = await untilReady(acp, aw.name, t0);
  return { ready, polls: (r.stderr.match(/Waiting for the cluster-info ConfigMap to receive a JWS signature/g) ?? []).length };
}

/** ms from `t0` until systemd started `host`'s kubelet (its journal; the bed hosts share the machine's clock), or NaN. */
async function kubeletStartedAfter(host: Host, t0: number): Promise<number> {
  const journal = (await host.exec(['journalctl', '-u', 'kubelet', '-o', 'short-unix', '--no-pager', '--since', `@${Math.floor(t0 / 1000)}`])).stdout;
  const line = journal.split('\n').find((l) => /Started kubelet\.service/.test(l) && Number(l.split(' ')[0]) * 1000 >= t0);
  return line ? Number(line.split(' ')[0]) * 1000 - t0 : Number.NaN;
}

/** Leaves `w` as before its join: `kubeception reset --force` there, its Node deleted on `cp`. */
async function undoKubeceptionJoin(cp: Host, w: Host): Promise<void> {
  const r = await kc(w, ['reset', '--force'], { timeoutMs: 300_000 });
  if (r.code !== 0) throw new Error(`reset on ${w.name} failed: ${r.stderr}`);
  await cp.execOk(['kubectl', `--kubeconfig=${ADMIN}`, 'delete', 'node', w.name, '--wait=true']);
}

/** Leaves `aw` as before its join: `kubeadm reset --force` there, its Node deleted on `acp`. */
async function undoKubeadmJoin(acp: Host, aw: Host): Promise<void> {
  await aw.execOk(['kubeadm', 'reset', '--force', '--cri-socket=unix:///run/containerd/containerd.sock'], { timeoutMs: 300_000 });
  await acp.execOk(['kubectl', `--kubeconfig=${ADMIN}`, 'delete', 'node', aw.name, '--wait=true']);
}

/** The middle element of `xs` by `key` (the upper one of an even count). */
const median = <T>(xs: readonly T[], key: (x: T) => number): T => [...xs].sort((a, b) => key(a) - key(b))[Math.floor(xs.length / 2)]!;
const middle = (xs: readonly number[]) => median(xs, (x) => x);
const ROUNDS = Number(process.env.BENCH_JOIN_ROUNDS ?? 3);

const hosts: Host[] = [];
try {
  const [cp, w, acp, aw] = await Promise.all(['cp', 'w', 'acp', 'aw'].map((n) => bootHost({ name: `${prefix}-${n}`, kubelet: true })));
  hosts.push(cp!, w!, acp!, aw!);
  await importKubeceptionImage(cp!);
  for (const h of [cp!, w!]) await writeConfig(h, { distro: 'debian', networking: { plugin: 'none' } });
  const boot = await kc(cp!, ['run', 'bootstrap'], { timeoutMs: 900_000 });
  if (boot.code !== 0) throw new Error(`bootstrap failed: ${boot.stderr}`);
  const printed = printedJoin(boot.stdout);
  const id = printed.token.slice(0, 6);
  // Peer: kubeadm init on an identical fresh host (external etcd: Debian's, no TLS).
  await kubeadmInit(acp!);
  // Steady state on both sides: right after a bootstrap the self-hosted controller-manager waits out
  // the removed bootstrap one's lease (8 s), and no CSR is signed meanwhile; then it starts its
  // controllers (≈ 3 s before its CSR signer's informer syncs). Each side's join is timed once its
  // controller-manager's CSR signer has synced (bench/settle.ts).
  const handOff = await settledControllerManager(cp!);
  console.log(`  (the self-hosted controller-manager led and its CSR signer had synced ${s(handOff)} s after the bootstrap ended)`);
  for (const deadline = Date.now() + 60_000; !(await csrSignerSynced(acp!)); await sleep(250))
    if (Date.now() > deadline) throw new Error("kubeadm's controller-manager did not sign a probe CSR within 60 s");
  await signed(cp!, id);

  // Rounds, the two sides alternating so both meet the same machine: each side joins its worker
  // (1) with a token signed long before — discovery finds the signature at once — and (2) with a
  // token created just before (`token create --print-join-command`, then the join at once) — the
  // bootstrapsigner signs it while discovery waits; after each join the worker is reset and its
  // Node deleted. The kubelet's own start varies by tenths of a second from run to run: medians.
  const times = { kcSigned: [] as number[], admSigned: [] as number[], kcFresh: [] as number[], admFresh: [] as number[], admPolls: [] as number[], kcKubelet: [] as number[], admKubelet: [] as number[] };
  let first: { j: Awaited<ReturnType<typeof kc>>; t0: number; kcExit: number; ready: number; journal: string; approverLog: string } | undefined;
  const kcJoin = async (cmd: PrintedJoin) => {
    const t0 = Date.now();
    const j = await kc(w!, ['run', 'join', ...cmd.args, '--output', 'json'], { timeoutMs: 300_000, env: cmd.env });
    const kcExit = Date.now() - t0;
    if (j.code !== 0) throw new Error(`join failed: ${j.stderr}`);
    const ready = await untilReady(cp!, w!.name, t0);
    times.kcKubelet.push(await kubeletStartedAfter(w!, t0));
    if (!first) {
      const journal = (await w!.exec(['journalctl', '-u', 'kubelet', '-o', 'short-unix', '--no-pager'])).stdout;
      const approverLog = (await cp!.exec(['kubectl', `--kubeconfig=${ADMIN}`, '-n', 'kube-system', 'logs', 'deploy/kubeception-csr-approver'])).stdout;
      first = { j, t0, kcExit, ready, journal, approverLog };
    }
    await undoKubeceptionJoin(cp!, w!);
    return ready;
  };
  const admJoin = async (argv: string[]) => {
    const t0 = Date.now();
    const r = await kubeadmJoin(acp!, aw!, argv);
    times.admKubelet.push(await kubeletStartedAfter(aw!, t0));
    times.admPolls.push(r.polls);
    await undoKubeadmJoin(acp!, aw!);
    return r.ready;
  };
  let kcCreateMs = 0;
  let admCreateMs = 0;
  for (let round = 0; round < ROUNDS; round++) {
    times.kcSigned.push(await kcJoin(printed));
    const admSignedToken = await kubeadmToken(acp!);
    await signed(acp!, admSignedToken.id);
    times.admSigned.push(await admJoin(admSignedToken.argv));
    const fresh = await kubeceptionToken(cp!);
    kcCreateMs = fresh.ms;
    times.kcFresh.push(await kcJoin(fresh.join));
    const admFreshToken = await kubeadmToken(acp!);
    admCreateMs = admFreshToken.ms;
    times.admFresh.push(await admJoin(admFreshToken.argv));
  }
  const { j, t0, kcExit, ready: kcReady } = first!;
  // When the approver (in the cluster, its own log's timestamps; same clock) approved the CSR, from the CLI's start.
  const csrName = /CSR (node-csr-\S+)/.exec(j.stdout)?.[1];
  const approved = first!.approverLog.split('\n').find((l) => csrName && l.includes(csrName) && l.includes('approved'));
  const approvedAt = approved ? (Date.parse(approved.split(' ')[0]!) - t0) / 1000 : undefined;
  const milestones = [/Started kubelet\.service/, /"Starting kubelet main sync loop"/, /"Successfully registered node"/, /"Fast updating node status as it just became ready"/];
  const lines = first!.journal.split('\n').filter((l) => Number(l.split(' ')[0]) * 1000 >= t0);
  const seen = milestones.map((m) => lines.find((l) => m.test(l))).map((l) => (l ? `${((Number(l.split(' ')[0]) * 1000 - t0) / 1000).toFixed(2)} ${/"([^"]+)"|Started kubelet\.service/.exec(l)?.[0] ?? ''}` : '?'));
  const steps = j.events.filter((e) => e.event === 'step-done' || e.event === 'step-skipped');

  const discovery = `https://${cp!.ip}:30000/cluster-info?token-id=${id}`;
  const limited = await load(w!, discovery);
  await cp!.execOk(['kubectl', `--kubeconfig=${ADMIN}`, '-n', 'kube-system', 'patch', 'deployment', 'kubeception-join', '--type=json', '-p', JSON.stringify([{ op: 'add', path: '/spec/template/spec/containers/0/args/-', value: '--rate-limit=1000000' }])]);
  await cp!.execOk(['kubectl', `--kubeconfig=${ADMIN}`, '-n', 'kube-system', 'rollout', 'status', 'deployment/kubeception-join', '--timeout=180s'], { timeoutMs: 200_000 });
  await sleep(3_000);
  // Interleaved rounds (discovery, apiserver, discovery, …): each round is ~2 s, so one round alone
  // is at the mercy of whatever else the 2 cores do; the median of 5 of each is compared.
  const rounds: { capacity: Load; api: Load }[] = [];
  for (let i = 0; i < 5; i++) rounds.push({ capacity: await load(w!, discovery), api: await load(w!, `https://${cp!.ip}:6443/readyz`) });
  const capacity = median(rounds.map((r) => r.capacity), (l) => l.okRps);
  const api = median(rounds.map((r) => r.api), (l) => l.okRps);

  const list = (xs: number[]) => xs.map((x) => s(x)).join(', ');
  console.log(`\njoin → Node Ready: ${ROUNDS} rounds per side, alternating, same machine, same script; each side once its controller-manager signs CSRs; median [every round]`);
  console.log(`  token signed before the join   kubeception run join ${s(middle(times.kcSigned)).padStart(5)} s [${list(times.kcSigned)}]   kubeadm join ${s(middle(times.admSigned)).padStart(5)} s [${list(times.admSigned)}]   ratio ${(middle(times.kcSigned) / middle(times.admSigned)).toFixed(2)}`);
  console.log(`  token created just before      kubeception run join ${s(middle(times.kcFresh)).padStart(5)} s [${list(times.kcFresh)}]   kubeadm join ${s(middle(times.admFresh)).padStart(5)} s [${list(times.admFresh)}]   ratio ${(middle(times.kcFresh) / middle(times.admFresh)).toFixed(2)}`);
  console.log(`    (kubeadm's discovery asked cluster-info ${times.admPolls.join(', ')} times in its joins — twice when the signature is there at once: the unpinned and the pinned read; each further read comes 5 s later. \`token create --print-join-command\`: kubeception ${kcCreateMs} ms, kubeadm ${admCreateMs} ms, not in the times above)`);
  console.log(`  until systemd started the kubelet (every join above, the rest is the kubelet's own start to Ready): kubeception ${s(middle(times.kcKubelet))} s [${list(times.kcKubelet)}], kubeadm ${s(middle(times.admKubelet))} s [${list(times.admKubelet)}]`);
  console.log('  the first kubeception join in detail:');
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
