/**
 * Upgrades on the bed: a control plane and a worker at v1.34.4 (flannel, CoreDNS) with a workload on
 * the worker. `upgrade plan` shows the path; policy refusals exit 2 and change nothing; a target whose
 * images do not exist is rolled back; `upgrade apply v1.35.4`, killed (-9) while the control plane
 * rolls and run again, converges while a prober in the worker hits the control plane's /readyz every
 * 100 ms (the longest gap is printed); every control-plane component then reports v1.35.4 and the
 * workload pod was not restarted; `upgrade node` on the worker after the "distro" installed the
 * v1.35.4 kubelet; then `upgrade apply v1.35.4 --nodes --max-unavailable 2` rolls the other three
 * kubelets (the control plane's and two more workers') from inside the cluster — the node upgrade
 * controller and its agent Jobs, the "distro" installing the kubelet from the site's task file — in two
 * batches while a watcher checks a PodDisruptionBudget, with the controller's pod killed mid-batch;
 * `run bootstrap` with the old kubernetesVersion is refused, with the new one converges.
 * One cluster for the file: each test builds on the one before.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { bootHost, CACHE_DIR, type Host } from '../bed/bed.ts';
import { importKubeceptionImage } from '../bed/kubeception-image.ts';
import { BED_FLANNEL_CNI_PLUGIN_IMAGE, TEST_IMAGE } from '../bed/addon-images.ts';
import { importUpgradeImages, installKubelet, UPGRADE_COREDNS, UPGRADE_VERSION } from '../bed/upgrade.ts';
import { kc, KC, SITE, writeConfig } from '../helpers/bed-cli.ts';
import { DRAINED_ANNOTATION } from '../../lib/steps/upgrade/upgrade-node.ts';
import { NODE_UPGRADE_CONTROLLER_NAME } from '../../manifests/node-upgrade-controller.ts';
import { startProber } from '../helpers/prober.ts';
import { printedJoin } from '../helpers/join-command.ts';

const FROM = 'v1.34.4';
const ADMIN = '/etc/kubernetes/admin.conf';
const CONFIG = { distro: 'debian', kubernetesVersion: FROM, networking: { flannel: { cniPluginImage: BED_FLANNEL_CNI_PLUGIN_IMAGE } } };
const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));



/**
 * The site's tasks/upgrade-node.ts on the nodes the controller upgrades: the package's task with the
 * bed's "distro" install of the kubelet after the drain (what a distro's package upgrade does there):
 * a read-only bind mount of the target's kubelet over /usr/local/bin/kubelet, made by the host's
 * systemd (`systemd-run`), so it lands in the host's mount namespace although the agent runs this task
 * from its pod, chrooted into the host's `/`. Its preflight takes the older binary (installed later).
 */
const SITE_UPGRADE_NODE = `import { step, task } from 'kubeception/dsl';
import { drainNode, kubeletBinaryAtTarget, nodeAtTarget, restartUpgradedKubelet, uncordonNode, upgradeKubeletConfig, upgradeNodePreflight } from 'kubeception/steps';

export default task('upgrade-node', [
  step('upgrade-node-preflight').run((ctx) => upgradeNodePreflight(ctx, { installedLater: true })),
  step('drain').needs('upgrade-node-preflight').skipIf(nodeAtTarget).timeout(360_000).run(drainNode),
  step('kubelet-install').needs('drain').skipIf(kubeletBinaryAtTarget).run(async (ctx) => {
    const target = ctx.state.upgradeNode.target;
    await ctx.sh.exec(['systemd-run', '--wait', '--collect', '--quiet', 'mount', '--bind', '-o', 'ro', '${CACHE_DIR}/k8s/' + target + '/bin/kubelet', '/usr/local/bin/kubelet'], { timeoutMs: 60_000 });
    return { changed: true, detail: 'kubelet ' + target + ' bound over /usr/local/bin/kubelet' };
  }),
  step('kubelet-config').needs('kubelet-install').run(upgradeKubeletConfig),
  step('kubelet-restart').needs('kubelet-config').timeout(330_000).run(restartUpgradedKubelet),
  step('uncordon').needs('kubelet-restart').run(uncordonNode),
]);
`;
/** Four replicas kept on `a` and `b`, spread evenly. */
const PDB_WORKLOAD = (a: string, b: string) => ({
  apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'pdb-workload', namespace: 'default' },
  spec: {
    replicas: 4, selector: { matchLabels: { app: 'pdb-workload' } },
    template: {
      metadata: { labels: { app: 'pdb-workload' } },
      spec: {
        terminationGracePeriodSeconds: 1,
        affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [a, b] }] }] } } },
        topologySpreadConstraints: [{ maxSkew: 1, topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'ScheduleAnyway', labelSelector: { matchLabels: { app: 'pdb-workload' } } }],
        containers: [{ name: 'sleep', image: TEST_IMAGE, command: ['sleep', '1000000'] }],
      },
    },
  },
});
const PDB = { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name: 'pdb-workload', namespace: 'default' }, spec: { maxUnavailable: 1, selector: { matchLabels: { app: 'pdb-workload' } } } };

