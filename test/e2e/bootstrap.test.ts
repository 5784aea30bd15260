/**
 * The whole bootstrap on the bed: `kubeception run bootstrap` inside a host with a real kubelet,
 * containerd and etcd ends with a Ready control-plane node running the self-hosted control plane.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { bootHost, type Host } from '../bed/bed.ts';
import { importKubeceptionImage } from '../bed/kubeception-image.ts';
import { assertSameTree, E2E_PREFIX, kc, snapshot, stepsWith, writeConfig, type KcResult } from '../helpers/bed-cli.ts';
import { assertBootstrapped, assertSameState, hostState } from '../helpers/converged.ts';
import { startProber } from '../helpers/prober.ts';
import { APISERVER_MIN_READY_SECONDS, APISERVER_READY_IN_A_ROW } from '../../manifests/self-hosted.ts';

const ADMIN = '/etc/kubernetes/admin.conf';
const kubectl = (host: Host, ...args: string[]) => host.execOk(['kubectl', `--kubeconfig=${ADMIN}`, ...args], { timeoutMs: 30_000 });
const json = async (host: Host, ...args: string[]) => JSON.parse(await kubectl(host, ...args, '-o', 'json'));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function eventually<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 180_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    await sleep(2_000);
  }
  assert.fail(`${what}: not within ${timeoutMs} ms${last ? ` (last error: ${(last as Error).message})` : ''}`);
}

/** Control-plane pods by component, with owner kind and whether they are static (mirror) pods. */
async function controlPlanePods(host: Host) {
  const pods = (await json(host, '-n', 'kube-system', 'get', 'pods')).items as any[];
  return pods
    .filter((p) => /^(bootstrap-)?kube-(apiserver|controller-manager|scheduler)/.test(p.metadata.name))
    .map((p) => ({
      name: p.metadata.name as string,
      uid: p.metadata.uid as string,
      owner: p.metadata.ownerReferences?.[0]?.kind as string | undefined,
      mirror: !!p.metadata.annotations?.['kubernetes.io/config.mirror'],
      phase: p.status.phase as string,
      restarts: (p.status.containerStatuses ?? []).reduce((n: number, c: any) => n + c.restartCount, 0) as number,
    }));
}

const RUN = ['run', 'bootstrap', '--output', 'json'];

