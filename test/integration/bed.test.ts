/**
 * The test bed itself: hosts boot a real systemd with their own D-Bus, network and cgroups, reboot with
 * their files kept, and destroyAllHosts() leaves nothing behind. Needs root (as CI runs).
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { BED_CIDR, BRIDGE_IP, bootHost, CACHE_DIR, destroyAllHosts, getHost, type Host, K8S_VERSION, listHosts, REPO_ROOT } from '../bed/bed.ts';
import { CONTROL_PLANE_IMAGES, importImageArchives, PAUSE_IMAGE, PAUSE_VERSIONS, routePodSubnets } from '../bed/kubelet.ts';
import { run, runOk, sleep } from '../bed/proc.ts';

const OWN = ['bed-a', 'bed-b', 'bed-c', 'bed-kubelet', 'bed-kubelet2', 'bed-kubeadm'];
/**
 * Hosts of another test process (e.g. a developer's run next to this one, maybe still booting), which we
 * must not touch. CI starts with none (.ci/run runs `host.ts down-all` first).
 */
const foreignHosts = () => listHosts().filter((h) => !OWN.includes(h.name));
const destroyOwn = () => Promise.all(OWN.map((n) => getHost(n)?.destroy()));

const ok = (host: Host, argv: string[]) => host.execOk(argv, { timeoutMs: 60_000 });

/** Everything the bed could leave on the machine, as one comparable object. */
async function traces() {
  const cgroupDirs: string[] = [];
  const walk = (dir: string, depth: number) => {
    if (depth > 4) return;
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (!e.isDirectory()) continue;
      if (e.name !== 'kubeception-bed') walk(`${dir}/${e.name}`, depth + 1);
      else {
        const hosts = readdirSync(`${dir}/${e.name}`, { withFileTypes: true }).filter((h) => h.isDirectory());
        cgroupDirs.push(`${dir}/${e.name}`, ...hosts.map((h) => `${dir}/${e.name}/${h.name}`));
      }
    }
  };
  walk('/sys/fs/cgroup', 0);
  const processes: string[] = [];
  for (const pid of readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    try {
      const cg = readFileSync(`/proc/${pid}/cgroup`, 'utf8').match(/\/kubeception-bed\/[^/\n]+/)?.[0];
      if (cg) processes.push(`${pid} ${cg}`);
    } catch {}
  }
  return {
    mounts: readFileSync('/proc/mounts', 'utf8').split('\n').filter((l) => /kubeception-bed|kc-bed|\/run\/netns\/kc-/.test(l)),
    netns: (await runOk(['ip', 'netns', 'list'])).split('\n').filter((l) => l.startsWith('kc-')),
    routes: (await runOk(['ip', '-4', 'route', 'show', 'table', 'all'])).split('\n').filter((l) => l.includes('10.250.')),
    cgroupDirs,
    processes,
    stateDir: existsSync('/run/kubeception-bed'),
  };
}

const CLEAN = { mounts: [], netns: [], routes: [], cgroupDirs: [], processes: [], stateDir: false };

