/**
 * distros/kubic for real, on the bed's Kubic-like hosts (test/bed/kubic.ts: read-only /usr, CRI-O,
 * the kubelet at /usr/bin/kubelet, etcd's environment in /etc/sysconfig/etcd). `run bootstrap --distro
 * kubic` on one gives a self-hosted control plane on CRI-O with CoreDNS and flannel; a Debian worker
 * (containerd) and a kubic worker (CRI-O) join; pods on the two workers reach each other over flannel;
 * a re-run changes nothing; a power cut brings the API back with no command; `reset` on the kubic
 * worker and on the control plane leaves nothing of CRI-O's pods (checked with the host's own tools).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { bootHost, type Host } from '../bed/bed.ts';
import { importKubeceptionImage } from '../bed/kubeception-image.ts';
import { BED_FLANNEL_CNI_PLUGIN_IMAGE, TEST_IMAGE } from '../bed/addon-images.ts';
import { BED_CRIO_VERSION } from '../bed/crio.ts';
import { E2E_PREFIX, KC, kc, SITE, writeConfig } from '../helpers/bed-cli.ts';
import { apply, getJson, inPod, kubectl, pod, podsReady, waitFor } from '../helpers/cluster.ts';
import { printedJoin } from '../helpers/join-command.ts';

const CONFIG = { networking: { flannel: { cniPluginImage: BED_FLANNEL_CNI_PLUGIN_IMAGE } } };
const [CP, WD, WK] = ['k31cp', 'k31wd', 'k31wk'].map((n) => `${E2E_PREFIX}${n}`) as [string, string, string];
/** The kubic worker's kubelet at first (built by setup.sh: the upgrade suite's start); `upgrade node` brings it to the bed's version. */
const OLD_KUBELET = 'v1.34.4';
const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const runtimeOf = async (cp: Host, node: string) => (await getJson(cp, 'node', node)).status.nodeInfo.containerRuntimeVersion as string;

/** What CRI-O leaves of pods on a host: its pods and containers, conmon processes, container mounts, pod namespaces. */
async function crioResidue(h: Host): Promise<{ [k in 'pods' | 'containers' | 'conmon' | 'mounts' | 'netns' | 'cniState']: string[] }> {
  const lines = async (script: string) => (await h.execOk(['sh', '-c', script])).split('\n').map((l) => l.trim()).filter(Boolean);
  return {
    pods: await lines('crictl pods -q'),
    containers: await lines('crictl ps -a -q'),
    conmon: await lines('pgrep -x conmon || true'),
    // Below the store: a container's rootfs (overlay/<id>/merged) or /dev/shm (overlay-containers/<id>/userdata/shm).
    // The overlay driver's own bind of its home (…/storage/overlay) is the store's, there while CRI-O runs.
    mounts: await lines("awk '($2 ~ \"^/(var/lib|run)/containers/storage/.\" && $2 != \"/var/lib/containers/storage/overlay\") || $2 ~ \"^/(var/)?run/(netns|ipcns|utsns|userns)/\" { print $2 }' /proc/self/mounts"),
    netns: await lines('ls /var/run/netns 2>/dev/null || true'),
    cniState: await lines('ls /var/lib/cni/networks/cbr0 2>/dev/null | grep -v -e "^lock$" -e "^last_reserved_ip" || true'),
  };
}

