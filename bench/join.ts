/**
 * Join on the bed. (1) Time from `kubeception run join` to Node Ready, next to `kubeadm join` →
 * Node Ready against a `kubeadm init` control plane on identical hosts (same binaries, same images).
 * (2) Join-service requests/second under a bounded load (16 connections, ≤ 3000 requests, ≤ 20 s) from
 * a process on a second bed host — never from the root namespace — next to kube-apiserver's `/readyz`
 * on the same node under the same load. Prints seconds and ratios; asserts nothing about time.
 *
 * Usage (root): `npm run bench -- join`
 */
import { bootHost, REPO_ROOT, type Host } from '../test/bed/bed.ts';
import { importKubeceptionImage } from '../test/bed/kubeception-image.ts';
import { kc, writeConfig } from '../test/helpers/bed-cli.ts';
import { kubeadmInit } from './kubeadm.ts';

const s = (ms: number) => (ms / 1000).toFixed(1);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function untilReady(cp: Host, kubeconfig: string, node: string, t0: number): Promise<number> {
  for (let i = 0; i < 600; i++) {
    const r = await cp.exec(['kubectl', `--kubeconfig=${kubeconfig}`, 'get', 'node', node, '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}']);
    if (r.stdout.trim() === 'True') return Date.now() - t0;
    await sleep(250);
  }
  throw new Error(`${node} not Ready`);
}

async function load(from: Host, url: string, method: string, body: string) {
  const out = await from.execOk(['node', `${REPO_ROOT}/bench/join-load.mjs`, url, method, body, '16', '3000', '20'], { timeoutMs: 60_000 });
  return JSON.parse(out.trim().split('\n').pop()!) as { requests: number; errors: number; rps: number; p50Ms: string; p99Ms: string };
}

const hosts: Host[] = [];
try {
  const [cp, w, acp, aw] = await Promise.all(['bj-cp', 'bj-w', 'bj-acp', 'bj-aw'].map((name) => bootHost({ name, kubelet: true })));
  hosts.push(cp!, w!, acp!, aw!);
  await importKubeceptionImage(cp!);
  for (const h of [cp!, w!]) await writeConfig(h, { distro: 'debian', networking: { plugin: 'none' } });
  const boot = await kc(cp!, ['run', 'bootstrap'], { timeoutMs: 900_000 });
  if (boot.code !== 0) throw new Error(`bootstrap failed: ${boot.stderr}`);
  const args = boot.stdout.split('\n').find((l) => l.includes('kubeception run join'))!.trim().split(/\s+/).slice(4);
  const token = args[args.indexOf('--token') + 1]!;

  let t0 = Date.now();
  const j = await kc(w!, ['run', 'join', ...args], { timeoutMs: 300_000 });
  if (j.code !== 0) throw new Error(`join failed: ${j.stderr}`);
  const kcReady = await untilReady(cp!, '/etc/kubernetes/admin.conf', 'bj-w', t0);

  // Peer: kubeadm init + kubeadm join on two identical fresh hosts (external etcd: Debian's, no TLS).
  await kubeadmInit(acp!);
  const admJoin = (await acp!.execOk(['kubeadm', 'token', 'create', '--print-join-command'])).trim().split(/\s+/).slice(1);
  t0 = Date.now();
  await aw!.execOk(['kubeadm', ...admJoin, '--ignore-preflight-errors=all', '--node-name=bj-aw'], { timeoutMs: 300_000 });
  const admReady = await untilReady(acp!, '/etc/kubernetes/admin.conf', 'bj-aw', t0);

  const joinSvc = `https://${cp!.ip}:30000`;
  const ca = await load(w!, `${joinSvc}/ca`, 'GET', '-');
  const post = await load(w!, `${joinSvc}/join`, 'POST', JSON.stringify({ token }));
  const api = await load(w!, `https://${cp!.ip}:6443/readyz`, 'GET', '-');

  console.log('\njoin → Node Ready (one run each, same machine, same script)');
  console.log(`  kubeception run join   ${s(kcReady).padStart(6)} s   ratio to kubeadm join ${(kcReady / admReady).toFixed(2)}`);
  console.log(`  kubeadm join           ${s(admReady).padStart(6)} s`);
  console.log('\nrequests/second from a second bed host (16 connections, ≤3000 requests, ≤20 s)');
  for (const [name, r] of [['join service GET /ca', ca], ['join service POST /join (valid token)', post], ['kube-apiserver GET /readyz', api]] as const)
    console.log(`  ${name.padEnd(40)} ${String(r.rps).padStart(7)} req/s  p50 ${r.p50Ms} ms  p99 ${r.p99Ms} ms  errors ${r.errors}`);
  console.log(`  ratio join-service POST /join / apiserver /readyz: ${(post.rps / api.rps).toFixed(2)}`);
} finally {
  for (const h of hosts) await h.destroy();
}