describe('test bed', { timeout: 300_000 }, () => {
  after(() => destroyOwn());

  test('starts from a clean machine', async (t) => {
    await destroyOwn();
    if (foreignHosts().length) return t.skip(`another process runs bed hosts: ${foreignHosts().map((h) => h.name)}`);
    await destroyAllHosts();
    assert.deepEqual(await traces(), CLEAN);
  });

  test('one host: systemd, D-Bus, hostname, etcd unit, network, reboot', async (t) => {
    const host = await bootHost({ name: 'bed-a', hostname: 'Node-A' });
    assert.deepEqual(host.failedUnits, [], 'no unit failed at boot');

    await t.test('PID 1 is systemd', async () => {
      assert.equal((await ok(host, ['cat', '/proc/1/comm'])).trim(), 'systemd');
      assert.match(await ok(host, ['readlink', '/proc/1/exe']), /\/lib\/systemd\/systemd$/m);
    });

    await t.test('systemd answers over the host system bus, inside and from the machine', async () => {
      assert.equal((await ok(host, ['systemctl', 'is-system-running'])).trim(), 'running');
      const prop = ['org.freedesktop.systemd1', '/org/freedesktop/systemd1', 'org.freedesktop.systemd1.Manager', 'SystemState'];
      assert.equal((await ok(host, ['busctl', '--system', 'get-property', ...prop])).trim(), 's "running"');
      const outside = await runOk(['busctl', `--address=${host.busAddress}`, 'get-property', ...prop]);
      assert.equal(outside.trim(), 's "running"');
    });

    await t.test('hostname, /etc/hosts and the repo are in place', async () => {
      assert.equal((await ok(host, ['hostname'])).trim(), 'Node-A');
      assert.equal((await host.readFile('/etc/hostname')).trim(), 'Node-A');
      assert.match(await host.readFile('/etc/hosts'), new RegExp(`^${host.ip.replaceAll('.', '\\.')}\\tNode-A bed-a$`, 'm'));
      assert.ok(await host.exists(`${REPO_ROOT}/package.json`));
      await ok(host, ['touch', `${REPO_ROOT}/.bed-probe`]);
      assert.equal(existsSync(`${REPO_ROOT}/.bed-probe`), false, 'writes to the repo stay in the host');
      assert.match(await ok(host, ['node', '--version']), /^v\d+/);
    });

    await t.test('the stock etcd unit is present, not started at boot, and starts', async () => {
      assert.equal((await host.exec(['systemctl', 'is-enabled', 'etcd.service'])).stdout.trim(), 'disabled');
      assert.equal((await host.exec(['systemctl', 'is-active', 'etcd.service'])).stdout.trim(), 'inactive');
      assert.equal(await host.exists('/var/lib/etcd/default/member'), false, 'no foreign etcd data');
      await ok(host, ['systemctl', 'start', 'etcd.service']);
      assert.equal((await ok(host, ['systemctl', 'is-active', 'etcd.service'])).trim(), 'active');
      const health = await host.exec(['etcdctl', '--endpoints=http://127.0.0.1:2379', 'endpoint', 'health']);
      assert.match(health.stdout + health.stderr, /is healthy/);
      await ok(host, ['systemctl', 'stop', 'etcd.service']);
      await ok(host, ['sh', '-c', 'rm -rf /var/lib/etcd/default']);
      assert.equal(await host.exists('/var/lib/etcd/default'), false);
    });

    await t.test('network: the bridge answers inside; the machine has only a blackhole route', async () => {
      await ok(host, ['ping', '-c', '1', '-W', '2', BRIDGE_IP]);
      const route = await runOk(['ip', '-4', 'route', 'show', BED_CIDR]);
      assert.match(route.trim(), new RegExp(`^blackhole ${BED_CIDR.replace('.', '\\.')}`));
      const get = await run(['ip', '-4', 'route', 'get', host.ip]);
      assert.notEqual(get.code, 0, `the machine must not route to ${host.ip}: ${get.stdout}`);
    });

    await t.test('stop + start keeps the files and kills the processes', async () => {
      await host.writeFile('/root/survives', 'yes\n');
      await ok(host, ['systemd-run', '--unit=bed-sleeper', 'sleep', '3600']);
      assert.equal((await ok(host, ['systemctl', 'is-active', 'bed-sleeper'])).trim(), 'active');
      const oldPid = host.pid;
      await host.stop();
      assert.equal(host.running, false);
      assert.equal(existsSync(`/proc/${oldPid}`), false);
      await host.start();
      assert.notEqual(host.pid, oldPid);
      assert.equal(await host.readFile('/root/survives'), 'yes\n');
      assert.equal((await host.exec(['systemctl', 'is-active', 'bed-sleeper'])).stdout.trim(), 'inactive');
      assert.equal((await ok(host, ['hostname'])).trim(), 'Node-A');
    });

    await host.destroy();
  });

  test('two hosts at once reach each other', async () => {
    const [a, b] = await Promise.all([bootHost({ name: 'bed-b' }), bootHost({ name: 'bed-c', ip: '10.250.0.99' })]);
    assert.equal(b.ip, '10.250.0.99');
    assert.notEqual(a.ip, b.ip);
    await ok(a, ['ping', '-c', '1', '-W', '2', b.ip]);
    await ok(b, ['ping', '-c', '1', '-W', '2', a.ip]);
    assert.notEqual((await ok(a, ['cat', '/etc/machine-id'])).trim(), (await ok(b, ['cat', '/etc/machine-id'])).trim());
  });

  test('destroyAllHosts leaves nothing behind', (t) => assertNothingLeft(t));
});

