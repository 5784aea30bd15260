/**
 * Node state that silently breaks a cluster is caught, on the bed:
 * - a kubernetesVersion whose images the node has not got (and cannot pull: the bed's registries
 *   point at 127.0.0.1:1) is refused by preflight — exit 2, nothing written; forced past preflight,
 *   the run fails naming the image pull within 60 s of waiting; the re-run with the version fixed
 *   converges with no manual step;
 * - a worker whose containerd uses the cgroupfs driver: a config that pins the kubelet to systemd is
 *   refused in preflight (exit 2, both values named, nothing written); without the pin the worker
 *   joins with a cgroupfs kubelet, and its pods' processes live in the kubelet's pod cgroups.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { bootHost, K8S_VERSION, type Host } from '../bed/bed.ts';
import { importKubeceptionImage } from '../bed/kubeception-image.ts';
import { assertSameTree, kc, snapshot, stepsWith, writeConfig } from '../helpers/bed-cli.ts';
import { ADMIN, assertBootstrapped } from '../helpers/converged.ts';
import { printedJoin } from '../helpers/join-command.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
// The same minor as the bed's kubelet (a kubelet newer than the control plane is a preflight error of its
// own, KubeletVersion) but a patch release whose images the bed never built.
const BAD = K8S_VERSION.replace(/\.\d+$/, '.0');
if (BAD === K8S_VERSION) throw new Error(`runtime-state needs a bed version with a patch release above .0 (K8S_VERSION=${K8S_VERSION})`);

describe('runtime state on the bed: unavailable images, cgroup driver mismatch', { timeout: 1_500_000 }, () => {
  let cp: Host;
  let worker: Host;
  before(async () => {
    [cp, worker] = await Promise.all([bootHost({ name: 'c13c', kubelet: true }), bootHost({ name: 'c13d', kubelet: true })]);
    await importKubeceptionImage(cp);
    await worker.execOk(['sh', '-c', "sed -i 's/SystemdCgroup = true/SystemdCgroup = false/' /etc/containerd/config.toml && grep -q 'SystemdCgroup = false' /etc/containerd/config.toml && systemctl restart containerd"]);
  });
  after(async () => {
    await Promise.all([cp, worker].map((h) => h?.destroy()));
  });

  test(`kubernetesVersion ${BAD} without its images: preflight refuses it, exit 2, nothing written`, async () => {
    await writeConfig(cp, { distro: 'debian', networking: { plugin: 'none' }, kubernetesVersion: BAD });
    const before = await snapshot(cp);
    const r = await kc(cp, ['run', 'bootstrap']);
    assert.equal(r.code, 2, `${r.stderr}\n${r.stdout.slice(-1500)}`);
    assert.match(r.stderr, /ImagePull/);
    assert.match(r.stderr, new RegExp(`kube-apiserver:${BAD.replace(/\./g, '\\.')}`));
    assert.match(r.stderr, /fix:/);
    assertSameTree(before, await snapshot(cp), 'refused bootstrap');
  });

  test('forced past preflight: fails naming the image pull within 60 s of waiting', async () => {
    const r = await kc(cp, ['run', 'bootstrap', '--ignore-preflight-errors', 'ImagePull', '--output', 'json'], { timeoutMs: 600_000 });
    assert.equal(r.code, 1, r.stderr);
    const failed = r.events.find((e) => e.event === 'step-failed');
    assert.equal(failed?.step, 'wait-bootstrap-control-plane', JSON.stringify(failed));
    assert.match(failed.message, new RegExp(`cannot pull registry\\.k8s\\.io/kube-[a-z-]+:${BAD.replace(/\./g, '\\.')}`));
    console.log(`wait-bootstrap-control-plane failed after ${(failed.durationMs / 1000).toFixed(1)} s: ${failed.message.split('\n')[0]}`);
    assert.ok(failed.durationMs < 60_000, `failed after ${failed.durationMs} ms`);
  });

  test('the version fixed, the re-run converges with no manual step', async () => {
    await writeConfig(cp, { distro: 'debian', networking: { plugin: 'none' } });
    const r = await kc(cp, ['run', 'bootstrap', '--output', 'json'], { timeoutMs: 900_000 });
    assert.equal(r.code, 0, `${r.stderr}\n${r.stdout.slice(-2000)}`);
    assert.deepEqual(stepsWith(r.events, 'step-failed'), []);
    await assertBootstrapped(cp, cp.name);
  });

  test('a cgroupfs worker: a config pinning the kubelet to systemd is refused (exit 2, nothing written)', async () => {
    await writeConfig(worker, { distro: 'debian', kubelet: { cgroupDriver: 'systemd' } });
    const line = await kc(cp, ['token', 'create', '--print-join-command']);
    assert.equal(line.code, 0, line.stderr);
    const printed = printedJoin(line.stdout);
    const before = await snapshot(worker);
    const r = await kc(worker, ['run', 'join', ...printed.args], { env: printed.env });
    assert.equal(r.code, 2, `${r.stderr}\n${r.stdout.slice(-1500)}`);
    assert.match(r.stderr, /CgroupDriver/);
    assert.match(r.stderr, /"systemd" in the config, but containerd uses "cgroupfs"/);
    assert.match(r.stderr, /fix:/);
    assertSameTree(before, await snapshot(worker), 'refused join');
  });

  test('a cgroupfs worker joins with a cgroupfs kubelet; its pod runs inside the kubelet\'s pod cgroups', async () => {
    await writeConfig(worker, { distro: 'debian' });
    const printed = printedJoin((await kc(cp, ['token', 'create', '--print-join-command'])).stdout);
    const r = await kc(worker, ['run', 'join', ...printed.args, '--output', 'json'], { timeoutMs: 300_000, env: printed.env });
    assert.equal(r.code, 0, `${r.stderr}\n${r.stdout.slice(-1500)}`);
    assert.match(await worker.readFile('/var/lib/kubelet/config.yaml'), /cgroupDriver: cgroupfs/);
    let ready = '';
    for (let i = 0; i < 90 && ready !== 'True'; i++) {
      ready = (await cp.exec(['kubectl', `--kubeconfig=${ADMIN}`, 'get', 'node', worker.name, '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}'])).stdout.trim();
      if (ready !== 'True') await sleep(1_000);
    }
    assert.equal(ready, 'True', `Node ${worker.name} Ready`);
    await cp.execOk(['kubectl', `--kubeconfig=${ADMIN}`, 'apply', '-f', '-'], {
      input: JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'cgroup-probe', namespace: 'default' }, spec: { nodeName: worker.name, containers: [{ name: 'pause', image: 'registry.k8s.io/pause:3.10.1', imagePullPolicy: 'IfNotPresent' }] } }),
    });
    let uid = '';
    for (let i = 0; i < 60; i++) {
      const p = JSON.parse(await cp.execOk(['kubectl', `--kubeconfig=${ADMIN}`, 'get', 'pod', 'cgroup-probe', '-o', 'json']));
      if (p.status.phase === 'Running') uid = p.metadata.uid;
      if (uid) break;
      await sleep(1_000);
    }
    assert.ok(uid, 'probe pod Running');
    // Every process of the pod (sandbox and container) must sit in the kubelet's cgroup for that pod.
    const cgroups = await worker.execOk(['sh', '-c', `grep -l '' /sys/fs/cgroup/memory/kubepods/besteffort/pod${uid}/*/cgroup.procs | wc -l; cat /sys/fs/cgroup/memory/kubepods/besteffort/pod${uid}/*/cgroup.procs | wc -l`]);
    const [dirs, procs] = cgroups.trim().split('\n').map(Number);
    assert.ok(dirs! >= 2 && procs! >= 2, `pod ${uid}: ${dirs} container cgroups, ${procs} processes under kubepods/besteffort/pod${uid}`);
  });
});
