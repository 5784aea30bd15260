/**
 * Upgrades on the bed: a control plane and a worker at v1.34.4 (flannel, CoreDNS) with a workload on
 * the worker. `upgrade plan` shows the path; policy refusals exit 2 and change nothing; a target whose
 * images do not exist is rolled back; `upgrade apply v1.35.4`, killed (-9) while the control plane
 * rolls and run again, converges while a prober in the worker hits the control plane's /readyz every
 * 100 ms (the longest gap is printed); every control-plane component then reports v1.35.4 and the
 * workload pod was not restarted; `upgrade node` on the worker after the "distro" installed the
 * v1.35.4 kubelet; `run bootstrap` with the old kubernetesVersion is refused, with the new one converges.
 * One cluster for the file: each test builds on the one before.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { bootHost, type Host } from '../bed/bed.ts';
import { importKubeceptionImage } from '../bed/kubeception-image.ts';
import { BED_FLANNEL_CNI_PLUGIN_IMAGE, TEST_IMAGE } from '../bed/addon-images.ts';
import { importUpgradeImages, installKubelet, UPGRADE_COREDNS, UPGRADE_VERSION } from '../bed/upgrade.ts';
import { kc, KC, SITE, writeConfig } from '../helpers/bed-cli.ts';
import { startProber } from '../helpers/prober.ts';
import { printedJoin } from '../helpers/join-command.ts';

const FROM = 'v1.34.4';
const ADMIN = '/etc/kubernetes/admin.conf';
const CONFIG = { distro: 'debian', kubernetesVersion: FROM, networking: { flannel: { cniPluginImage: BED_FLANNEL_CNI_PLUGIN_IMAGE } } };
const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));



describe(`upgrade ${FROM} → ${UPGRADE_VERSION}`, { timeout: 3_000_000 }, () => {
  let cp: Host;
  let w: Host;
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
    [cp, w] = await Promise.all([bootHost({ name: 'u10cp', kubelet: { cni: 'none', version: FROM }, bootTimeoutMs: 180_000 }), bootHost({ name: 'u10w', kubelet: { cni: 'none', version: FROM }, bootTimeoutMs: 180_000 })]);
    await Promise.all([importKubeceptionImage(cp), importUpgradeImages(cp), importUpgradeImages(w)]);
    for (const h of [cp, w]) await writeConfig(h, CONFIG);
    // 1.34 is kept for existing clusters only: this one is made on purpose, to upgrade it.
    const r = await kc(cp, ['run', 'bootstrap', '--ignore-preflight-errors', 'KubernetesVersionSupport'], { timeoutMs: 900_000 });
    assert.equal(r.code, 0, `bootstrap failed:\n${r.stderr}\n${r.stdout.slice(-3000)}`);
    const printed = printedJoin(r.stdout); // the token in KUBECEPTION_TOKEN
    const j = await kc(w, ['run', 'join', ...printed.args, '--wait-for-network'], { timeoutMs: 600_000, env: printed.env });
    assert.equal(j.code, 0, `join failed:\n${j.stderr}\n${j.stdout.slice(-2000)}`);
    await kubectl('create', 'deployment', 'upgrade-workload', `--image=${TEST_IMAGE}`, '--', 'sleep', '1000000');
    await kubectl('patch', 'deployment', 'upgrade-workload', '-p', JSON.stringify({ spec: { template: { spec: { nodeSelector: { 'kubernetes.io/hostname': w.name } } } } }));
    await kubectl('rollout', 'status', 'deployment/upgrade-workload', '--timeout=180s');
    await kubectl('-n', 'kube-system', 'rollout', 'status', 'deployment/coredns', '--timeout=300s');
    console.log(`setup (2 hosts, bootstrap, join, workload): ${secs(Date.now() - t)}`);
  });
  after(async () => {
    await Promise.all([cp, w].map((h) => h?.destroy()));
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
    assert.deepEqual(plan.kubelets.map((k: any) => k.version).sort(), [FROM, FROM]);
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
