/**
 * The supported upgrade chain on the bed, one minor per hop: a control plane and a worker made at
 * v1.35.4 (flannel, CoreDNS, a workload on the worker), then v1.35.4 → v1.36.3 → v1.37.2. (The
 * "existing clusters" hop v1.34.4 → v1.35.4 is test/e2e/upgrade.test.ts's, with the same prober, killed
 * mid-roll and rolled back: one cluster less to boot in CI.) Each hop: `upgrade plan` allows it (the
 * skew checks) and a skipped minor is refused; `upgrade apply` while a prober in the worker opens a new
 * TLS connection to the control plane's /readyz every 100 ms (the API-gap prober; the longest gap is
 * printed per hop); every component and CoreDNS at the hop's pairing; both kubelets follow with
 * `upgrade node` after the "distro" installed the new kubelet; the config's kubernetesVersion moves
 * along and a re-run of bootstrap converges. The workload pod is never restarted by a control-plane
 * hop. In the first hop the kubelets go through the node upgrade controller first (`upgrade apply
 * --nodes`), with a worker whose kubelet cannot start at the target (the site's kubelet-install
 * binds a broken one): its agent rolls it back, the rollout stops Failed naming it, and `upgrade
 * rollback` returns it to service at its old kubelet; then it is upgraded by hand. Hosts uc12cp, uc12w.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { bootHost, CACHE_DIR, type Host, REPO_ROOT } from '../bed/bed.ts';
import { importKubeceptionImage } from '../bed/kubeception-image.ts';
import { BED_FLANNEL_CNI_PLUGIN_IMAGE, TEST_IMAGE } from '../bed/addon-images.ts';
import { CONTROL_PLANE_IMAGES, importImageArchives } from '../bed/kubelet.ts';
import { runOk } from '../bed/proc.ts';
import { installKubelet } from '../bed/upgrade.ts';
import { kc, SITE, writeConfig } from '../helpers/bed-cli.ts';
import { DRAINED_ANNOTATION } from '../../lib/steps/upgrade/upgrade-node.ts';
import { startProber } from '../helpers/prober.ts';
import { ADMIN, componentLogs, getJson, kubectl, waitFor } from '../helpers/cluster.ts';
import { coreDNSVersion } from '../../manifests/addons/versions.ts';

const CHAIN = ['v1.35.4', 'v1.36.3', 'v1.37.2'];
const FROM = CHAIN[0]!;
const CONFIG = { distro: 'debian', networking: { flannel: { cniPluginImage: BED_FLANNEL_CNI_PLUGIN_IMAGE } } };
const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const corednsArchive = (v: string) => join(CACHE_DIR, 'images', 'addons', `coredns-${coreDNSVersion(v)}.tar`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** A "kubelet" that says it is `version` and cannot start (what a broken package would be). */
const BROKEN_KUBELET = '/root/broken-kubelet';
const brokenKubelet = (version: string) => `#!/bin/sh\ncase "$1" in --version) echo "Kubernetes ${version}" ;; *) echo "broken on purpose (kubeception e2e)" >&2; exit 1 ;; esac\n`;
/**
 * The worker's site tasks/upgrade-node.ts in the first hop: the package's task with a "distro" install
 * of a broken kubelet after the drain (a bind mount made by the host's systemd, as in
 * test/e2e/upgrade.test.ts) that says how to undo it (onKubeletRollback: unmount).
 */
const SITE_BROKEN_INSTALL = `import { step, task } from 'kubeception/dsl';
import { drainNode, kubeletBinaryAtTarget, nodeAtTarget, onKubeletRollback, restartUpgradedKubelet, uncordonNode, upgradeKubeletConfig, upgradeNodePreflight } from 'kubeception/steps';

export default task('upgrade-node', [
  step('upgrade-node-preflight').run((ctx) => upgradeNodePreflight(ctx, { installedLater: true })),
  step('drain').needs('upgrade-node-preflight').skipIf(nodeAtTarget).timeout(360_000).run(drainNode),
  step('kubelet-install').needs('drain').skipIf(kubeletBinaryAtTarget).run(async (ctx) => {
    const run = (argv) => ctx.sh.exec(['systemd-run', '--wait', '--collect', '--quiet', ...argv], { timeoutMs: 60_000 });
    await run(['mount', '--bind', '-o', 'ro', '${BROKEN_KUBELET}', '/usr/local/bin/kubelet']);
    onKubeletRollback(ctx, async () => { await run(['umount', '/usr/local/bin/kubelet']); return 'the broken kubelet unmounted'; });
    return { changed: true, detail: 'a broken kubelet bound over /usr/local/bin/kubelet' };
  }),
  step('kubelet-config').needs('kubelet-install').run(upgradeKubeletConfig),
  step('kubelet-restart').needs('kubelet-config').timeout(330_000).run(restartUpgradedKubelet),
  step('uncordon').needs('kubelet-restart').run(uncordonNode),
]);
`;