describe('kubic: CRI-O control plane, a Debian and a kubic worker', { timeout: 2_400_000 }, () => {
  let cp: Host;
  let wd: Host;
  let wk: Host;
  const readyz = async () => (await cp.exec(['curl', '-sk', '-o', '/dev/null', '-w', '%{http_code}', '--max-time', '2', 'https://127.0.0.1:6443/readyz'])).stdout.trim();

  before(async () => {
    const t = Date.now();
    [cp, wd, wk] = await Promise.all([
      bootHost({ name: CP, flavour: 'kubic' }),
      bootHost({ name: WD, kubelet: { cni: 'none' } }),
      // An older kubelet (the skew policy allows 3 minors), for `upgrade node`'s transactional install.
      bootHost({ name: WK, flavour: 'kubic', kubelet: { version: OLD_KUBELET } }),
    ]);
    await importKubeceptionImage(cp);
    // The config names each host's distro (as a site's would), so every later command uses it; the
    // bootstrap and the joins also say it on the command line.
    for (const h of [cp, wd, wk]) await writeConfig(h, { ...CONFIG, distro: h === wd ? 'debian' : 'kubic' });
    console.log(`hosts ready in ${secs(Date.now() - t)}`);
  });
  after(async () => {
    await Promise.all([cp, wd, wk].map((h) => h?.destroy()));
  });

  test('the kubic host is what kubic.toml describes: /usr read-only, CRI-O serving, no containerd, kubelet at /usr/bin/kubelet', async () => {
    assert.notEqual((await cp.exec(['touch', '/usr/bin/.w'])).code, 0, '/usr is read-only');
    assert.match(await cp.execOk(['findmnt', '-n', '-o', 'OPTIONS', '/usr']), /^ro,/);
    assert.equal((await cp.execOk(['systemctl', 'is-active', 'crio'])).trim(), 'active');
    assert.equal((await cp.exec(['systemctl', 'is-active', 'containerd'])).stdout.trim(), 'inactive');
    assert.match(await cp.execOk(['crictl', 'version']), new RegExp(`RuntimeName:\\s+cri-o[\\s\\S]*RuntimeVersion:\\s+${BED_CRIO_VERSION.slice(1).replace(/\./g, '\\.')}`));
    assert.match(await cp.execOk(['systemctl', 'cat', 'etcd.service']), /EnvironmentFile=-\/etc\/sysconfig\/etcd/);
    assert.equal((await cp.execOk(['sh', '-c', 'command -v kubelet'])).trim(), '/usr/bin/kubelet');
  });

  test('run bootstrap --distro kubic: self-hosted, Ready, CoreDNS and flannel running on CRI-O', async () => {
    const t = Date.now();
    const r = await kc(cp, ['run', 'bootstrap', '--distro', 'kubic'], { timeoutMs: 900_000 });
    assert.equal(r.code, 0, `bootstrap failed:\n${r.stderr}\n${r.stdout.slice(-3000)}`);
    console.log(`bootstrap on CRI-O: ${secs(Date.now() - t)}`);
    assert.match(r.stdout, /container-runtime/, 'the kubic override ran its step');
    assert.match(await cp.readFile('/etc/sysconfig/etcd'), /^# Written by kubeception/m);
    assert.doesNotMatch(await cp.readFile('/etc/default/etcd'), /kubeception/, "Debian's etcd file (the package's) is not kubeception's on kubic");
    assert.ok(await cp.exists('/etc/kubernetes/kubelet/config.yaml'), "the kubelet's config in kubic.toml's kubeletConfigDir");
    const node = await getJson(cp, 'node', CP);
    assert.equal(node.status.conditions.find((c: any) => c.type === 'Ready')?.status, 'True');
    assert.match(await runtimeOf(cp, CP), /^cri-o:\/\/1\.36\./);
    await waitFor('coredns Ready', 300_000, async () => ((await getJson(cp, 'deployment', '-n', 'kube-system', 'coredns')).status.readyReplicas >= 1 ? true : undefined), () => kubectl(cp, '-n', 'kube-system', 'get', 'pods', '-o', 'wide'));
    // The kubelet's restart at the pivot resets the pod's readiness: Ready again after 15 answered probes (manifests/self-hosted.ts).
    await waitFor('the self-hosted kube-apiserver DaemonSet pod Ready', 60_000, async () => ((await getJson(cp, 'daemonset', '-n', 'kube-system', 'kube-apiserver')).status.numberReady === 1 ? true : undefined), () => kubectl(cp, '-n', 'kube-system', 'get', 'pods', '-o', 'wide'));
    assert.equal(await cp.exists('/etc/kubernetes/manifests/bootstrap-kube-apiserver.yaml'), false, 'the bootstrap control plane is gone');
    // The containers run in CRI-O, as crictl on the host shows them.
    const names = (await cp.execOk(['crictl', 'ps', '--state', 'running', '-o', 'json'])).toString();
    for (const c of ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'coredns', 'kube-flannel', 'kube-proxy'])
      assert.match(names, new RegExp(`"name": "${c}"`), `${c} runs in CRI-O`);
  });

  test('a Debian worker (containerd) and a kubic worker (CRI-O) join', async () => {
    const t = Date.now();
    const boot = await kc(cp, ['token', 'create', '--print-join-command']);
    const { args } = printedJoin(boot.stdout);
    for (const [w, distro] of [[wd, 'debian'], [wk, 'kubic']] as const) {
      const env = { KUBECEPTION_TOKEN: (await kc(cp, ['token', 'create'])).stdout.trim() };
      const j = await kc(w, ['run', 'join', ...args, '--distro', distro, '--wait-for-network'], { timeoutMs: 600_000, env });
      assert.equal(j.code, 0, `join ${w.name} (${distro}) failed:\n${j.stderr}\n${j.stdout.slice(-2000)}`);
    }
    console.log(`two joins: ${secs(Date.now() - t)}`);
    for (const n of [WD, WK])
      await waitFor(`${n} Ready`, 180_000, async () => ((await getJson(cp, 'node', n)).status.conditions.find((c: any) => c.type === 'Ready')?.status === 'True' ? true : undefined));
    assert.match(await runtimeOf(cp, WD), /^containerd:\/\//);
    assert.match(await runtimeOf(cp, WK), /^cri-o:\/\//);
  });

  test('pods on the Debian and the kubic worker reach each other over flannel (HTTP both ways)', async () => {
    const serve = ['sh', '-c', 'httpd -f -p 8080 -h /www'];
    await apply(cp, pod('web-wd', WD, TEST_IMAGE, serve), pod('web-wk', WK, TEST_IMAGE, serve));
    const ips = await podsReady(cp, ['web-wd', 'web-wk']);
    for (const [from, to] of [['web-wd', 'web-wk'], ['web-wk', 'web-wd']] as const) {
      const r = await inPod(cp, from, `timeout 5 wget -q -O- http://${ips[to]}:8080/`);
      assert.equal(r.out.trim(), 'ok', `${from} → ${to} (${ips[to]}): ${r.err}`);
    }
    await kubectl(cp, 'delete', 'pod', 'web-wd', 'web-wk', '--wait=false'); // bare pods: a drain would refuse them
  });

  test('re-run converges: no step changes anything', async () => {
    const r = await kc(cp, ['run', 'bootstrap', '--distro', 'kubic', '--output', 'json'], { timeoutMs: 600_000 });
    assert.equal(r.code, 0, r.stderr);
    const worked = r.events.filter((e) => e.event === 'step-done' && e.changed).map((e) => e.step);
    assert.deepEqual(worked, [], `steps that changed something: ${worked.join(', ')}`);
  });

  test('upgrade node on the kubic worker: transactional-update installs the kubelet into a snapshot, the node reboots, the re-run finishes', async () => {
    assert.match((await getJson(cp, 'node', WK)).status.nodeInfo.kubeletVersion, new RegExp(`^${OLD_KUBELET.replace(/\./g, '\\.')}$`));
    await wk.writeFile('/root/admin.conf', await cp.readFile('/etc/kubernetes/bootstrap-secrets/admin.conf'), 0o600);
    const t = Date.now();
    const first = await kc(wk, ['upgrade', 'node', '--kubeconfig', '/root/admin.conf'], { timeoutMs: 600_000 });
    const out = first.stdout + first.stderr;
    assert.notEqual(first.code, 0, 'the run stops for the reboot');
    // The CLI says why unless the reboot ended it first.
    if (out.trim()) assert.match(out, /reboot-required|kubelet-install/, out.slice(-2000));
    await waitFor('the kubic worker rebooting (going down)', 120_000, async () => (wk.running ? undefined : true));
    assert.equal((await getJson(cp, 'node', WK)).spec.unschedulable, true, 'the drained node stays cordoned over the reboot');
    await wk.start();
    assert.match(await wk.execOk(['kubelet', '--version']), /v1\.37\./, 'the boot applied the snapshot\'s kubelet');
    assert.notEqual((await wk.exec(['touch', '/usr/bin/.w'])).code, 0, '/usr is read-only again');
    const second = await kc(wk, ['upgrade', 'node', '--kubeconfig', '/root/admin.conf', '--output', 'json'], { timeoutMs: 600_000 });
    assert.equal(second.code, 0, `${second.stderr}\n${second.stdout.slice(-2000)}`);
    assert.ok(second.events.some((e) => e.event === 'step-skipped' && e.step === 'kubelet-install'), 'kubelet-install skipped: the binary is the cluster\'s');
    const node = await getJson(cp, 'node', WK);
    assert.match(node.status.nodeInfo.kubeletVersion, /^v1\.37\./);
    assert.notEqual(node.spec.unschedulable, true, 'uncordoned');
    console.log(`upgrade node with a transactional kubelet install and a reboot: ${secs(Date.now() - t)}`);
    await wk.execOk(['rm', '-f', '/root/admin.conf']);
  });

  test('power cut of the control plane → the API comes back alone (no command run)', async () => {
    await kubectl(cp, 'create', 'configmap', 'before-power-cut', '-n', 'default', '--from-literal=k=v');
    await cp.powerCut();
    const boot = Date.now();
    await cp.start();
    await waitFor('/readyz 200 after the power cut', 300_000, async () => ((await readyz()) === '200' ? true : undefined), async () => `${await cp.journal('kubeception-recovery', 30)}\n${await cp.journal('kubelet', 30)}`);
    console.log(`power cut: /readyz OK ${secs(Date.now() - boot)} after boot`);
    assert.equal((await kubectl(cp, '-n', 'default', 'get', 'configmap', 'before-power-cut', '-o', 'jsonpath={.data.k}')).trim(), 'v');
    await waitFor('the self-hosted kube-apiserver serving again (hand-back)', 300_000, async () => (/hand-back/.test(await cp.journal('kubeception-recovery', 50)) ? true : undefined), () => cp.journal('kubeception-recovery', 50));
    console.log(`power cut: hand-back ${secs(Date.now() - boot)} after boot`);
  });

  test('reset on the kubic worker and on the control plane: residue report empty, nothing of CRI-O\'s pods left', async () => {
    for (const h of [wk, cp]) {
      // The test needs a host that runs pods, so that the reset has CRI-O state to remove. The kubic
      // worker rebooted in the upgrade test and the control plane lost its API for ≈ 1–2 min since: its
      // kubelet may still be starting their pods again (CI 2026-12-07 found none right after the power
      // cut test). Wait for them (≤ 4 min); a host that never runs pods again still fails here.
      const t0 = Date.now();
      const had = await waitFor(`${h.name} running CRI-O pods before the reset`, 240_000, async () => {
        const r = await crioResidue(h);
        return r.pods.length > 0 && r.conmon.length > 0 && r.mounts.length > 0 ? r : undefined;
      }, async () => `${JSON.stringify(await crioResidue(h))}\n${await h.journal('kubelet', 30)}`);
      console.log(`${h.name}: CRI-O pods running ${secs(Date.now() - t0)} into the reset test (${had.pods.length} pods)`);
      const r = await h.exec(['node', KC, 'reset', '--distro', 'kubic', '--force', '--output', 'json'], { cwd: SITE, timeoutMs: 600_000 });
      assert.equal(r.code, 0, `reset ${h.name}:\n${r.stderr}\n${r.stdout.slice(-3000)}`);
      const doc = JSON.parse(r.stdout);
      assert.deepEqual(Object.values(doc.residue).flat(), [], `${h.name}: residue report ${JSON.stringify(doc.residue)}`);
      const left = await crioResidue(h);
      assert.deepEqual(left, { pods: [], containers: [], conmon: [], mounts: [], netns: [], cniState: [] }, `${h.name} after reset`);
      assert.equal((await h.execOk(['systemctl', 'is-active', 'crio'])).trim(), 'active', 'CRI-O itself stays (it is the distro\'s)');
    }
  });
});
