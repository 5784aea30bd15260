/**
 * High availability on the bed (issue 11), one shared cluster: a load-balancer host (haproxy,
 * test/bed/lb.ts) as `controlPlaneEndpoint`, three control-plane hosts and a worker. cp1 bootstraps;
 * `certs upload` prints the control-plane join command; cp2's join is SIGKILLed right after its etcd
 * member add and re-run, cp3 joins; three voting etcd members, the control plane spread over three
 * nodes. The worker joins through the LB. The control-plane host whose scheduler leads loses power
 * while a prober hits the LB every 100 ms: kubectl through the LB and scheduling keep working, and the
 * host comes back by itself. cp3 is reset (its member removed), refuses a wrong and an expired
 * certificate key with nothing written, and joins again.
 *
 * kubectl runs in the worker with a copy of cp1's admin.conf, whose server is the LB.
 */
import { after, before, describe } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { bootHost, type Host } from '../bed/bed.ts';
import { routePodSubnets } from '../bed/kubelet.ts';
import { importKubeceptionImage } from '../bed/kubeception-image.ts';
import { lbServers, startLoadBalancer, upBackends } from '../bed/lb.ts';
import { assertSameTree, E2E_PREFIX, kc, snapshot, writeConfig, type KcResult } from '../helpers/bed-cli.ts';
import { sleep, timed, waitFor } from '../helpers/cluster.ts';
import { etcdHealth, etcdMembers } from '../helpers/etcd.ts';
import { argOf, printedJoin, type PrintedJoin } from '../helpers/join-command.ts';
import { type Gap, startProber } from '../helpers/prober.ts';

const N = { lb: `${E2E_PREFIX}h11lb`, cp1: `${E2E_PREFIX}h11cp1`, cp2: `${E2E_PREFIX}h11cp2`, cp3: `${E2E_PREFIX}h11cp3`, w1: `${E2E_PREFIX}h11w1` };
const ADMIN = '/root/admin.conf'; // in the worker: cp1's admin.conf (server = the LB)
/** Right after the learner's member add, before etcd starts on the node (lib/steps/join/etcd-join.ts). */
const CRASH_POINT = 'etcd-join:etcd-member-added';
const KEY_RE = /^certificate key: ([0-9a-f]{64})$/m;
const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