/** destroyAllHosts() leaves no trace; with another process's hosts about, only ours are checked. */
async function assertNothingLeft(t: { skip: (msg: string) => void }) {
  const foreign = foreignHosts();
  if (foreign.length) {
    await destroyOwn();
    const left = await traces();
    const ours = [
      ...left.mounts.filter((m) => OWN.some((n) => m.includes(`/hosts/${n}/`) || m.includes(`/run/netns/kc-${n} `))),
      ...left.netns.filter((ns) => OWN.some((n) => ns.split(' ')[0] === `kc-${n}`)),
      ...left.cgroupDirs.filter((d) => OWN.some((n) => d.endsWith(`/kubeception-bed/${n}`))),
      ...left.processes.filter((p) => OWN.some((n) => p.endsWith(`/kubeception-bed/${n}`))),
    ];
    assert.deepEqual(ours, []);
    return t.skip(`another process runs bed hosts (${foreign.map((h) => h.name)}): machine-wide check skipped`);
  }
  await destroyAllHosts();
  assert.deepEqual(await traces(), CLEAN);
}

const KUBELET_CONFIG = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
failCgroupV1: false
staticPodPath: /etc/kubernetes/manifests
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
readOnlyPort: 10255
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
`;

const STATIC_POD = `apiVersion: v1
kind: Pod
metadata: {name: smoke, namespace: kube-system}
spec:
  containers:
  - name: pause
    image: ${PAUSE_IMAGE}
    imagePullPolicy: Never
`;

/** kubeadm with the host's stock etcd unit as external etcd; no CoreDNS image here, so that addon is skipped. */
const kubeadmConfig = (ip: string) => `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint: {advertiseAddress: ${ip}, bindPort: 6443}
nodeRegistration:
  criSocket: unix:///run/containerd/containerd.sock
  imagePullPolicy: IfNotPresent