describe(`upgrade chain ${CHAIN.join(' → ')}`, { timeout: 5_400_000 }, () => {
  let cp: Host;
  let w: Host;
  const gaps: string[] = [];
  const images = async () => {
    const out: Record<string, string> = {};
    for (const [kind, name] of [['daemonset', 'kube-apiserver'], ['deployment', 'kube-controller-manager'], ['deployment', 'kube-scheduler'], ['daemonset', 'kube-proxy'], ['deployment', 'coredns']] as const)
      out[name] = (await getJson(cp, '-n', 'kube-system', kind, name)).spec.template.spec.containers[0].image.split(':').pop();
    return out;
  };
  // The workload's live pods: a pod the set-up's nodeSelector patch replaced may still be terminating
  // (seen in CI: listed before the first hop, gone after it) and is not the workload's.
  const workload = async () => ((await getJson(cp, 'pods', '-l', 'app=chain-workload')).items as any[]).filter((p) => !p.metadata.deletionTimestamp).map((p) => `${p.metadata.uid} restarts=${p.status.containerStatuses?.[0]?.restartCount}`).sort();

  // The live kube-controller-manager and kube-scheduler pods (a rolled one may still be terminating): name, phase, Ready.
  const selfHostedPods = async () =>
    ((await getJson(cp, '-n', 'kube-system', 'pods', '-l', 'component in (kube-controller-manager,kube-scheduler)')).items as any[])
      .filter((p) => !p.metadata.deletionTimestamp)
      .map((p) => `${p.metadata.name} ${p.status.phase} ready=${p.status.containerStatuses?.[0]?.ready}`)
      .sort();

  before(async () => {
    const t0 = Date.now();
    // The chain's versions other than the default, with their CoreDNS and images (cached; seconds when warm).
    await runOk(['bash', join(REPO_ROOT, 'test', 'bed', 'setup-upgrade.sh')], { timeoutMs: 3_600_000 });
    [cp, w] = await Promise.all(['uc12cp', 'uc12w'].map((name) => bootHost({ name, kubelet: { cni: 'none', version: FROM }, bootTimeoutMs: 180_000 }))) as [Host, Host];
    for (const v of CHAIN.slice(1)) {
      const archives = [...CONTROL_PLANE_IMAGES.map((c) => join(CACHE_DIR, 'images', v, `${c}.tar`)), corednsArchive(v)];
      for (const h of [cp, w]) await importImageArchives(h, archives);
    }
    // The node upgrade agents run kubeception's image on both Nodes in the first hop.
    for (const h of [cp, w]) await importKubeceptionImage(h);
    for (const h of [cp, w]) await writeConfig(h, { ...CONFIG, kubernetesVersion: FROM });
    const r = await kc(cp, ['run', 'bootstrap'], { timeoutMs: 900_000 });
    assert.equal(r.code, 0, `bootstrap failed:\n${r.stderr}\n${r.stdout.slice(-3000)}`);
    const line = r.stdout.split('\n').find((l) => l.includes('kubeception run join'))!;
    const words = line.trim().split(/\s+/);
    const flag = (f: string) => [f, words[words.indexOf(f) + 1]!];
    const token = (await kc(cp, ['token', 'create'])).stdout.trim();
    const j = await kc(w, ['run', 'join', ...flag('--url'), ...flag('--ca-cert-hash'), '--wait-for-network'], { timeoutMs: 600_000, env: { KUBECEPTION_TOKEN: token } });
    assert.equal(j.code, 0, `join failed:\n${j.stderr}\n${j.stdout.slice(-2000)}`);
    await kubectl(cp, 'create', 'deployment', 'chain-workload', `--image=${TEST_IMAGE}`, '--', 'sleep', '1000000');
    await kubectl(cp, 'patch', 'deployment', 'chain-workload', '-p', JSON.stringify({ spec: { template: { spec: { nodeSelector: { 'kubernetes.io/hostname': w.name } } } } }));
    await kubectl(cp, 'rollout', 'status', 'deployment/chain-workload', '--timeout=180s');
    await waitFor('the replaced workload pod gone', 120_000, async () => ((await getJson(cp, 'pods', '-l', 'app=chain-workload')).items.length === 1 ? true : undefined));
    console.log(`[time] ${secs(Date.now() - t0)}  set-up at ${FROM}`);
  });
  after(async () => {
    console.log(`longest /readyz gap per hop: ${gaps.join('; ')}`);
    await Promise.all([cp, w].map((h) => h?.destroy()));
  });

  /**
   * The first hop's kubelets through the node upgrade controller: the control plane's (the distro
   * installed its target kubelet) rolls, the worker's cannot start (a broken kubelet): its agent rolls
   * it back, the plan stops Failed naming it; `upgrade rollback` returns it, uncordoned, at `from`.
   */
  async function failingNodeRollout(from: string, target: string): Promise<void> {
    const t0 = Date.now();
    await installKubelet(cp, target);
    await w.writeFile(BROKEN_KUBELET, brokenKubelet(target), 0o755);
    await w.writeFile(`${SITE}/tasks/upgrade-node.ts`, SITE_BROKEN_INSTALL);
    try {
      const apply = await kc(cp, ['upgrade', 'apply', target, '--nodes'], { timeoutMs: 900_000 });
      assert.equal(apply.code, 0, `${apply.stderr}\n${apply.stdout.slice(-2000)}`);
      assert.match(apply.stderr, /NodeUpgradePlan kubelet created/);
      let st: any = {};
      for (let k = 0; k < 600 && st.phase !== 'Failed' && st.phase !== 'Complete'; k++) {
        st = (await getJson(cp, 'nodeupgradeplan', 'kubelet')).status ?? {};
        if (st.phase !== 'Failed') await sleep(1_000);
      }
      console.log(`# node rollout with a failing Node: ${secs(Date.now() - t0)} to ${st.phase}; status:\n${JSON.stringify(st, null, 1)}`);
      const agents = async () => (await cp.exec(['kubectl', `--kubeconfig=${ADMIN}`, '-n', 'kube-system', 'logs', '-l', 'app.kubernetes.io/name=kubeception-node-upgrade-agent', '--prefix', '--tail=30'])).stdout;
      assert.equal(st.phase, 'Failed', `the rollout did not fail: ${JSON.stringify(st)}\n${await agents()}`);
      const row = (n: string) => (st.nodes as any[]).find((x) => x.name === n);
      assert.deepEqual([row(cp.name)?.phase, row(w.name)?.phase, row(w.name)?.rolledBack], ['Done', 'Failed', true], JSON.stringify(st.nodes));
      assert.ok(row(w.name).message.includes(`error kubelet-upgrade-rolled-back: Node uc12w; why: the kubelet ${target} did not come up (`), row(w.name).message);
      assert.match(st.conditions.find((c: any) => c.type === 'Failed').message, /^Node uc12w: the upgrade agent failed/);
      const node = async (h: Host) => getJson(cp, 'node', h.name);
      let wn = await node(w);
      assert.equal(wn.status.nodeInfo.kubeletVersion, from, 'the worker runs its old kubelet again');
      assert.equal(wn.status.conditions.find((c: any) => c.type === 'Ready').status, 'True');
      assert.equal(wn.spec.unschedulable, true, 'Failed: the worker stays cordoned');
      assert.match(await w.execOk(['/usr/local/bin/kubelet', '--version']), new RegExp(`${from.replace(/\./g, '\\.')}$`, 'm'), 'the broken kubelet was unmounted');
      assert.equal((await node(cp)).status.nodeInfo.kubeletVersion, target);
      const status = await kc(cp, ['upgrade', 'status']);
      assert.equal(status.code, 1, 'upgrade status of a Failed plan exits 1');
      assert.match(status.stdout, /uc12w +2 +Failed/);
      const rb = await kc(cp, ['upgrade', 'rollback']);
      assert.equal(rb.code, 0, rb.stderr);
      for (let k = 0; k < 120 && st.phase !== 'RolledBack'; k++) {
        await sleep(1_000);
        st = (await getJson(cp, 'nodeupgradeplan', 'kubelet')).status ?? {};
      }
      assert.equal(st.phase, 'RolledBack', JSON.stringify(st));
      wn = await node(w);
      assert.deepEqual([wn.spec.unschedulable, wn.metadata.annotations?.[DRAINED_ANNOTATION], wn.status.nodeInfo.kubeletVersion], [undefined, undefined, from], 'the worker back in service at its old kubelet');
      console.log(`# node rollout, failure, roll-back and \`upgrade rollback\`: ${secs(Date.now() - t0)}`);
    } finally {
      await w.exec(['rm', '-f', `${SITE}/tasks/upgrade-node.ts`]);
    }
  }

  for (const [i, target] of CHAIN.slice(1).entries()) {
    const from = CHAIN[i]!;
    test(`${from} → ${target}: plan allows it, apply with the prober, both kubelets follow, bootstrap converges at the new version`, async () => {
      const t0 = Date.now();
      const skip = CHAIN[i + 2];
      if (skip) {
        const r = await kc(cp, ['upgrade', 'apply', skip]);
        assert.equal(r.code, 2, r.stderr);
        assert.match(r.stderr, /ControlPlaneMinorSkew/);
      }
      const plan = await kc(cp, ['upgrade', 'plan', target, '--output', 'json']);
      assert.equal(plan.code, 0, plan.stderr);
      assert.equal(JSON.parse(plan.stdout).allowed, true);
      const pods = await workload();
      const prober = await startProber(w, `https://${cp.ip}:6443/readyz`);
      const r = await kc(cp, ['upgrade', 'apply', target, '--output', 'json'], { timeoutMs: 1_800_000 });
      const gap = await prober.stop();
      if (r.code !== 0) assert.fail(`${r.stderr}\n${r.stdout.slice(-3000)}\n--- kube-controller-manager logs:\n${await componentLogs(cp, 'kube-controller-manager')}`);
      // The rollout's own remedies (a stalled surge roll finished for the DaemonSet controller) are printed when they happened.
      for (const l of `${r.stdout}\n${r.stderr}`.split('\n').filter((l) => /surge roll has not finished/.test(l))) console.log(`# remedy in ${from} → ${target}: ${l.slice(0, 600)}`);
      gaps.push(`${from} → ${target} ${gap.gapMs} ms (${gap.failed}/${gap.total} probes failed)`);
      console.log(`upgrade apply ${from} → ${target}: ${secs(Date.now() - t0)}; longest /readyz gap ${gap.gapMs} ms`);
      const want = { 'kube-apiserver': target, 'kube-controller-manager': target, 'kube-scheduler': target, 'kube-proxy': target, coredns: coreDNSVersion(target) };
      assert.deepEqual(await images(), want);
      assert.equal(JSON.parse(await kubectl(cp, 'get', '--raw', '/version')).gitVersion, target);
      assert.deepEqual(await workload(), pods, 'the workload pod was not restarted by the control-plane hop');
      assert.ok(gap.gapMs <= 5_000, `the API was down ${gap.gapMs} ms from ${gap.gapStart} (answers ${gap.gapAnswers})`);
      await w.writeFile('/root/admin.conf', await cp.readFile(ADMIN), 0o600);
      const controlPlanePods = await selfHostedPods();
      if (i === 0) await failingNodeRollout(from, target);
      for (const [h, args] of (i === 0 ? [[w, ['--kubeconfig', '/root/admin.conf']]] : [[cp, []], [w, ['--kubeconfig', '/root/admin.conf']]]) as [Host, string[]][]) {
        await installKubelet(h, target);
        const n = await kc(h, ['upgrade', 'node', ...args], { timeoutMs: 900_000 });
        assert.equal(n.code, 0, `upgrade node on ${h.name}: ${n.stderr}\n${n.stdout.slice(-2000)}`);
      }
      await waitFor('both kubelets at the target and Ready', 300_000, async () => {
        const ns = (await getJson(cp, 'nodes')).items as any[];
        return ns.length === 2 && ns.every((n) => n.status.nodeInfo.kubeletVersion === target && n.status.conditions.some((c: any) => c.type === 'Ready' && c.status === 'True')) ? true : undefined;
      });
      // The drain on the control-plane node leaves its self-hosted kube-controller-manager and
      // kube-scheduler running (evicted, their replacements had no scheduler: CI, hop 2 never observed).
      assert.deepEqual(await selfHostedPods(), controlPlanePods, 'upgrade node left the self-hosted kube-controller-manager and kube-scheduler pods running');
      await writeConfig(cp, { ...CONFIG, kubernetesVersion: target });
      const b = await kc(cp, ['run', 'bootstrap'], { timeoutMs: 900_000 });
      assert.equal(b.code, 0, `bootstrap at ${target}: ${b.stderr}\n${b.stdout.slice(-2000)}`);
      await kubectl(cp, 'rollout', 'status', 'deployment/chain-workload', '--timeout=300s');
      console.log(`[time] ${secs(Date.now() - t0)}  hop ${from} → ${target}`);
    });
  }
});