describe('high availability: three control-plane nodes behind a load balancer', { timeout: 3_600_000 }, () => {
  let lb: Host;
  let cp1: Host;
  let cp2: Host;
  let cp3: Host;
  let w1: Host;
  let workerJoin: PrintedJoin;
  let cpJoin: PrintedJoin;
  const kubectl = (...args: string[]) => w1.execOk(['kubectl', `--kubeconfig=${ADMIN}`, '--request-timeout=10s', ...args], { timeoutMs: 30_000 });
  const getJson = async (...args: string[]) => JSON.parse(await kubectl('get', ...args, '-o', 'json'));
  const join = (host: Host, args: string[], env?: Record<string, string>): Promise<KcResult> => kc(host, ['run', 'join', ...args], { timeoutMs: 900_000, env });
  const fail = (what: string, r: KcResult) => `${what} exited ${r.code}\n${r.stderr}\n${r.stdout.slice(-2000)}`;

  const ready = (n: any) => n.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True') === true;
  const nodeReady = (name: string, timeoutMs = 300_000) =>
    waitFor(`Node ${name} Ready`, timeoutMs, async () => (ready(await getJson('node', name)) ? true : undefined), () => kubectl('get', 'nodes', '-o', 'wide'));
  /** Ready pods of `component` (kube-system), their nodes. */
  const readyPodNodes = async (component: string, owner?: string) => {
    const pods = (await getJson('-n', 'kube-system', 'pods', '-l', `component=${component}`)).items as any[];
    return pods.filter((p) => !p.metadata.deletionTimestamp && ready(p) && (!owner || p.metadata.ownerReferences?.[0]?.kind === owner)).map((p) => p.spec.nodeName as string);
  };
  /** Waits until etcd (asked on cp1) has exactly `names` as voting members, each endpoint healthy. */
  const etcdSettled = (names: string[], timeoutMs = 180_000, on = cp1) =>
    waitFor(`etcd: members ${names.join(', ')}, voting and healthy`, timeoutMs, async () => {
      const members = await etcdMembers(on);
      if (members.map((m) => m.name).sort().join() !== [...names].sort().join() || members.some((m) => m.isLearner)) return undefined;
      const health = await etcdHealth(on);
      return health.length === names.length && health.every((h) => h.health) ? true : undefined;
    }, async () => JSON.stringify({ members: await etcdMembers(on), health: await etcdHealth(on).catch((e) => String(e)) }));
  /** `certs upload` on cp1: the key and the control-plane join command it prints (token and key in its environment). */
  const uploadCerts = async (extra: string[] = []) => {
    const r = await kc(cp1, ['certs', 'upload', ...extra]);
    assert.equal(r.code, 0, fail('certs upload', r));
    const key = r.stdout.match(KEY_RE)?.[1];
    assert.ok(key, `no "certificate key: <64 hex>" line:\n${r.stdout}`);
    const printed = printedJoin(r.stdout);
    assert.ok(printed.args.includes('--control-plane'), `printed join lacks --control-plane: ${r.stdout}`);
    assert.equal(printed.certificateKey, key, 'the printed join command carries the printed key (KUBECEPTION_CERTIFICATE_KEY)');
    return { key, printed };
  };

  before(async () => {
    const t0 = Date.now();
    const kubeletHost = (name: string) => bootHost({ name, kubelet: true, bootTimeoutMs: 180_000 });
    const booted = await Promise.allSettled([bootHost({ name: N.lb }), kubeletHost(N.cp1), kubeletHost(N.cp2), kubeletHost(N.cp3), kubeletHost(N.w1)]);
    const failed = booted.find((b) => b.status === 'rejected');
    if (failed) {
      await Promise.all(booted.map((b) => (b.status === 'fulfilled' ? b.value.destroy() : undefined)));
      throw failed.reason;
    }
    [lb, cp1, cp2, cp3, w1] = booted.map((b) => (b as PromiseFulfilledResult<Host>).value) as [Host, Host, Host, Host, Host];
    console.log(`[time] ${secs(Date.now() - t0)}  boot 5 hosts`);
    for (const cp of [cp1, cp2, cp3]) await importKubeceptionImage(cp); // the join service may land on any control-plane node
    await routePodSubnets([cp1, cp2, cp3, w1]); // NodePort 30000 on any node reaches the join-service pod
    await startLoadBalancer(lb, [cp1.ip, cp2.ip, cp3.ip]);
    const config = { distro: 'debian', controlPlaneEndpoint: `${lb.ip}:6443`, networking: { plugin: 'none' } };
    for (const cp of [cp1, cp2, cp3]) await writeConfig(cp, config);
    await writeConfig(w1, { distro: 'debian', networking: { plugin: 'none' } });
    const t1 = Date.now();
    const r = await kc(cp1, ['run', 'bootstrap'], { timeoutMs: 900_000 });
    assert.equal(r.code, 0, fail('bootstrap', r));
    console.log(`[time] ${secs(Date.now() - t1)}  bootstrap cp1`);
    workerJoin = printedJoin(r.stdout);
    const admin = await cp1.readFile('/etc/kubernetes/admin.conf');
    assert.match(admin, new RegExp(`server: https://${lb.ip.replaceAll('.', '\\.')}:6443\\b`), 'admin.conf names the controlPlaneEndpoint');
    await w1.writeFile(ADMIN, admin, 0o600);
    await waitFor('the LB sees cp1 ready', 30_000, async () => ((await upBackends(lb)).includes(cp1.ip) ? true : undefined));
    console.log(`[time] ${secs(Date.now() - t0)}  before: boot 5 hosts, LB, bootstrap cp1`);
  });
  after(async () => {
    await Promise.all([lb, cp1, cp2, cp3, w1].map((h) => h?.destroy()));
  });

  timed('certs upload prints a 64-hex certificate key and the control-plane join command', async () => {
    ({ printed: cpJoin } = await uploadCerts());
    assert.equal(argOf(cpJoin.args, '--url'), `https://${lb.ip}:30000`, 'the join URL is the controlPlaneEndpoint host');
  });

  timed('cp2 join killed right after its etcd member add, re-run → 0; cp3 joins; three voting members, control plane spread', async () => {
    const crashed = await join(cp2, [...cpJoin.args, '--force'], { ...cpJoin.env, KUBECEPTION_CRASH_AT: CRASH_POINT });
    assert.match(crashed.stderr, new RegExp(`crash point ${CRASH_POINT}: SIGKILL`), fail('join meant to die at the member add', crashed));
    assert.equal(crashed.code, 137, 'SIGKILL is 137');
    const again = await join(cp2, [...cpJoin.args, '--force'], cpJoin.env);
    assert.equal(again.code, 0, fail('cp2 join re-run', again));
    const third = await join(cp3, cpJoin.args, cpJoin.env);
    assert.equal(third.code, 0, fail('cp3 join', third));

    const cps = [N.cp1, N.cp2, N.cp3];
    await waitFor('three control-plane Nodes Ready', 300_000, async () => {
      const nodes = (await getJson('nodes', '-l', 'node-role.kubernetes.io/control-plane')).items as any[];
      return nodes.filter(ready).map((n) => n.metadata.name).sort().join() === cps.join() ? true : undefined;
    }, () => kubectl('get', 'nodes', '--show-labels'));
    const members = await etcdMembers(cp1);
    assert.deepEqual(members.map((m) => m.name).sort(), cps, `exactly one member per host (none added twice by the re-run): ${JSON.stringify(members)}`);
    await etcdSettled(cps, 60_000);
    await waitFor('kube-apiserver DaemonSet pods Ready on all three', 300_000, async () => ((await readyPodNodes('kube-apiserver', 'DaemonSet')).sort().join() === cps.join() ? true : undefined));
    for (const component of ['kube-controller-manager', 'kube-scheduler']) {
      await waitFor(`${component}: 3 replicas available on 3 nodes`, 300_000, async () => {
        const d = await getJson('-n', 'kube-system', 'deployment', component);
        const nodes = new Set(await readyPodNodes(component));
        return d.spec.replicas === 3 && d.status.availableReplicas === 3 && nodes.size === 3 ? true : undefined;
      }, () => kubectl('-n', 'kube-system', 'get', 'pods', '-o', 'wide'));
    }
    const pdbs = (await getJson('-n', 'kube-system', 'pdb')).items as any[];
    for (const component of ['kube-controller-manager', 'kube-scheduler'])
      assert.ok(pdbs.some((p) => p.spec.selector?.matchLabels?.component === component), `a PodDisruptionBudget selects ${component}: ${pdbs.map((p) => p.metadata.name).join(', ')}`);
    const ips = [cp1.ip, cp2.ip, cp3.ip];
    await waitFor('the LB sees all three apiservers ready', 30_000, async () => ((await upBackends(lb)).sort().join() === ips.sort().join() ? true : undefined), async () => JSON.stringify(await lbServers(lb)));
  });

  timed('a worker joins through the load balancer', async () => {
    assert.equal(argOf(workerJoin.args, '--url'), `https://${lb.ip}:30000`);
    const r = await join(w1, workerJoin.args, workerJoin.env);
    assert.equal(r.code, 0, fail('worker join', r));
    await nodeReady(N.w1);
  });

  // The host cut is the one whose kube-scheduler holds the leader lease (cp1 unless leadership moved),
  // so that scheduling during the outage needs a new leader on another node. kubectl runs in the
  // worker through the LB; etcdctl on a surviving control-plane host.
  timed('the leader control-plane host loses power: kubectl and scheduling through the LB keep working, short /readyz gap; it comes back by itself', async () => {
    await etcdSettled([N.cp1, N.cp2, N.cp3], 10_000); // with two members one cut loses quorum: fail here, not below
    const byName = new Map([cp1, cp2, cp3].map((h) => [h.name, h]));
    const victim = byName.get((await leaders())['kube-scheduler'] ?? '') ?? cp1;
    const survivor = [cp1, cp2, cp3].find((h) => h !== victim)!;
    assert.ok((await upBackends(lb)).includes(victim.ip), `${victim.name} serves through the LB before the cut: ${JSON.stringify(await lbServers(lb))}`);
    const prober = await startProber(w1, `https://${lb.ip}:6443/readyz`);
    let gap: Gap | undefined;
    try {
      await outageAndReturn(victim, survivor);
    } finally {
      gap = await prober.stop(); // also printed when the outage part failed
      console.log(`prober through the LB (cut to recovery): longest gap ${secs(gap.gapMs)} (target ≤ 5 s), ${gap.failed} of ${gap.total} probes failed`);
      if (!victim.running) await victim.start(); // the later tests need it
    }
    assert.ok(gap.gapMs <= 15_000, `longest /readyz gap through the LB ${secs(gap.gapMs)} > 15 s`);
  });

  async function outageAndReturn(victim: Host, survivor: Host): Promise<void> {
    const v = victim.name;
    console.log(`cutting ${v}; leaders before the cut: ${JSON.stringify(await leaders())}`);
    await sleep(3_000);
    await victim.powerCut();
    const cut = Date.now();
    await waitFor(`the LB marks ${v} down`, 20_000, async () => (!(await upBackends(lb)).includes(victim.ip) ? true : undefined));
    console.log(`LB marked ${v} down ${secs(Date.now() - cut)} after the cut`);
    await kubectl('get', 'nodes'); // through the LB, first try
    await kubectl('create', 'deployment', 'during-outage', '--image=registry.k8s.io/pause:3.10.1', '--replicas=1');
    await waitFor('the new Deployment has a Running pod', 180_000, async () => {
      const pods = (await getJson('pods', '-n', 'default', '-l', 'app=during-outage')).items as any[];
      return pods.some((p) => p.status.phase === 'Running' && p.spec.nodeName) ? true : undefined;
    }, () => kubectl('describe', 'pods', '-n', 'default', '-l', 'app=during-outage'));
    const now = await leaders();
    console.log(`new Deployment's pod Running ${secs(Date.now() - cut)} after the cut (${v} still down); leaders: ${JSON.stringify(now)}`);
    assert.notEqual(now['kube-scheduler'], v, 'a scheduler on another node took the lease');
    // Down long enough for the node controller to notice, so "Ready again" below is a real transition.
    await waitFor(`${v} Node no longer Ready`, 120_000, async () => (!ready(await getJson('node', v)) ? true : undefined));
    console.log(`${v} Node not Ready ${secs(Date.now() - cut)} after the cut; API served through the LB meanwhile`);

    await victim.start();
    const boot = Date.now();
    await nodeReady(v);
    const lease = await getJson('-n', 'kube-node-lease', 'lease', v);
    assert.ok(Date.parse(lease.spec.renewTime) > cut, `${v}'s kubelet renewed its lease after the boot (${lease.spec.renewTime})`);
    console.log(`${v} Node Ready again ${secs(Date.now() - boot)} after boot`);
    await etcdSettled([N.cp1, N.cp2, N.cp3], 180_000, survivor);
    await waitFor(`a kube-apiserver container started on ${v} after the boot, Ready`, 300_000, async () => {
      const pods = (await getJson('-n', 'kube-system', 'pods', '-l', 'component=kube-apiserver', '--field-selector', `spec.nodeName=${v}`)).items as any[];
      return pods.some((p) => ready(p) && p.status.containerStatuses?.every((c: any) => Date.parse(c.state?.running?.startedAt ?? '') >= Math.floor(cut / 1000) * 1000)) ? true : undefined;
    }, () => kubectl('-n', 'kube-system', 'get', 'pods', '-o', 'wide'));
    await waitFor(`the LB sees ${v} ready`, 60_000, async () => ((await upBackends(lb)).includes(victim.ip) ? true : undefined));
    console.log(`${v} etcd member healthy, apiserver pod Ready, back in the LB ${secs(Date.now() - boot)} after boot`);
  }
  /** The node holding each of the controller-manager's and the scheduler's leader leases. */
  const leaders = async (): Promise<Record<string, string>> =>
    Object.fromEntries(await Promise.all(['kube-controller-manager', 'kube-scheduler'].map(async (n) => [n, String((await getJson('-n', 'kube-system', 'lease', n)).spec.holderIdentity).split('_')[0]])));

  timed('reset of cp3 removes its etcd member and Node; the other two stay healthy; bootstrap there is refused', async () => {
    const r = await kc(cp3, ['reset', '--force', '--ignore-preflight-errors', 'EtcdTwoMembers'], { timeoutMs: 600_000 });
    assert.equal(r.code, 0, fail('reset', r));
    await etcdSettled([N.cp1, N.cp2], 60_000);
    const get = await w1.exec(['kubectl', `--kubeconfig=${ADMIN}`, 'get', 'node', N.cp3]);
    assert.notEqual(get.code, 0, `Node ${N.cp3} still there`);
    assert.match(get.stderr, /NotFound/);
    // A fresh host (no CA key) whose controlPlaneEndpoint already answers: no second bootstrap control plane.
    const before = await snapshot(cp3);
    const b = await kc(cp3, ['run', 'bootstrap'], { timeoutMs: 120_000 });
    assert.equal(b.code, 2, fail('bootstrap against a running cluster', b));
    assert.match(b.stderr, /ControlPlaneEndpoint.*already answers at controlPlaneEndpoint/s);
    assertSameTree(before, await snapshot(cp3), 'refused bootstrap');
  });

  async function refusedJoin(args: string[], env: Record<string, string>): Promise<KcResult> {
    const before = await snapshot(cp3);
    const r = await join(cp3, args, env);
    assert.equal(r.code, 2, fail('join with a bad certificate key', r));
    assert.match(r.stderr, /certificate[- ]key/i, 'the message names the certificate key');
    assertSameTree(before, await snapshot(cp3), 'refused control-plane join');
    return r;
  }

  // The expired key is joined with the token of the first upload: the 1 s upload's own token expires
  // with it, and an expired token is refused before the key is ever looked at.
  timed('a wrong or an expired certificate key: exit 2, distinct messages, nothing written', async () => {
    const { key, printed } = await uploadCerts();
    let wrong = randomBytes(32).toString('hex');
    if (wrong === key) wrong = randomBytes(32).toString('hex');
    const w = await refusedJoin(printed.args, { ...printed.env, KUBECEPTION_CERTIFICATE_KEY: wrong });
    assert.doesNotMatch(w.stderr, /expired/i, 'a wrong key is not reported as expired');
    const short = await uploadCerts(['--ttl', '1s']);
    await sleep(2_000);
    const e = await refusedJoin(printed.args, { ...printed.env, KUBECEPTION_CERTIFICATE_KEY: short.key });
    assert.match(e.stderr, /expired/i);
    assert.doesNotMatch(e.stderr, /join-token/, 'refused for the key, not the token');
  });

  timed('cp3 joins again after a fresh certs upload: three voting members, healthy', async () => {
    const { printed } = await uploadCerts();
    const r = await join(cp3, printed.args, printed.env);
    assert.equal(r.code, 0, fail('cp3 re-join', r));
    await nodeReady(N.cp3);
    await etcdSettled([N.cp1, N.cp2, N.cp3]);
    await waitFor('cp3 kube-apiserver pod Ready', 300_000, async () => ((await readyPodNodes('kube-apiserver', 'DaemonSet')).includes(N.cp3) ? true : undefined));
  });
});
