/**
 * Self-recovery on the bed: after a power cut (every process of the host SIGKILLed at once) and a
 * boot, with no kubeception command, the API serves again within 60 s with its data, the Node is
 * Ready, and the self-hosted apiserver takes over from the recovery static pod; after the
 * kube-apiserver DaemonSet pod is deleted, the API is back within 60 s. One cluster for the file.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { bootHost, type Host } from '../bed/bed.ts';
import { importKubeceptionImage } from '../bed/kubeception-image.ts';
import { kc, stepsWith, writeConfig } from '../helpers/bed-cli.ts';

const ADMIN = '/etc/kubernetes/admin.conf';
const ACTIVE = '/etc/kubernetes/manifests/recovery-kube-apiserver.yaml';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

describe('self-recovery of the control plane', { timeout: 1_800_000 }, () => {
  let host: Host;
  let t: number;
  const kubectl = (...args: string[]) => host.execOk(['kubectl', `--kubeconfig=${ADMIN}`, ...args], { timeoutMs: 30_000 });
  /** One local /readyz probe from inside the host: the HTTP status, or 0 if nothing answered. */
  const readyz = async () => {
    const r = await host.exec(['curl', '-s', '-o', '/dev/null', '-w', '%{http_code}', '--max-time', '2', '--cacert', '/etc/kubernetes/pki/ca.crt', `https://${host.ip}:6443/readyz`]);
    return Number(r.stdout.trim()) || 0;
  };
  /** Polls `check` every 500 ms until true; returns the ms since `from`, or fails after `timeoutMs`. */
  const until = async (what: string, check: () => Promise<boolean>, from: number, timeoutMs: number) => {
    while (Date.now() - from < timeoutMs) {
      if (await check().catch(() => false)) return Date.now() - from;
      await sleep(500);
    }
    const diag = await host.exec(['sh', '-c', `journalctl -b -o short-precise --no-pager -u containerd | grep -v 'loading plugin' | tail -25
      journalctl -b -o short-precise --no-pager -u kubelet | grep -vE 'Failed to watch|from lister|ensure lease|Unable to write event|Unhandled Error' | tail -40
      ls -la /etc/kubernetes/manifests; ctr -n k8s.io t ls`]);
    assert.fail(`${what}: not within ${secs(timeoutMs)}; watcher log:\n${await host.journal('kubeception-recovery', 20)}\n${diag.stdout.split('\n').map((l) => l.slice(0, 300)).join('\n')}`);
  };
  const nodeReady = async () => (await kubectl('get', 'node', host.name, '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}')).trim() === 'True';
  /** The self-hosted apiserver serves alone again: no recovery manifest, a DaemonSet pod Running and ready. */
  const handedBack = async () => {
    if (await host.exists(ACTIVE)) return false;
    const pods = JSON.parse(await kubectl('-n', 'kube-system', 'get', 'pods', '-l', 'component=kube-apiserver', '-o', 'json')).items as any[];
    return pods.some((p) => p.metadata.ownerReferences?.[0]?.kind === 'DaemonSet' && p.status.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True'));
  };

  before(async () => {
    t = Date.now();
    host = await bootHost({ name: 'r9cp', kubelet: true, bootTimeoutMs: 180_000 });
    await importKubeceptionImage(host);
    await writeConfig(host, { distro: 'debian', networking: { plugin: 'none' } });
    const r = await kc(host, ['run', 'bootstrap', '--output', 'json'], { timeoutMs: 900_000 });
    assert.equal(r.code, 0, `${r.stderr}\n${r.stdout.split('\n').slice(-15).join('\n')}`);
    assert.ok(stepsWith(r.events, 'step-done').includes('apiserver-recovery'));
    console.log(`setup (boot + bootstrap): ${secs(Date.now() - t)}`);
  });
  after(async () => host?.destroy());

  test('bootstrap renders the recovery manifest (0600, not active) and runs the watcher unit', async () => {
    t = Date.now();
    const stat = await host.execOk(['stat', '-c', '%a %n', '/etc/kubernetes/recovery', '/etc/kubernetes/recovery/recovery-kube-apiserver.yaml']);
    assert.deepEqual(stat.trim().split('\n').map((l) => l.split(' ')[0]), ['700', '600']);
    assert.equal(await host.exists('/etc/kubernetes/recovery/volumes/secrets'), false, 'no copy of a key: the recovery pod mounts the host PKI as the DaemonSet does');
    assert.equal(await host.exists(ACTIVE), false, 'the recovery pod is not active while the self-hosted apiserver serves');
    assert.equal((await host.execOk(['systemctl', 'is-enabled', 'kubeception-recovery'])).trim(), 'enabled');
    assert.equal((await host.execOk(['systemctl', 'is-active', 'kubeception-recovery'])).trim(), 'active');
    const manifest = await host.readFile('/etc/kubernetes/recovery/recovery-kube-apiserver.yaml');
    assert.match(manifest, /--permit-port-sharing=true/);
    assert.doesNotMatch(manifest, /serviceAccountName/);
    console.log(`test time: ${secs(Date.now() - t)}`);
  });

  test('the watcher runs sandboxed: no new privileges, read-only system, CAP_SYS_PTRACE only, a fixed PATH, no kubeception variables', async () => {
    const props = await host.execOk(['systemctl', 'show', 'kubeception-recovery', '-p', 'NoNewPrivileges,ProtectSystem,ProtectHome,PrivateTmp,CapabilityBoundingSet,ReadWritePaths']);
    for (const want of ['NoNewPrivileges=yes', 'ProtectSystem=strict', 'ProtectHome=yes', 'PrivateTmp=yes', 'CapabilityBoundingSet=cap_sys_ptrace', 'ReadWritePaths=-/etc/kubernetes/manifests'])
      assert.ok(props.split('\n').includes(want), `${want} not in:\n${props}`);
    // The live process: its bounding set is CAP_SYS_PTRACE (bit 19) alone, its environment clean.
    const pid = (await host.execOk(['systemctl', 'show', 'kubeception-recovery', '-p', 'MainPID', '--value'])).trim();
    assert.match(await host.execOk(['grep', '^CapBnd', `/proc/${pid}/status`]), /^CapBnd:\s+0000000000080000$/m);
    const env = (await host.execOk(['sh', '-c', `tr '\\0' '\\n' < /proc/${pid}/environ`])).split('\n');
    assert.ok(env.includes('PATH=/usr/sbin:/usr/bin:/sbin:/bin'), env.join(' '));
    assert.deepEqual(env.filter((e) => e.startsWith('KUBECEPTION_')), []);
    assert.notEqual((await host.exec(['nsenter', '-t', pid, '-m', 'touch', '/etc/kubernetes/pki/.w'])).code, 0, 'the PKI is read-only for the watcher');
    const analyze = await host.exec(['systemd-analyze', 'security', '--no-pager', 'kubeception-recovery.service']);
    console.log(`systemd-analyze security: ${analyze.stdout.trim().split('\n').pop()}`);
  });

  test('power cut → boot, no command: /readyz OK within 60 s, the ConfigMap is there, the Node Ready, then hand-back', async () => {
    t = Date.now();
    await kubectl('create', 'configmap', 'before-power-cut', '-n', 'default', '--from-literal=k=v');
    await host.powerCut();
    const boot = Date.now();
    await host.start();
    console.log(`boot to systemd running: ${secs(Date.now() - boot)}`);
    const ready = await until('/readyz 200 after the power cut', async () => (await readyz()) === 200, boot, 60_000);
    console.log(`power cut: /readyz OK ${secs(ready)} after boot`);
    assert.equal((await kubectl('-n', 'default', 'get', 'configmap', 'before-power-cut', '-o', 'jsonpath={.data.k}')).trim(), 'v');
    const readyNode = await until('Node Ready', nodeReady, boot, 180_000);
    console.log(`power cut: Node Ready ${secs(readyNode)} after boot`);
    const back = await until('hand-back to the self-hosted kube-apiserver', handedBack, boot, 300_000);
    console.log(`power cut: self-hosted kube-apiserver serving alone ${secs(back)} after boot`);
    assert.match(await host.journal('kubeception-recovery', 50), /activated:[\s\S]*hand-back/);
    console.log(`test time: ${secs(Date.now() - t)}`);
  });

  test('delete the kube-apiserver pod → the API is back within 60 s, then a new DaemonSet pod takes over', async () => {
    t = Date.now();
    const old = (await kubectl('-n', 'kube-system', 'get', 'pods', '-l', 'component=kube-apiserver', '-o', 'jsonpath={.items[0].metadata.name}')).trim();
    await kubectl('-n', 'kube-system', 'delete', 'pod', old, '--wait=false');
    const deleted = Date.now();
    const down = await until('the API goes down after the delete', async () => (await readyz()) !== 200, deleted, 60_000);
    const back = await until('/readyz 200 after the delete', async () => (await readyz()) === 200, deleted, 60_000);
    console.log(`pod deleted: API down ${secs(down)} after the delete, back ${secs(back)} after it (${secs(back - down)} without API)`);
    await kubectl('get', 'ns', 'default');
    const over = await until('a new DaemonSet pod serving alone', async () => (await handedBack()) && !(await kubectl('-n', 'kube-system', 'get', 'pods', '-o', 'name')).includes(old), deleted, 300_000);
    console.log(`pod deleted: new self-hosted kube-apiserver serving alone ${secs(over)} after the delete`);
    console.log(`test time: ${secs(Date.now() - t)}`);
  });

  test('a converged bootstrap re-run after recovery changes nothing', async () => {
    t = Date.now();
    const r = await kc(host, ['run', 'bootstrap', '--output', 'json'], { timeoutMs: 600_000 });
    assert.equal(r.code, 0, r.stderr);
    const worked = r.events.filter((e) => e.event === 'step-done' && e.changed).map((e) => e.step);
    assert.deepEqual(worked, [], `steps that changed something: ${worked.join(', ')}`);
    console.log(`test time: ${secs(Date.now() - t)}`);
  });
});