describe(`upgrade ${FROM} → ${UPGRADE_VERSION}`, { timeout: 3_000_000 }, () => {
  let cp: Host;
  let w: Host;
  /** Two more workers, rolled by the node upgrade controller (not by hand). */
  let w2: Host;
  let w3: Host;
  let t = Date.now();
  const kubectl = (...args: string[]) => cp.execOk(['kubectl', `--kubeconfig=${ADMIN}`, ...args], { timeoutMs: 60_000 });
  const json = async (...args: string[]) => JSON.parse(await kubectl(...args, '-o', 'json'));
  const images = async () => {
    const out: Record<string, string> = {};
    for (const [kind, name] of [['daemonset', 'kube-apiserver'], ['deployment', 'kube-controller-manager'], ['deployment', 'kube-scheduler'], ['daemonset', 'kube-proxy'], ['deployment', 'coredns']] as const)
      out[name] = (await json('-n', 'kube-system', 'get', kind, name)).spec.template.spec.containers[0].image.split(':').pop();
    return out;
  };
  const version = async () => JSON.parse(await kubectl('get', '--raw', '/version')).gitVersion as string;
  const journal = () => cp.exec(['cat', '/var/lib/kubeception/upgrade/journal.json']);
  const workload = async () => {
    // Live pods only: one the set-up's nodeSelector patch replaced may still be terminating.
    const pods = ((await json('get', 'pods', '-l', 'app=upgrade-workload')).items as any[]).filter((p) => !p.metadata.deletionTimestamp);
    return pods.map((p) => `${p.metadata.uid} ${p.spec.nodeName} restarts=${p.status.containerStatuses?.[0]?.restartCount}`).sort();
  };

  before(async () => {
    const host = (name: string) => bootHost({ name, kubelet: { cni: 'none', version: FROM }, bootTimeoutMs: 180_000 });
    [cp, w, w2, w3] = await Promise.all([host('u10cp'), host('u10w'), host('u10w2'), host('u10w3')]);
    // The agent Jobs run kubeception's image on every node they upgrade; the new kube-proxy runs everywhere.
    await Promise.all([importKubeceptionImage(cp), importUpgradeImages(cp), importUpgradeImages(w)]);
    await Promise.all([w2, w3].map(async (h) => { await importKubeceptionImage(h); await importUpgradeImages(h); }));
    for (const h of [cp, w, w2, w3]) await writeConfig(h, CONFIG);
    for (const h of [cp, w2, w3]) await h.writeFile(`${SITE}/tasks/upgrade-node.ts`, SITE_UPGRADE_NODE);
    // 1.34 is kept for existing clusters only: this one is made on purpose, to upgrade it.
    const r = await kc(cp, ['run', 'bootstrap', '--ignore-preflight-errors', 'KubernetesVersionSupport'], { timeoutMs: 900_000 });
    assert.equal(r.code, 0, `bootstrap failed:\n${r.stderr}\n${r.stdout.slice(-3000)}`);
    const printed = printedJoin(r.stdout); // the token in KUBECEPTION_TOKEN
    // One token per node (a token buys one node).
    const tokens = [printed.env, ...(await Promise.all([w2, w3].map(async () => ({ KUBECEPTION_TOKEN: (await kc(cp, ['token', 'create'])).stdout.trim() }))))];
    const joins = await Promise.all([w, w2, w3].map((h, i) => kc(h, ['run', 'join', ...printed.args, '--wait-for-network'], { timeoutMs: 600_000, env: tokens[i] })));
    for (const [i, j] of joins.entries()) assert.equal(j.code, 0, `join of worker ${i + 1} failed:\n${j.stderr}\n${j.stdout.slice(-2000)}`);
    await kubectl('create', 'deployment', 'upgrade-workload', `--image=${TEST_IMAGE}`, '--', 'sleep', '1000000');
    await kubectl('patch', 'deployment', 'upgrade-workload', '-p', JSON.stringify({ spec: { template: { spec: { nodeSelector: { 'kubernetes.io/hostname': w.name } } } } }));
    await kubectl('rollout', 'status', 'deployment/upgrade-workload', '--timeout=180s');
    await kubectl('-n', 'kube-system', 'rollout', 'status', 'deployment/coredns', '--timeout=300s');
    console.log(`setup (4 hosts, bootstrap, 3 joins, workload): ${secs(Date.now() - t)}`);
  });
  after(async () => {
    await Promise.all([cp, w, w2, w3].map((h) => h?.destroy()));
  });

  test('upgrade plan shows every component, the kubelets and etcd, and allows one minor up', async () => {
    t = Date.now();
    const r = await kc(cp, ['upgrade', 'plan', UPGRADE_VERSION, '--output', 'json']);
    assert.equal(r.code, 0, r.stderr);
    const plan = JSON.parse(r.stdout);
    assert.equal(plan.kind, 'UpgradePlan');
    assert.equal(plan.clusterVersion, FROM);
    assert.equal(plan.allowed, true);
    const row = (n: string) => plan.components.find((c: any) => c.name === n);
    for (const n of ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kube-proxy']) assert.deepEqual([row(n).current, row(n).target], [FROM, UPGRADE_VERSION], n);
    assert.equal(row('coredns').target, UPGRADE_COREDNS);
    assert.deepEqual(plan.kubelets.map((k: any) => k.version).sort(), [FROM, FROM, FROM, FROM]);
    assert.match(plan.etcd.version, /^3\./);
    const text = await cp.execOk(['node', KC, 'upgrade', 'plan', UPGRADE_VERSION], { cwd: SITE });
    console.log(text);
    assert.match(text, new RegExp(`kube-apiserver\\s+DaemonSet\\s+${FROM}\\s+${UPGRADE_VERSION}`));
    console.log(`test time: ${secs(Date.now() - t)}`);
  });

  test('policy refusals exit 2 with the check id and change nothing: a skipped minor, a kubelet newer than the target', async () => {
    t = Date.now();
    const before = await images();
    const skip = await kc(cp, ['upgrade', 'apply', 'v1.36.1']);
    assert.equal(skip.code, 2, skip.stderr);
    assert.match(skip.stderr, /ControlPlaneMinorSkew/);
    // A Node whose kubelet reports a newer version than the target (registered through the API, as a kubelet would).
    await cp.execOk(['sh', '-c', `printf '%s' '${JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'newer-kubelet' } })}' | kubectl --kubeconfig=${ADMIN} create -f -`]);
    await kubectl('patch', 'node', 'newer-kubelet', '--subresource=status', '--type=merge', '-p', JSON.stringify({ status: { nodeInfo: { kubeletVersion: 'v1.36.0' } } }));
    const newer = await kc(cp, ['upgrade', 'apply', UPGRADE_VERSION]);
    await kubectl('delete', 'node', 'newer-kubelet');
    assert.equal(newer.code, 2, newer.stderr);
    assert.match(newer.stderr, /KubeletNewerThanTarget.*newer-kubelet|newer-kubelet.*KubeletNewerThanTarget/s);
    assert.deepEqual(await images(), before);
    assert.notEqual((await journal()).code, 0, 'no journal written');
    console.log(`test time: ${secs(Date.now() - t)}`);
  });

  test('a target whose images do not exist: apply fails after its timeout, rolls back, exit 1 names why; the cluster serves the old version', async () => {
    t = Date.now();
    const r = await kc(cp, ['upgrade', 'apply', 'v1.35.99', '--timeout', '60s'], { timeoutMs: 900_000 });
    assert.equal(r.code, 1, `${r.stderr}\n${r.stdout.slice(-2000)}`);
    assert.match(r.stderr, /upgrade-rolled-back/);
    assert.match(r.stderr, /rolled back to v1\.34\.4/);
    assert.equal(await version(), FROM);
    assert.equal((await images())['kube-apiserver'], FROM);
    await kubectl('-n', 'kube-system', 'rollout', 'status', 'daemonset/kube-apiserver', '--timeout=120s');
    assert.equal(JSON.parse((await journal()).stdout).phase, 'rolled-back');
    console.log(`rollback run: ${secs(Date.now() - t)}`);
  });

  test(`upgrade apply ${UPGRADE_VERSION}, killed -9 mid-roll and run again, with a 100 ms /readyz prober: every component at the target, the workload untouched`, async () => {
    t = Date.now();
    const pods = await workload();
    const prober = await startProber(w, `https://${cp.ip}:6443/readyz`);
    await sleep(2_000);
    // First run: killed once the new kube-apiserver template is applied (the DaemonSet rolls).
    const first = cp.exec(['sh', '-c', `echo $$ > /tmp/upgrade.pid; exec node ${KC} upgrade apply ${UPGRADE_VERSION}`], { cwd: SITE, timeoutMs: 900_000 });
    let killed = false;
    for (let i = 0; i < 300 && !killed; i++) {
      await sleep(1_000);
      const tag = (await cp.exec(['kubectl', `--kubeconfig=${ADMIN}`, '-n', 'kube-system', 'get', 'daemonset', 'kube-apiserver', '-o', 'jsonpath={.spec.template.spec.containers[0].image}'])).stdout;
      if (tag.endsWith(UPGRADE_VERSION)) {
        await cp.execOk(['sh', '-c', 'kill -9 $(cat /tmp/upgrade.pid)']);
        killed = true;
      }
    }
    const f = await first;
    assert.ok(killed, `never saw the new template: ${f.stderr}`);
    assert.notEqual(f.code, 0, 'the first run was killed');
    assert.equal(JSON.parse((await journal()).stdout).phase, 'control-plane');
    const again = await kc(cp, ['upgrade', 'apply', UPGRADE_VERSION, '--output', 'json'], { timeoutMs: 1_200_000 });
    await sleep(3_000);
    const gap = await prober.stop();
    assert.equal(again.code, 0, `${again.stderr}\n${again.stdout.slice(-3000)}`);
    const logs = again.events.filter((e) => e.event === 'log' || e.event === 'step-done').map((e) => e.message ?? e.detail ?? '').join('\n');
    assert.match(logs, /resuming the upgrade v1\.34\.4 → v1\.35\.4/);
    console.log(`upgrade apply (killed + re-run): ${secs(Date.now() - t)}; /readyz longest gap ${gap.gapMs} ms from ${gap.gapStart} (${gap.failed} of ${gap.total} probes failed)`);
    assert.deepEqual(await images(), { 'kube-apiserver': UPGRADE_VERSION, 'kube-controller-manager': UPGRADE_VERSION, 'kube-scheduler': UPGRADE_VERSION, 'kube-proxy': UPGRADE_VERSION, coredns: UPGRADE_COREDNS });
    assert.equal(await version(), UPGRADE_VERSION);
    for (const c of ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler']) {
      const ps = (await json('-n', 'kube-system', 'get', 'pods', '-l', `component=${c}`)).items as any[];
      assert.ok(ps.length >= 1 && ps.every((p) => p.spec.containers[0].image.endsWith(UPGRADE_VERSION) && p.status.containerStatuses?.[0]?.ready), `${c} pods: ${ps.map((p) => `${p.metadata.name} ${p.spec.containers[0].image} ready=${p.status.containerStatuses?.[0]?.ready}`).join(', ')}`);
    }
    assert.match(await cp.readFile('/etc/kubernetes/recovery/recovery-kube-apiserver.yaml'), new RegExp(`kube-apiserver:${UPGRADE_VERSION.replace(/\./g, '\\.')}`), 'the recovery manifest follows the upgrade');
    assert.deepEqual(await workload(), pods, 'the workload pod was not restarted');
    assert.equal(JSON.parse((await journal()).stdout).phase, 'done');
    const snap = await cp.execOk(['sh', '-c', 'stat -c "%a %s %n" /var/lib/kubeception/upgrade/*/etcd-snapshot.db /var/lib/kubeception/upgrade/*/objects.yaml']);
    for (const l of snap.trim().split('\n')) assert.match(l, /^600 [1-9]\d* /, l);
    assert.ok(gap.gapMs <= 5_000, `the API was down ${gap.gapMs} ms from ${gap.gapStart} (answers ${gap.gapAnswers}); the re-run's events:\n${again.events.map((e) => `${e.time} ${e.event} ${e.step ?? ''} ${(e.message ?? e.detail ?? '').split('\n')[0]}`).join('\n')}`);
  });

  test(`upgrade node on the worker: refused (exit 2) until the distro installed the ${UPGRADE_VERSION} kubelet; then drained, upgraded, Ready, uncordoned`, async () => {
    t = Date.now();
    await w.writeFile('/root/admin.conf', await cp.readFile(ADMIN));
    try {
      const early = await kc(w, ['upgrade', 'node', '--kubeconfig', '/root/admin.conf']);
      assert.equal(early.code, 2, early.stderr);
      assert.match(early.stderr, /KubeletBinaryVersion/);
      assert.notEqual((await json('get', 'node', w.name)).spec.unschedulable, true, 'not cordoned by a refused run');
      await installKubelet(w);
      const r = await kc(w, ['upgrade', 'node', '--kubeconfig', '/root/admin.conf'], { timeoutMs: 900_000 });
      assert.equal(r.code, 0, `${r.stderr}\n${r.stdout.slice(-2000)}`);
      const node = await json('get', 'node', w.name);
      assert.equal(node.status.nodeInfo.kubeletVersion, UPGRADE_VERSION);
      assert.equal(node.status.conditions.find((c: any) => c.type === 'Ready').status, 'True');
      assert.notEqual(node.spec.unschedulable, true);
      assert.match(r.stdout + r.stderr, /evicted default\/upgrade-workload/);
    } finally {
      await w.exec(['rm', '-f', '/root/admin.conf']);
    }
    console.log(`upgrade node: ${secs(Date.now() - t)}`);
  });

  test(`upgrade apply ${UPGRADE_VERSION} --nodes --max-unavailable 2: the controller rolls the other three kubelets in two batches, the PodDisruptionBudget never broken, its pod killed mid-batch; no Node left cordoned`, async () => {
    t = Date.now();
    // Four replicas on the two workers the controller drains one after the other (two on each), a PDB
    // allowing one unavailable: every eviction of a drain must wait for the last one's replacement.
    await cp.execOk(['sh', '-c', `kubectl --kubeconfig=${ADMIN} apply -f - <<'EOF'\n${JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [PDB_WORKLOAD(w2.name, w3.name), PDB] })}\nEOF`]);
    await kubectl('rollout', 'status', 'deployment/pdb-workload', '--timeout=180s');
    // The watcher: in the control-plane host every 0.5 s, the workload's pods (name, Ready, terminating).
    await cp.execOk(['systemd-run', '--unit=pdb-watch', '--collect', 'sh', '-c', `while :; do date +%s.%N; kubectl --kubeconfig=${ADMIN} get pods -l app=pdb-workload -o jsonpath='{range .items[*]}{.metadata.name} {.status.conditions[?(@.type=="Ready")].status} {.metadata.deletionTimestamp}{"\\n"}{end}'; echo ---; sleep 0.5; done > /root/pdb-watch.log 2>&1`]);
    try {
      const apply = await kc(cp, ['upgrade', 'apply', UPGRADE_VERSION, '--nodes', '--max-unavailable', '2'], { timeoutMs: 600_000 });
      assert.equal(apply.code, 0, `${apply.stderr}\n${apply.stdout.slice(-2000)}`);
      assert.match(apply.stderr, /NodeUpgradePlan kubelet created/);
      const plan = async () => json('get', 'nodeupgradeplan', 'kubelet');
      // Kill the controller's pod once an agent of the first batch runs.
      const controllerPod = async () => ((await json('-n', 'kube-system', 'get', 'pods', '-l', `app.kubernetes.io/name=${NODE_UPGRADE_CONTROLLER_NAME}`)).items as any[]).filter((p) => !p.metadata.deletionTimestamp).map((p) => p.metadata.name as string);
      let killed: string[] = [];
      for (let i = 0; i < 600 && !killed.length; i++) {
        const st = (await plan()).status ?? {};
        assert.notEqual(st.phase, 'Failed', JSON.stringify(st));
        if ((st.nodes ?? []).some((n: any) => n.batch === 1 && n.phase === 'Upgrading')) {
          killed = await controllerPod();
          await kubectl('-n', 'kube-system', 'delete', 'pod', ...killed, '--grace-period=0', '--force');
        } else await sleep(1_000);
      }
      assert.equal(killed.length, 1, 'killed the controller while batch 1 upgraded');
      let st: any = {};
      for (let i = 0; i < 900; i++) {
        st = (await plan()).status ?? {};
        if (st.phase === 'Complete' || st.phase === 'Failed') break;
        await sleep(1_000);
      }
      const rolled = Date.now() - t;
      console.log(`rollout: ${secs(rolled)}; status:\n${JSON.stringify(st, null, 1)}`);
      if (st.phase !== 'Complete') {
        const agents = await cp.exec(['kubectl', `--kubeconfig=${ADMIN}`, '-n', 'kube-system', 'logs', '-l', 'app.kubernetes.io/name=kubeception-node-upgrade-agent', '--prefix', '--tail=40']);
        const controller = await cp.exec(['kubectl', `--kubeconfig=${ADMIN}`, '-n', 'kube-system', 'logs', `deployment/${NODE_UPGRADE_CONTROLLER_NAME}`, '--tail=40']);
        assert.fail(`the rollout ended ${st.phase ?? 'nowhere'}: ${JSON.stringify(st.conditions)}\nagents:\n${agents.stdout}${agents.stderr}\ncontroller:\n${controller.stdout}${controller.stderr}`);
      }
      const batches = Object.fromEntries((st.nodes as any[]).map((n) => [n.name, [n.batch, n.phase]]));
      assert.deepEqual(batches, { [cp.name]: [1, 'Done'], [w2.name]: [1, 'Done'], [w3.name]: [2, 'Done'] });
      const now = await controllerPod();
      assert.ok(now.length === 1 && now[0] !== killed[0], `a new controller pod finished it (killed ${killed}, now ${now})`);
      for (const n of (await json('get', 'nodes')).items as any[]) {
        assert.equal(n.status.nodeInfo.kubeletVersion, UPGRADE_VERSION, n.metadata.name);
        assert.equal(n.status.conditions.find((c: any) => c.type === 'Ready').status, 'True', n.metadata.name);
        assert.notEqual(n.spec.unschedulable, true, `${n.metadata.name} left cordoned`);
        assert.equal(n.metadata.annotations?.[DRAINED_ANNOTATION], undefined, n.metadata.name);
      }
      // A Node is Done once Ready at the target; its agent still lifts its own cordon and exits.
      const jobs = async () => ((await json('-n', 'kube-system', 'get', 'jobs', '-l', 'kubeception.io/plan=kubelet')).items as any[]).map((j) => `${j.metadata.annotations['kubeception.io/node']} succeeded=${j.status.succeeded ?? 0}`).sort();
      const want = [cp.name, w2.name, w3.name].map((n) => `${n} succeeded=1`).sort();
      for (let i = 0; i < 60 && JSON.stringify(await jobs()) !== JSON.stringify(want); i++) await sleep(1_000);
      assert.deepEqual(await jobs(), want);
      // The site's kubelet-install ran on each of them (the "distro" installed the kubelet).
      for (const h of [cp, w2, w3]) assert.match(await h.execOk(['/usr/local/bin/kubelet', '--version']), new RegExp(UPGRADE_VERSION.replace(/\./g, '\\.')));
    } finally {
      await cp.exec(['systemctl', 'stop', 'pdb-watch']);
    }
    // Every sample: at least 3 of the 4 pods Ready and not terminating (the PDB's maxUnavailable 1).
    const samples = (await cp.readFile('/root/pdb-watch.log')).split('---\n').map((x) => x.trim().split('\n')).filter((l) => /^\d+\.\d+$/.test(l[0] ?? ''));
    const healthy = samples.map((l) => [l[0], l.slice(1).filter((x) => / True\s*$/.test(x)).length] as const);
    const worst = healthy.reduce((a, b) => (b[1] < a[1] ? b : a));
    console.log(`PDB watcher: ${samples.length} samples, fewest healthy pods ${worst[1]} (at ${worst[0]})`);
    assert.ok(samples.length > 20, `the watcher sampled: ${samples.length}`);
    assert.ok(worst[1] >= 3, `the PodDisruptionBudget was broken: ${worst[1]} healthy pods at ${worst[0]}:\n${samples.find((l) => l[0] === worst[0])?.join('\n')}`);
    console.log(`upgrade apply --nodes, 3 kubelets in 2 batches: ${secs(Date.now() - t)}`);
  });

  test('run bootstrap with the old kubernetesVersion is refused (KubernetesVersion, exit 2); with the new one it converges', async () => {
    t = Date.now();
    const old = await kc(cp, ['run', 'bootstrap']);
    assert.equal(old.code, 2, old.stderr);
    assert.match(old.stderr, /KubernetesVersion/);
    await writeConfig(cp, { ...CONFIG, kubernetesVersion: UPGRADE_VERSION });
    const r = await kc(cp, ['run', 'bootstrap'], { timeoutMs: 900_000 });
    assert.equal(r.code, 0, `${r.stderr}\n${r.stdout.slice(-2000)}`);
    assert.equal(await version(), UPGRADE_VERSION);
    console.log(`test time: ${secs(Date.now() - t)}`);
  });
});