describe('bootstrap on the bed: bootstrap control plane → self-hosted → pivot → Ready', { timeout: 1_800_000 }, () => {
  let host: Host;
  let first: KcResult;
  const freshPlan: { text?: KcResult; json?: KcResult; before?: string; after?: string } = {};
  before(async () => {
    host = await bootHost({ name: `${E2E_PREFIX}cp1`, kubelet: true });
    await importKubeceptionImage(host);
    await writeConfig(host, { distro: 'debian', networking: { plugin: 'none' } });
    freshPlan.before = await snapshot(host);
    freshPlan.text = await kc(host, ['plan', 'bootstrap']);
    freshPlan.json = await kc(host, ['plan', 'bootstrap', '--output', 'json']);
    freshPlan.after = await snapshot(host);
    first = await kc(host, RUN, { timeoutMs: 900_000 });
  });
  after(async () => host?.destroy());

  test('plan on the fresh host lists the files, units and objects bootstrap would write, and writes nothing', () => {
    assert.equal(freshPlan.json!.code, 0, freshPlan.json!.stderr);
    assertSameTree(freshPlan.before!, freshPlan.after!, 'plan bootstrap');
    const plan = JSON.parse(freshPlan.json!.stdout.trim());
    const changes = (id: string) => plan.steps.find((s: any) => s.id === id)?.changes;
    const files = (id: string) => changes(id).files.map((f: any) => `${f.change ?? f.op} ${f.path} ${(f.mode ?? 0).toString(8)}`);
    assert.ok(files('certs').includes('create /etc/kubernetes/pki/ca.key 600'), files('certs').join('\n'));
    assert.ok(files('certs').includes('create /etc/kubernetes/pki/apiserver.crt 644'));
    assert.ok(files('kubeconfig').includes('create /etc/kubernetes/admin.conf 600'));
    assert.ok(files('bootstrap-control-plane').includes('create /etc/kubernetes/manifests/bootstrap-kube-apiserver.yaml 644'));
    assert.ok(changes('kubelet-pivot').files.some((f: any) => f.op === 'remove' && f.path.endsWith('bootstrap-kube-apiserver.yaml')));
    const units = (id: string) => changes(id).units.map((u: any) => `${u.op} ${u.unit}`);
    assert.deepEqual(units('etcd'), ['enable etcd.service', 'start etcd.service']);
    assert.deepEqual(units('kubelet-start'), ['enable kubelet.service', 'start kubelet.service']);
    assert.ok(units('kubelet-pivot').includes('restart kubelet.service'));
    const objects = changes('self-hosted-control-plane').objects.map((o: any) => o.ref);
    for (const ref of ['DaemonSet/kube-system/kube-apiserver', 'Deployment/kube-system/kube-controller-manager', 'Deployment/kube-system/kube-scheduler'])
      assert.ok(objects.includes(ref), `${ref} in ${objects.join(', ')}`);
    assert.ok(!objects.some((r: string) => r.startsWith('Secret/kube-system/kube-')), `no control-plane key goes into a Secret: ${objects.join(', ')}`);
    assert.ok(plan.totals.files >= 30 && plan.totals.units >= 6 && plan.totals.objects >= 15, JSON.stringify(plan.totals));
    const text = freshPlan.text!.stdout;
    assert.equal(freshPlan.text!.code, 0, freshPlan.text!.stderr);
    assert.match(text, /^ 2\. certs .*→ would change/m);
    assert.match(text, /create {2}\/etc\/kubernetes\/pki\/ca\.key \(0600, \d+ lines\)/);
    assert.match(text, /enable {2}etcd\.service/);
    assert.match(text, /apply {3}DaemonSet\/kube-system\/kube-apiserver/);
    assert.match(text, /\d+ step\(s\) would change the host: \d+ file\(s\)/);
    assert.doesNotMatch(text + freshPlan.json!.stdout, /PRIVATE KEY|BEGIN CERTIFICATE/);
  });

  test('the run succeeds and every step did its work', () => {
    assert.equal(first.code, 0, `${first.stderr}\n${first.stdout.split('\n').slice(-15).join('\n')}`);
    assert.deepEqual(stepsWith(first.events, 'step-failed'), []);
    for (const s of ['bootstrap-control-plane', 'kubelet-start', 'self-hosted-control-plane', 'mark-control-plane', 'kubelet-pivot', 'remove-bootstrap-control-plane', 'bootstrap-token', 'join-service'])
      assert.ok(stepsWith(first.events, 'step-done').includes(s), s);
  });

  test('the node is Ready with the control-plane label and taint', async () => {
    const node = await eventually('node Ready', async () => {
      const n = await json(host, 'get', 'node', host.name);
      return n.status.conditions.find((c: any) => c.type === 'Ready')?.status === 'True' ? n : undefined;
    });
    assert.equal(node.metadata.labels['node-role.kubernetes.io/control-plane'], '');
    assert.ok(node.spec.taints.some((t: any) => t.key === 'node-role.kubernetes.io/control-plane' && t.effect === 'NoSchedule'));
    console.log(await kubectl(host, 'get', 'nodes', '-o', 'wide'));
  });

  test('the bootstrap control plane stops at once: nothing listens on its ports within 20 s of the run', async () => {
    // The kubelet tears the bootstrap pods down; a kubelet that missed the manifests' removal kept
    // them (and the leases of their controllers) for two minutes.
    await eventually('bootstrap ports closed', async () => {
      const ports = await host.execOk(['ss', '-Hltn']);
      return /:(6444|10357|10359)\s/.test(ports) ? undefined : true;
    }, 20_000);
  });

  test('the control plane runs as DaemonSet/Deployment pods, not static pods; bootstrap manifests gone', async () => {
    const pods = await eventually('self-hosted pods Running', async () => {
      const ps = await controlPlanePods(host);
      return ps.length === 3 && ps.every((p) => p.phase === 'Running') ? ps : undefined;
    });
    assert.deepEqual(pods.map((p) => [/^kube-(apiserver|controller-manager|scheduler)/.exec(p.name)![0], p.owner, p.mirror]).sort(), [
      ['kube-apiserver', 'DaemonSet', false],
      ['kube-controller-manager', 'ReplicaSet', false],
      ['kube-scheduler', 'ReplicaSet', false],
    ]);
    const manifests = await host.execOk(['ls', '-A', '/etc/kubernetes/manifests']);
    assert.doesNotMatch(manifests, /bootstrap-/);
    assert.match(await host.readFile('/var/lib/kubelet/kubeconfig'), new RegExp(`server: https://${host.ip.replace(/\./g, '\\.')}:6443`));
  });

  test('a Deployment created afterwards gets scheduled and Running', async () => {
    await host.execOk(['kubectl', `--kubeconfig=${ADMIN}`, 'apply', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'probe', namespace: 'default' },
        spec: { replicas: 1, selector: { matchLabels: { app: 'probe' } }, template: { metadata: { labels: { app: 'probe' } }, spec: {
          tolerations: [{ key: 'node-role.kubernetes.io/control-plane', operator: 'Exists', effect: 'NoSchedule' }],
          containers: [{ name: 'pause', image: 'registry.k8s.io/pause:3.10.1', imagePullPolicy: 'IfNotPresent' }],
        } } },
      }),
    });
    await eventually('probe pod Running', async () => {
      const ps = (await json(host, '-n', 'default', 'get', 'pods', '-l', 'app=probe')).items as any[];
      return ps.some((p) => p.status.phase === 'Running' && p.spec.nodeName === host.name) ? true : undefined;
    });
  });

  test('plan on the converged host: "no changes", and nothing changes (files, units, kube-system pods)', async () => {
    const before = await hostState(host);
    const text = await kc(host, ['plan', 'bootstrap']);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /no changes: the host is converged\./);
    assert.doesNotMatch(text.stdout, /would change/);
    const plan = JSON.parse((await kc(host, ['plan', 'bootstrap', '--output', 'json'])).stdout.trim());
    assert.deepEqual(plan.totals, { steps: 0, files: 0, units: 0, commands: 0, objects: 0 });
    assertSameState(before, await hostState(host), 'plan on a converged host');
  });

  test('a podSubnet or dnsDomain other than the cluster was made with: plan and run refuse it (exit 2, naming the fields), nothing changes', async () => {
    const recorded = await json(host, '-n', 'kube-system', 'get', 'configmap', 'kubeception-config');
    assert.deepEqual(JSON.parse(recorded.data.ClusterConfiguration), { 'networking.podSubnet': '10.244.0.0/16', 'networking.serviceSubnet': '10.96.0.0/12', 'networking.dnsDomain': 'cluster.local' });
    const before = await hostState(host);
    await writeConfig(host, { distro: 'debian', networking: { plugin: 'none', podSubnet: '10.32.0.0/16', dnsDomain: 'example.internal' } });
    try {
      for (const args of [['plan', 'bootstrap'], RUN]) {
        const r = await kc(host, args, { timeoutMs: 120_000 });
        const out = r.stdout + r.stderr;
        assert.equal(r.code, 2, `${args.join(' ')}: ${out.slice(-2000)}`);
        assert.match(out, /ClusterConfiguration/);
        assert.match(out, /networking\.podSubnet is 10\.32\.0\.0\/16 in the config, but the cluster was made with 10\.244\.0\.0\/16/);
        assert.match(out, /networking\.dnsDomain is example\.internal in the config, but the cluster was made with cluster\.local/);
        assert.doesNotMatch(out, /networking\.serviceSubnet is/);
      }
      assertSameState(before, await hostState(host), 'refused plan and run');
    } finally {
      await writeConfig(host, { distro: 'debian', networking: { plugin: 'none' } });
    }
  });

  test('re-run converges, measured from outside: every file kubeception writes, kube-system pods, unit starts unchanged', async () => {
    const before = await hostState(host);
    const r = await kc(host, RUN, { timeoutMs: 600_000 });
    assert.equal(r.code, 0, r.stderr);
    const worked = r.events.filter((e) => e.event === 'step-done' && e.changed).map((e) => e.step);
    assert.deepEqual(worked, [], `steps that changed something: ${r.events.filter((e) => e.event === 'step-done' && e.changed).map((e) => `${e.step} (${e.detail})`).join(', ')}\n${r.stderr.split('\n').filter((l) => /applied|changed/.test(l)).join('\n')}`);
    assert.ok(r.events.filter((e) => e.event === 'step-done').every((e) => typeof e.changed === 'boolean'), 'every step reported its outcome');
    assert.ok(stepsWith(r.events, 'step-skipped').includes('bootstrap-control-plane'));
    assertSameState(before, await hostState(host), 'converged re-run');
    await assertBootstrapped(host, host.name);
  });

  test('reboot: stop the host, start it, re-run → the cluster is back with the objects created before', async () => {
    await kubectl(host, 'create', 'configmap', 'before-reboot', '-n', 'default', '--from-literal=k=v');
    await host.stop();
    await host.start();
    const r = await kc(host, RUN, { timeoutMs: 900_000 });
    assert.equal(r.code, 0, `${r.stderr}\n${r.stdout.split('\n').slice(-10).join('\n')}`);
    // Either the bootstrap control plane ran again, or the recovery watcher (test/e2e/recovery.test.ts) was faster.
    const recovered = (await host.exec(['journalctl', '-u', 'kubeception-recovery', '--no-pager'])).stdout.includes('activated:');
    assert.ok(recovered || stepsWith(r.events, 'step-done').includes('bootstrap-control-plane'), 'the bootstrap control plane ran again, or the recovery pod');
    const cm = await json(host, '-n', 'default', 'get', 'configmap', 'before-reboot');
    assert.equal(cm.data.k, 'v');
    await eventually('node Ready after reboot', async () => {
      const n = await json(host, 'get', 'node', host.name);
      return n.status.conditions.find((c: any) => c.type === 'Ready')?.status === 'True' ? true : undefined;
    });
  });

  test('live reconfiguration: a new apiserver SAN and flag — plan names both, the run rolls them in with a 100 ms /readyz prober (gap ≤ 2 s), openssl verifies the new name', async () => {
    const SAN = 'api.reconfigured.example';
    await writeConfig(host, { distro: 'debian', networking: { plugin: 'none' }, apiServer: { extraSANs: [SAN], extraArgs: { 'event-ttl': '2h' } } });
    const plan = await kc(host, ['plan', 'bootstrap']);
    assert.equal(plan.code, 0, plan.stderr);
    assert.match(plan.stdout, /update {2}\/etc\/kubernetes\/pki\/apiserver\.crt/);
    assert.match(plan.stdout, /update {2}DaemonSet\/kube-system\/kube-apiserver\n(\s+\S.*\n)*\s+spec\.template\.spec\.containers\[kube-apiserver\]\.command: .*\+ --event-ttl=2h/);
    const url = `https://${host.ip}:6443/readyz`;
    const prober = await startProber(host, url);
    const r = await kc(host, RUN, { timeoutMs: 600_000 });
    const gap = await prober.stop();
    assert.equal(r.code, 0, `${r.stderr}\n${r.stdout.split('\n').slice(-10).join('\n')}`);
    console.log(`reconfiguration roll: longest /readyz gap ${gap.gapMs} ms (${gap.failed}/${gap.total} probes failed)`);
    assert.ok(gap.gapMs <= 2_000, `API gap ${gap.gapMs} ms (${JSON.stringify(gap)})`);
    await eventually('the apiserver runs with --event-ttl=2h', async () => ((await host.exec(['sh', '-c', 'ps -eo args | grep "^kube-apiserver "'])).stdout.includes('--event-ttl=2h') ? true : undefined), 120_000);
    const verify = await host.exec(['sh', '-c', `openssl s_client -connect ${host.ip}:6443 -CAfile /etc/kubernetes/pki/ca.crt -verify_hostname ${SAN} -verify_return_error </dev/null`], { timeoutMs: 30_000 });
    assert.equal(verify.code, 0, verify.stdout.slice(-1500) + verify.stderr.slice(-500));
    assert.match(verify.stdout, /Verify return code: 0 \(ok\)/);
    const converged = await kc(host, ['plan', 'bootstrap']);
    assert.match(converged.stdout, /no changes: the host is converged\./, converged.stdout.slice(-2000));
  });

  test('a bad apiserver flag value: the run rolls kube-apiserver back by itself, exits 1 saying why, the API serves throughout with the old flags', async () => {
    await writeConfig(host, { distro: 'debian', networking: { plugin: 'none' }, apiServer: { extraSANs: ['api.reconfigured.example'], extraArgs: { 'event-ttl': 'bogus' } } });
    const prober = await startProber(host, `https://${host.ip}:6443/readyz`);
    const t0 = Date.now();
    const r = await kc(host, RUN, { timeoutMs: 600_000 });
    const gap = await prober.stop();
    console.log(`bad flag rolled back in ${((Date.now() - t0) / 1000).toFixed(1)} s; longest /readyz gap ${gap.gapMs} ms (${gap.failed}/${gap.total} probes failed)`);
    assert.equal(r.code, 1, `${r.stderr}\n${r.stdout.split('\n').slice(-10).join('\n')}`);
    const failed = r.events.find((e) => e.event === 'step-failed') as { step?: string; code?: string; message?: string } | undefined;
    assert.equal(failed?.step, 'self-hosted-control-plane');
    assert.equal(failed?.code, 'rolled-back');
    assert.match(failed?.message ?? '', /DaemonSet\/kube-system\/kube-apiserver: .*CrashLoopBackOff.*previous spec was applied again/);
    assert.ok(gap.gapMs <= 2_000, `API gap ${gap.gapMs} ms (${JSON.stringify(gap)})`);
    const ds = await json(host, '-n', 'kube-system', 'get', 'daemonset', 'kube-apiserver');
    const command: string[] = ds.spec.template.spec.containers[0].command;
    assert.ok(command.includes('--event-ttl=2h') && !command.some((a) => a.includes('bogus')), command.join(' '));
    await eventually('one kube-apiserver pod, Ready, with the old flags', async () => {
      const pods = (await json(host, '-n', 'kube-system', 'get', 'pods', '-l', 'component=kube-apiserver')).items as any[];
      const ready = pods.length === 1 && pods[0].status.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True');
      return ready && pods[0].spec.containers[0].command.includes('--event-ttl=2h') ? true : undefined;
    }, 120_000);
  });

  // A flag whose pods start, pass their probes and roll out, and still break the cluster: with another
  // Lease name the new kube-controller-manager leads a Lease nobody reads, and once the old instance is
  // gone nothing renews kube-system/kube-controller-manager. Only the health gate (lib/status/gate.ts)
  // can see that.
  test('a kube-controller-manager flag that rolls out but leaves no leader: the health gate rolls it back by itself, exit 1 naming controller-manager-leader', async () => {
    const LEASE = 'kubeception-gate-test';
    const applied = { distro: 'debian', networking: { plugin: 'none' }, apiServer: { extraSANs: ['api.reconfigured.example'], extraArgs: { 'event-ttl': '2h' } } };
    await writeConfig(host, { ...applied, controllerManager: { extraArgs: { 'leader-elect-resource-name': LEASE } } });
    try {
      const t0 = Date.now();
      const r = await kc(host, RUN, { timeoutMs: 600_000 });
      console.log(`leaderless kube-controller-manager rolled back in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      assert.equal(r.code, 1, `${r.stderr}\n${r.stdout.split('\n').slice(-10).join('\n')}`);
      const failed = r.events.find((e) => e.event === 'step-failed') as { step?: string; code?: string; message?: string } | undefined;
      assert.equal(failed?.step, 'self-hosted-control-plane');
      assert.equal(failed?.code, 'rolled-back');
      assert.match(failed?.message ?? '', /Deployment\/kube-system\/kube-controller-manager: its new pods rolled out, but health checks that passed before the change failed after it: controller-manager-leader \(leader \S+ last renewed \d+ s ago/);
      // The new instance did run and lead: its own Lease exists.
      const own = await json(host, '-n', 'kube-system', 'get', 'lease', LEASE);
      assert.ok(own.spec.holderIdentity, JSON.stringify(own.spec));
      const d = await json(host, '-n', 'kube-system', 'get', 'deployment', 'kube-controller-manager');
      const command: string[] = d.spec.template.spec.containers[0].command;
      assert.ok(!command.some((a) => a.includes(LEASE)), command.join(' '));
      await eventually('kube-system/kube-controller-manager renewed again by the rolled-back instance', async () => {
        const lease = await json(host, '-n', 'kube-system', 'get', 'lease', 'kube-controller-manager');
        return Date.now() - new Date(lease.spec.renewTime).getTime() < 10_000 ? true : undefined;
      }, 120_000);
    } finally {
      await writeConfig(host, applied);
    }
  });

  test('a kubelet setting the kubelet refuses: the run writes its previous config back, the kubelet runs again, exit 1 (`rolled-back`) naming it', async () => {
    const applied = { distro: 'debian', networking: { plugin: 'none' }, apiServer: { extraSANs: ['api.reconfigured.example'], extraArgs: { 'event-ttl': '2h' } } };
    const config = async () => (await host.exec(['cat', '/var/lib/kubelet/config.yaml'])).stdout;
    const before = await config();
    const pid = async () => (await host.exec(['systemctl', 'show', '-p', 'MainPID', '--value', 'kubelet'])).stdout.trim();
    const pidBefore = await pid();
    await writeConfig(host, { ...applied, kubelet: { extraConfig: { evictionHard: { 'memory.available': 'bogus' } } } });
    try {
      const t0 = Date.now();
      const r = await kc(host, RUN, { timeoutMs: 600_000 });
      console.log(`kubelet config rolled back in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      assert.equal(r.code, 1, `${r.stderr}\n${r.stdout.split('\n').slice(-10).join('\n')}`);
      const failed = r.events.find((e) => e.event === 'step-failed') as { step?: string; code?: string; message?: string } | undefined;
      assert.equal(failed?.step, 'kubelet-start');
      assert.equal(failed?.code, 'rolled-back');
      assert.match(failed?.message ?? '', /kubelet\.service: the kubelet did not run with the files this run wrote \(.*\); \/var\/lib\/kubelet\/config\.yaml were written back as they were/);
      assert.equal(await config(), before, 'config.yaml as it was');
      assert.equal((await host.exec(['systemctl', 'is-active', 'kubelet'])).stdout.trim(), 'active');
      assert.notEqual(await pid(), pidBefore, 'the kubelet was restarted');
      await eventually('the node Ready again', async () => {
        const n = await json(host, 'get', 'node', host.name);
        return n.status.conditions.find((c: any) => c.type === 'Ready')?.status === 'True' ? true : undefined;
      }, 120_000);
    } finally {
      await writeConfig(host, applied);
    }
  });

  // A new kube-apiserver binds the shared port in its first second (before it opens storage) and
  // serves only once started: on a loaded host that is tens of seconds in which the kernel queues
  // half of all new connections — the kubelet's probes of both pods included — to an instance that
  // does not answer. SIGSTOP holds the surge instance in that state for 2.5 × what a surge pod needs
  // to be available (APISERVER_READY_IN_A_ROW answered probes, then minReadySeconds).
  test('a surge kube-apiserver that has bound the port but does not answer (SIGSTOP) never replaces the serving one; resumed, the roll completes (100 ms /readyz prober: gap ≤ 2 s)', async () => {
    const dsPods = async () => ((await json(host, '-n', 'kube-system', 'get', 'pods', '-l', 'component=kube-apiserver')).items as any[]).filter((p) => p.metadata.ownerReferences?.[0]?.kind === 'DaemonSet');
    const line = (ps: any[]) => ps.map((p) => `${p.metadata.name}${p.metadata.deletionTimestamp ? ' (terminating)' : ''} ready=${p.status.conditions?.find((c: any) => c.type === 'Ready')?.status}`).join(', ');
    const serving = await dsPods();
    assert.equal(serving.length, 1, line(serving));
    const pids = async () => (await host.exec(['pgrep', '-x', 'kube-apiserver'])).stdout.split(/\s+/).filter(Boolean);
    const before = await pids();
    await kubectl(host, '-n', 'kube-system', 'rollout', 'restart', 'daemonset/kube-apiserver');
    let stopped: string | undefined;
    let held: any[] = [];
    try {
      stopped = await eventually('the surge kube-apiserver listens on 6443', async () => {
        const fresh = (await pids()).filter((p) => !before.includes(p));
        const ss = fresh.length === 1 ? (await host.exec(['ss', '-Hltnp', 'sport = :6443'])).stdout : '';
        return ss.includes(`pid=${fresh[0]},`) ? fresh[0] : undefined;
      }, 120_000);
      await host.execOk(['kill', '-STOP', stopped]);
      // Each new connection reaches the stopped instance half the time, so each read is one request
      // (`get --raw`, no discovery) given 3 s; unanswered ones are skipped. Held at least 2.5 × the
      // time to availability, and until a read answered after 2 × that has seen the serving pod.
      const stoppedAt = Date.now();
      const minReadyMs = (APISERVER_READY_IN_A_ROW + APISERVER_MIN_READY_SECONDS) * 1_000;
      let answeredAt = 0;
      let tries = 0;
      while (Date.now() < stoppedAt + minReadyMs * 2.5 || (answeredAt < stoppedAt + minReadyMs * 2 && Date.now() < stoppedAt + minReadyMs * 4)) {
        tries++;
        const r = await host.exec(['kubectl', `--kubeconfig=${ADMIN}`, '--request-timeout=3s', 'get', '--raw', '/api/v1/namespaces/kube-system/pods?labelSelector=component%3Dkube-apiserver'], { timeoutMs: 20_000 });
        if (r.code === 0) {
          answeredAt = Date.now();
          held = (JSON.parse(r.stdout).items as any[]).filter((p) => p.metadata.ownerReferences?.[0]?.kind === 'DaemonSet');
          assert.ok(held.some((p) => p.metadata.uid === serving[0].metadata.uid && !p.metadata.deletionTimestamp), `the serving pod was removed ${((answeredAt - stoppedAt) / 1000).toFixed(0)} s after the new instance stopped answering: ${line(held)}`);
          const surgeReady = held.filter((p) => p.metadata.uid !== serving[0].metadata.uid && p.status.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True'));
          assert.deepEqual(surgeReady.map((p) => p.metadata.name), [], `the stopped surge pod passed for Ready ${((answeredAt - stoppedAt) / 1000).toFixed(0)} s in: ${line(held)}`);
        }
        await sleep(1_000);
      }
      assert.ok(answeredAt >= stoppedAt + minReadyMs * 2, `no read was answered after 2 × the time to availability (${tries} tries)`);
    } finally {
      if (stopped) await host.exec(['kill', '-CONT', stopped]);
    }
    console.log(`held the surge instance stopped, the serving pod still there: ${line(held)}`);
    const prober = await startProber(host, `https://${host.ip}:6443/readyz`);
    const t0 = Date.now();
    await eventually('the roll completes: one DaemonSet pod, the new one, Ready', async () => {
      const ps = await dsPods();
      return ps.length === 1 && ps[0].metadata.uid !== serving[0].metadata.uid && ps[0].status.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True') ? true : undefined;
    }, 240_000);
    await sleep(3_000);
    const gap = await prober.stop();
    console.log(`resumed: roll done in ${((Date.now() - t0) / 1000).toFixed(1)} s; longest /readyz gap ${gap.gapMs} ms (${gap.failed}/${gap.total} probes failed${gap.gapAnswers ? `: ${gap.gapAnswers}` : ''}${gap.gapChecks ? `; ${gap.gapChecks}` : ''})`);
    assert.ok(gap.gapMs <= 2_000, `API gap ${gap.gapMs} ms (${gap.gapAnswers} ${gap.gapChecks ?? ''})`);
  });
});