skipPhases: [addon/coredns]
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: ${K8S_VERSION}
etcd:
  external:
    endpoints: [http://127.0.0.1:2379]
networking: {podSubnet: 10.244.0.0/16, serviceSubnet: 10.96.0.0/12}
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
failCgroupV1: false
---
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
conntrack: {maxPerCore: 0}
`;

/** Starts the kubelet standalone (no kubeconfig) with one static pause pod; resolves with its phase and IP. */
async function runStaticPod(host: Host): Promise<{ phase: string; ip: string }> {
  await host.writeFile('/var/lib/kubelet/config.yaml', KUBELET_CONFIG);
  // EnvironmentFile= overrides Environment=: no kubeconfig, so the kubelet runs standalone.
  await host.writeFile('/etc/default/kubelet', 'KUBELET_KUBECONFIG_ARGS=\nKUBELET_EXTRA_ARGS=\n');
  await host.writeFile('/etc/kubernetes/manifests/smoke.yaml', STATIC_POD);
  await ok(host, ['systemctl', 'start', 'kubelet.service']);
  let status = { phase: '', podIP: '' };
  for (let i = 0; i < 120 && !(status.phase === 'Running' && status.podIP); i++) {
    await sleep(500);
    const pods = await host.exec(['curl', '-sf', 'http://127.0.0.1:10255/pods']);
    if (pods.code === 0) status = { phase: '', podIP: '', ...JSON.parse(pods.stdout).items?.[0]?.status };
  }
  return { phase: status.phase, ip: status.podIP };
}

describe('kubelet host', { timeout: 300_000 }, () => {
  after(() => destroyOwn());

  test('containerd, images, units and CNI are prepared; a pull fails fast', async () => {
    const host = await bootHost({ name: 'bed-kubelet', kubelet: true });
    const images = await ok(host, ['ctr', '-n', 'k8s.io', 'images', 'ls', '-q']);
    for (const i of CONTROL_PLANE_IMAGES) assert.ok(images.split('\n').includes(`registry.k8s.io/${i}:${K8S_VERSION}`), `${i}:${K8S_VERSION} in ${images}`);
    for (const p of PAUSE_VERSIONS) assert.ok(images.split('\n').includes(`registry.k8s.io/pause:${p}`), `pause:${p} in ${images}`);
    assert.equal((await ok(host, ['kubelet', '--version'])).trim(), `Kubernetes ${K8S_VERSION}`);
    assert.equal((await ok(host, ['kubeadm', 'version', '-o', 'short'])).trim(), K8S_VERSION);
    assert.equal((await host.exec(['systemctl', 'is-enabled', 'kubelet.service'])).stdout.trim(), 'disabled');
    assert.equal((await ok(host, ['systemctl', 'is-active', 'containerd.service'])).trim(), 'active');
    assert.match(await ok(host, ['systemctl', 'cat', 'kubelet.service']), /ExecStart=\/usr\/local\/bin\/kubelet \$KUBELET_KUBECONFIG_ARGS \$KUBELET_CONFIG_ARGS/);
    assert.ok(await host.exists('/opt/cni/bin/bridge'));
    assert.equal(JSON.parse(await host.readFile('/etc/cni/net.d/10-bed.conflist')).plugins[0].ipam.ranges[0][0].subnet, host.podSubnet);
    const ctrRun = (image: string, ...argv: string[]) =>
      ok(host, ['ctr', '-n', 'k8s.io', 'run', '--rm', '--net-host', '--privileged', `registry.k8s.io/${image}:${K8S_VERSION}`, `bed-${Date.now()}`, ...argv]);
    assert.match(await ctrRun('kube-apiserver', '/usr/local/bin/kube-apiserver', '--version'), new RegExp(`^Kubernetes ${K8S_VERSION.replaceAll('.', '\\.')}$`, 'm'));
    await ctrRun('kube-proxy', 'iptables', '-t', 'nat', '-N', 'BED-TEST');
    assert.match(await ctrRun('kube-proxy', 'iptables-save', '-t', 'nat'), /^:BED-TEST/m, 'iptables in the kube-proxy image works');
    const t0 = Date.now();
    const pull = await host.exec(['ctr', '-n', 'k8s.io', 'images', 'pull', '--hosts-dir', '/etc/containerd/certs.d', 'registry.k8s.io/absent:v0'], { timeoutMs: 60_000 });
    assert.notEqual(pull.code, 0);
    assert.ok(Date.now() - t0 < 10_000, `a pull must fail fast, took ${Date.now() - t0} ms`);
  });

  test('a standalone kubelet runs a static pod with the pause image', async () => {
    const host = getHost('bed-kubelet');
    assert.ok(host?.running, 'host bed-kubelet from the previous test');
    const pod = await runStaticPod(host);
    const tasks = await ok(host, ['ctr', '-n', 'k8s.io', 'tasks', 'ls']);
    const log = await ok(host, ['journalctl', '-u', 'kubelet.service', '--no-pager', '-o', 'cat']);
    assert.equal(pod.phase, 'Running', `static pod phase; kubelet log:\n${log.split('\n').slice(-30).join('\n')}`);
    assert.equal((tasks.match(/RUNNING/g) ?? []).length, 2, `sandbox + container running:\n${tasks}`);
    assert.doesNotMatch(log, /command failed/);
    const ctrs = await ok(host, ['ctr', '-n', 'k8s.io', 'containers', 'ls']);
    assert.match(ctrs, new RegExp(PAUSE_IMAGE.replaceAll('.', '\\.')));
    assert.ok(host.podSubnet && pod.ip.startsWith(host.podSubnet.split('.').slice(0, 3).join('.')), `pod IP ${pod.ip} in ${host.podSubnet}`);
  });

  test('with routePodSubnets, hosts and pods reach pods on another host', async () => {
    const a = getHost('bed-kubelet');
    assert.ok(a?.running, 'host bed-kubelet from the previous test');
    const b = await bootHost({ name: 'bed-kubelet2', kubelet: { images: false } });
    await importImageArchives(b, [join(CACHE_DIR, 'images', `pause-${PAUSE_IMAGE.split(':').pop()}.tar`)]);
    const [podA, podB] = [await runStaticPod(a), await runStaticPod(b)];
    assert.equal(podB.phase, 'Running');
    await routePodSubnets([a, b]);
    await ok(a, ['ping', '-c', '1', '-W', '2', podB.ip]);
    await ok(b, ['ping', '-c', '1', '-W', '2', podA.ip]);
    // From inside pod A's network namespace (its sandbox's PID) to pod B.
    const tasks = await ok(a, ['ctr', '-n', 'k8s.io', 'tasks', 'ls']);
    const pids = [...tasks.matchAll(/^\S+\s+(\d+)\s+RUNNING/gm)].map((m) => m[1] ?? '');
    let fromPod = -1;
    for (const pid of pids) {
      const addr = await a.exec(['nsenter', '-t', pid, '-n', 'ip', '-4', '-o', 'addr']);
      if (addr.stdout.includes(`${podA.ip}/`)) fromPod = (await a.exec(['nsenter', '-t', pid, '-n', 'ping', '-c', '1', '-W', '2', podB.ip])).code;
    }
    assert.equal(fromPod, 0, 'ping from pod A to pod B');
    await b.destroy();
  });

  test('kubeadm init with the machine etcd brings up a Ready control-plane node', async () => {
    const host = await bootHost({ name: 'bed-kubeadm', hostname: 'Node-K', kubelet: true });
    await host.writeFile('/root/kubeadm.yaml', kubeadmConfig(host.ip));
    await ok(host, ['systemctl', 'start', 'etcd.service']);
    const init = await host.exec(['kubeadm', 'init', '--config', '/root/kubeadm.yaml', '--ignore-preflight-errors=all'], {
      timeoutMs: 240_000,
    });
    assert.equal(init.code, 0, `kubeadm init:\n${init.stdout.slice(-2000)}\n${init.stderr.slice(-2000)}`);
    const kubectl = (...a: string[]) => host.exec(['kubectl', '--kubeconfig=/etc/kubernetes/admin.conf', ...a]);
    let nodes = '';
    let pods = '';
    for (let i = 0; i < 120; i++) {
      nodes = (await kubectl('get', 'nodes', '--no-headers')).stdout;
      pods = (await kubectl('get', 'pods', '-n', 'kube-system', '--no-headers')).stdout;
      if (/^node-k\s+Ready\s/m.test(nodes) && (pods.match(/\s1\/1\s+Running\s/g) ?? []).length === 4) break;
      await sleep(1_000);
    }
    assert.match(nodes, new RegExp(`^node-k\\s+Ready\\s+control-plane\\s.*${K8S_VERSION.replaceAll('.', '\\.')}$`, 'm'));
    for (const c of ['kube-apiserver-node-k', 'kube-controller-manager-node-k', 'kube-scheduler-node-k', 'kube-proxy-']) {
      assert.match(pods, new RegExp(`^${c}\\S*\\s+1/1\\s+Running\\s`, 'm'), `${c} Running:\n${pods}`);
    }
    await host.destroy();
  });

  test('destroying a host with running pods leaves nothing behind', (t) => assertNothingLeft(t));
});