describe('crash midway: kill the run after the bootstrap manifests and the kubelet are up, re-run', { timeout: 1_800_000 }, () => {
  let host: Host;
  before(async () => {
    host = await bootHost({ name: `${E2E_PREFIX}cp2`, kubelet: true });
    await importKubeceptionImage(host);
    await writeConfig(host, { distro: 'debian', networking: { plugin: 'none' } });
  });
  after(async () => host?.destroy());

  test('the re-run accepts our own leftovers and converges', async () => {
    const run = kc(host, RUN, { timeoutMs: 900_000 });
    await eventually('bootstrap manifests written and kubelet active', async () => {
      const m = await host.exec(['sh', '-c', 'ls /etc/kubernetes/manifests/bootstrap-kube-apiserver.yaml && systemctl is-active kubelet']);
      return m.code === 0 ? true : undefined;
    }, 300_000);
    await host.exec(['pkill', '-KILL', '-f', 'bin/kubeception.js run bootstrap']);
    const killed = await run;
    assert.notEqual(killed.code, 0);
    const r = await kc(host, RUN, { timeoutMs: 900_000 });
    assert.equal(r.code, 0, `${r.stderr}\n${r.stdout.split('\n').slice(-10).join('\n')}`);
    assert.deepEqual(stepsWith(r.events, 'step-failed'), []);
    const pods = await controlPlanePods(host);
    assert.ok(pods.some((p) => p.owner === 'DaemonSet'));
  });
});
