/**
 * Cluster DNS and the pod network on the bed: a control plane and two workers whose hosts have no CNI
 * config and no hand-made pod routes (`cni: 'none'`), so every pod packet between nodes goes over the
 * flannel VXLAN kubeception installs; worker 2 joins through worker 1's NodePort. CoreDNS answers cluster names from a pod on a worker; a Service
 * backed by a pod on the other worker answers by name and ClusterIP from worker 1 and from the control
 * plane; re-running bootstrap changes no addon object and restarts no pod; `kubeception status` is healthy,
 * names the node whose kubelet is stopped, and is healthy again once it starts. A second cluster with
 * `networking.plugin: 'none'` bootstraps, says what is missing and has nothing of flannel.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { bootHost, type Host } from '../bed/bed.ts';
import { importKubeceptionImage } from '../bed/kubeception-image.ts';
import { BED_FLANNEL_CNI_PLUGIN_IMAGE, TEST_IMAGE } from '../bed/addon-images.ts';
import { kc, writeConfig } from '../helpers/bed-cli.ts';
import { apply, getJson, inPod, kubectl, nslookupAnswers, pod, podsReady, waitFor } from '../helpers/cluster.ts';
import { cidrContains, parseCidr, type Cidr } from '../../lib/net/cidr.ts';
import { printedJoin } from '../helpers/join-command.ts';

const CONFIG = { distro: 'debian', networking: { flannel: { cniPluginImage: BED_FLANNEL_CNI_PLUGIN_IMAGE } } };
/** Every object the addon steps apply (kubectl resource/name). */
const ADDON_OBJECTS = [
  'sa/coredns', 'clusterrole/system:coredns', 'clusterrolebinding/system:coredns', 'configmap/coredns', 'deployment/coredns', 'service/kube-dns',
  'sa/flannel', 'clusterrole/flannel', 'clusterrolebinding/flannel', 'configmap/kube-flannel-cfg', 'daemonset/kube-flannel-ds',
  'sa/kube-proxy', 'clusterrolebinding/kubeadm:node-proxier', 'configmap/kube-proxy', 'daemonset/kube-proxy',
];
const inside = (cidr: string, ip: string) => cidrContains(parseCidr(cidr) as Cidr, ip);

describe('CoreDNS and flannel on a control plane and two workers', { timeout: 1_800_000 }, () => {
  let cp: Host;
  let w1: Host;
  let w2: Host;
  let kubernetesIP: string;
  const podCIDR: Record<string, string> = {};

  before(async () => {
    [cp, w1, w2] = (await Promise.all(['d8cp', 'd8w1', 'd8w2'].map((name) => bootHost({ name, kubelet: { cni: 'none' } })))) as [Host, Host, Host];
    await importKubeceptionImage(cp);
    for (const h of [cp, w1, w2]) await writeConfig(h, CONFIG);
    const r = await kc(cp, ['run', 'bootstrap'], { timeoutMs: 900_000 });
    assert.equal(r.code, 0, `bootstrap failed:\n${r.stderr}\n${r.stdout.slice(-3000)}`);
    const { args: joinArgs, env: tokenEnv } = printedJoin(r.stdout); // the token in KUBECEPTION_TOKEN
    // Both join through the printed URL (the control plane's): the join Service's NodePort has
    // externalTrafficPolicy Local, so it answers only on the node that runs the join pod.
    // A token buys one node: w2 joins with a token of its own.
    const w2Env = { KUBECEPTION_TOKEN: (await kc(cp, ['token', 'create'])).stdout.trim() };
    for (const [w, args, env] of [[w1, joinArgs, tokenEnv], [w2, joinArgs, w2Env]] as const) {
      const j = await kc(w, ['run', 'join', ...args, '--wait-for-network'], { timeoutMs: 600_000, env });
      assert.equal(j.code, 0, `join ${w.name} failed:\n${j.stderr}\n${j.stdout.slice(-2000)}`);
      assert.match(j.stdout + j.stderr, /wait-node-network/);
    }
    for (const h of [cp, w1, w2]) podCIDR[h.name] = (await getJson(cp, 'node', h.name)).spec.podCIDR;
    kubernetesIP = (await getJson(cp, 'service', 'kubernetes')).spec.clusterIP;
  });
  after(async () => {
    await Promise.all([cp, w1, w2].map((h) => h?.destroy()));
  });

  test('the bed made no pod routes: each node got a podCIDR from the controller-manager and a flannel.1 VXLAN device', async () => {
    for (const h of [cp, w1, w2]) {
      assert.ok(inside('10.244.0.0/16', podCIDR[h.name]!.replace(/\/\d+$/, '')), `${h.name} podCIDR ${podCIDR[h.name]}`);
      assert.equal(h.podSubnet, undefined, 'no bed pod subnet');
      assert.match(await h.execOk(['ip', '-d', 'link', 'show', 'flannel.1']), /vxlan id 1 .*dstport 8472/);
      const node = await getJson(cp, 'node', h.name);
      assert.equal(node.status.conditions.find((c: any) => c.type === 'NetworkUnavailable')?.status, 'False', `${h.name} NetworkUnavailable`);
      assert.deepEqual(await h.execOk(['ls', '/etc/cni/net.d']), '10-flannel.conflist\n');
    }
    const routes = await w1.execOk(['ip', 'route']);
    for (const peer of [cp, w2]) assert.match(routes, new RegExp(`${podCIDR[peer.name]!.replace(/\./g, '\\.')} via \\S+ dev flannel\\.1`), routes);
  });

  test('CoreDNS: 2 pods Ready, each IP inside its node\'s podCIDR', async () => {
    await waitFor('coredns 2/2 Ready', 300_000, async () => ((await getJson(cp, 'deployment', '-n', 'kube-system', 'coredns')).status.readyReplicas === 2 ? true : undefined), () => kubectl(cp, '-n', 'kube-system', 'describe', 'pods', '-l', 'k8s-app=kube-dns'));
    for (const p of (await getJson(cp, 'pods', '-n', 'kube-system', '-l', 'k8s-app=kube-dns')).items)
      assert.ok(inside(podCIDR[p.spec.nodeName]!, p.status.podIP), `${p.metadata.name} ${p.status.podIP} on ${p.spec.nodeName} (${podCIDR[p.spec.nodeName]})`);
  });

  test('from a pod on worker 1, kubernetes.default.svc.cluster.local resolves to the kubernetes Service IP', async () => {
    await apply(cp, pod('client-w1', 'd8w1', TEST_IMAGE, ['sleep', '3600']), pod('client-cp', 'd8cp', TEST_IMAGE, ['sleep', '3600']));
    await podsReady(cp, ['client-w1', 'client-cp']);
    const r = await inPod(cp, 'client-w1', 'nslookup kubernetes.default.svc.cluster.local');
    assert.equal(r.code, 0, r.out + r.err);
    assert.deepEqual(nslookupAnswers(r.out), [kubernetesIP], r.out + r.err);
  });

  test('a Service backed by a pod on worker 2 answers by name and ClusterIP from worker 1 and from the control plane', async () => {
    await apply(cp, pod('web', 'd8w2', TEST_IMAGE, ['httpd', '-f', '-p', '8080', '-h', '/www']), {
      apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'default' }, spec: { selector: { app: 'web' }, ports: [{ port: 80, targetPort: 8080 }] },
    });
    await podsReady(cp, ['web']);
    const clusterIP = (await getJson(cp, 'service', 'web')).spec.clusterIP;
    for (const client of ['client-w1', 'client-cp']) {
      for (const url of ['http://web.default.svc.cluster.local/', 'http://web/', `http://${clusterIP}/`]) {
        const r = await waitFor(`${client} → ${url}`, 30_000, async () => {
          const x = await inPod(cp, client, `timeout 5 wget -q -O- ${url}`);
          return x.code === 0 ? x : undefined;
        });
        assert.equal(r.out.trim(), 'ok', `${client} ${url} (stderr: ${r.err})`);
      }
    }
    // The control-plane node itself (host network): the name through CoreDNS at the kube-dns address, then the ClusterIP.
    const dns = (await getJson(cp, 'service', '-n', 'kube-system', 'kube-dns')).spec.clusterIP;
    const look = await cp.execOk(['busybox', 'nslookup', 'web.default.svc.cluster.local', dns]);
    assert.deepEqual(nslookupAnswers(look), [clusterIP], look);
    assert.equal((await cp.execOk(['curl', '-sf', '--max-time', '5', `http://${clusterIP}/`])).trim(), 'ok');
  });

  test('pod to pod across nodes over flannel; every pod IP inside its node\'s podCIDR', async () => {
    const ips = await podsReady(cp, ['client-w1', 'client-cp', 'web']);
    const nodeOf = { 'client-w1': 'd8w1', 'client-cp': 'd8cp', web: 'd8w2' } as Record<string, string>;
    for (const [name, ip] of Object.entries(ips)) assert.ok(inside(podCIDR[nodeOf[name]!]!, ip), `${name} ${ip} in ${podCIDR[nodeOf[name]!]}`);
    for (const client of ['client-w1', 'client-cp']) {
      const r = await inPod(cp, client, `timeout 5 wget -q -O- http://${ips.web}:8080/ && ping -c 1 -W 3 ${ips['client-w1']}`);
      assert.equal(r.code, 0, `${client}: ${r.out}${r.err}`);
    }
  });

  test('re-run bootstrap: no addon object changed, no CoreDNS or flannel pod restarted, an operator\'s edits kept', async () => {
    await kubectl(cp, '-n', 'kube-system', 'annotate', 'deployment/coredns', 'example.com/owner=dns-team');
    await kubectl(cp, '-n', 'kube-system', 'label', 'configmap/kube-flannel-cfg', 'example.com/reviewed=yes');
    const state = async () => ({
      objects: (await getJson(cp, '-n', 'kube-system', ...ADDON_OBJECTS)).items.map((o: any) => `${o.kind}/${o.metadata.name} rv=${o.metadata.resourceVersion}`),
      pods: (await getJson(cp, 'pods', '-n', 'kube-system', '-l', 'k8s-app in (kube-dns, flannel)')).items.map((p: any) => `${p.metadata.name} ${p.metadata.uid} restarts=${p.status.containerStatuses.map((c: any) => c.restartCount).join(',')}`).sort(),
    });
    const before = await state();
    assert.equal(before.objects.length, ADDON_OBJECTS.length);
    assert.equal(before.pods.length, 5, before.pods.join('\n'));
    const r = await kc(cp, ['run', 'bootstrap', '--output', 'json'], { timeoutMs: 600_000 });
    assert.equal(r.code, 0, r.stderr);
    for (const id of ['addon/kube-proxy', 'addon/flannel', 'addon/coredns'])
      assert.ok(r.events.some((e) => e.step === id && e.event === 'step-done' && e.changed === false), `${id} reported no change: ${JSON.stringify(r.events.filter((e) => e.step === id))}`);
    assert.deepEqual(await state(), before);
    assert.equal((await getJson(cp, 'deployment', '-n', 'kube-system', 'coredns')).metadata.annotations['example.com/owner'], 'dns-team');
    assert.equal((await getJson(cp, 'configmap', '-n', 'kube-system', 'kube-flannel-cfg')).metadata.labels['example.com/reviewed'], 'yes');
  });

  test('flannel.backend vxlan → host-gw, live: plan names the ConfigMap and the DaemonSet, the run rolls flanneld on every node, the pod routes go via the node addresses, pods reach each other across nodes', async () => {
    const flannelPods = async () => (await getJson(cp, 'pods', '-n', 'kube-system', '-l', 'k8s-app=flannel')).items as any[];
    const before = new Set((await flannelPods()).map((p) => p.metadata.uid));
    await writeConfig(cp, { ...CONFIG, networking: { flannel: { ...CONFIG.networking.flannel, backend: 'host-gw' } } });
    const plan = await kc(cp, ['plan', 'bootstrap']);
    assert.equal(plan.code, 0, plan.stderr);
    assert.match(plan.stdout, /update {2}ConfigMap\/kube-system\/kube-flannel-cfg/, plan.stdout);
    assert.match(plan.stdout, /update {2}DaemonSet\/kube-system\/kube-flannel-ds/, plan.stdout);
    const t0 = Date.now();
    const r = await kc(cp, ['run', 'bootstrap', '--output', 'json'], { timeoutMs: 600_000 });
    assert.equal(r.code, 0, r.stderr);
    assert.ok(r.events.some((e) => e.step === 'addon/flannel' && e.event === 'step-done' && e.changed === true), JSON.stringify(r.events.filter((e) => e.step === 'addon/flannel')));
    await waitFor('flanneld rolled: 3 new pods Ready', 300_000, async () => {
      const ps = await flannelPods();
      return ps.length === 3 && ps.every((p) => !before.has(p.metadata.uid) && p.status.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True')) ? true : undefined;
    }, () => kubectl(cp, '-n', 'kube-system', 'get', 'pods', '-l', 'k8s-app=flannel', '-o', 'wide'));
    // flanneld writes its Node's backend annotation after it starts; a pod may be Ready before (seen in a
    // three-lane CI run: d8w1 still said vxlan right after its new pod was Ready).
    const backends = async () => Promise.all([cp, w1, w2].map(async (h) => `${h.name} ${(await getJson(cp, 'node', h.name)).metadata.annotations['flannel.alpha.coreos.com/backend-type']}`));
    await waitFor('every Node annotated backend-type host-gw by its flanneld', 60_000, async () => ((await backends()).every((b) => b.endsWith(' host-gw')) ? true : undefined), async () => (await backends()).join(', '));
    for (const h of [cp, w1, w2]) assert.equal((await getJson(cp, 'node', h.name)).metadata.annotations['flannel.alpha.coreos.com/backend-type'], 'host-gw', h.name);
    const esc = (s: string) => s.replace(/\./g, '\\.');
    const routes = await waitFor('worker 1 routes its peers\' pod ranges via their node addresses', 60_000, async () => {
      const text = await w1.execOk(['ip', 'route']);
      return [cp, w2].every((peer) => new RegExp(`^${esc(podCIDR[peer.name]!)} via ${esc(peer.ip)} dev `, 'm').test(text)) ? text : undefined;
    }, () => w1.execOk(['ip', 'route']));
    console.log(`flannel vxlan → host-gw: rolled on 3 nodes ${((Date.now() - t0) / 1000).toFixed(1)} s after the run started`);
    assert.doesNotMatch(routes, /dev flannel\.1/, routes);
    const ips = await podsReady(cp, ['client-w1', 'client-cp', 'web']);
    for (const client of ['client-w1', 'client-cp']) {
      const x = await waitFor(`${client} → web on worker 2 over host-gw`, 30_000, async () => {
        const y = await inPod(cp, client, `timeout 5 wget -q -O- http://${ips.web}:8080/ && ping -c 1 -W 3 ${ips['client-w1']}`);
        return y.code === 0 ? y : undefined;
      });
      assert.equal(x.code, 0, `${client}: ${x.out}${x.err}`);
    }
  });

  // Last in this cluster's tests: it stops a worker's kubelet.
  test('status: healthy after bootstrap and joins; a stopped kubelet fails `nodes` by name; healthy again after it starts', async () => {
    type Check = { name: string; state: string; detail: string; items?: string[]; ms: number };
    const status = async (...args: string[]) => {
      const t0 = Date.now();
      const r = await kc(cp, ['status', '--output', 'json', ...args], { timeoutMs: 360_000 });
      const doc = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { healthy: boolean; checks: Check[] };
      return { code: r.code, doc, ms: Date.now() - t0, stderr: r.stderr, check: (n: string) => doc.checks.find((c) => c.name === n)! };
    };
    const ok = await status('--wait', '3m');
    assert.equal(ok.code, 0, JSON.stringify(ok.doc.checks, null, 1));
    assert.equal(ok.doc.healthy, true);
    for (const name of ['etcd', 'apiservers', 'controller-manager-leader', 'scheduler-leader', 'nodes', 'pod-network', 'coredns', 'join-service', 'csr-approver', 'certificates', 'recovery', 'etcd-snapshots', 'upgrade'])
      assert.ok(ok.check(name), `check ${name} reported`);
    assert.match(ok.check('nodes').detail, /^3\/3 Ready/);
    assert.match(ok.check('pod-network').detail, /flannel: 3\/3 nodes/);
    assert.match(ok.check('coredns').detail, new RegExp(`→ ${kubernetesIP.replace(/\./g, '\\.')}$`));
    const text = await kc(cp, ['status']);
    assert.equal(text.code, 0, text.stdout);
    console.log(`[time] status (healthy, 3 nodes): ${ok.ms} ms with --wait; checks: ${ok.doc.checks.map((c) => `${c.name} ${c.ms} ms`).join(', ')}`);

    await w2.execOk(['systemctl', 'stop', 'kubelet']);
    try {
      // The node controller marks the Node NotReady after its grace period (≈ 40–50 s): poll until
      // `nodes` fails. A run that fails on another check first is printed (seen once in CI under load:
      // exit 1 with `nodes` still passing) and polled past.
      const bad = await waitFor('status to fail `nodes` on the stopped kubelet', 180_000, async () => {
        const r = await status();
        if (r.code === 1 && r.check('nodes').state !== 'fail') console.log(`status failed before the Node was NotReady, on: ${r.doc.checks.filter((c) => c.state === 'fail').map((c) => `${c.name} (${c.detail})`).join('; ')}`);
        return r.code === 1 && r.check('nodes').state === 'fail' ? r : undefined;
      });
      assert.equal(bad.doc.healthy, false);
      assert.equal(bad.check('nodes').state, 'fail');
      assert.match(bad.check('nodes').detail, /NotReady: d8w2/);
      assert.ok(bad.check('nodes').items?.some((i) => /^d8w2 .*NotReady/.test(i)), JSON.stringify(bad.check('nodes')));
      assert.equal(bad.check('etcd').state, 'pass', 'only the node is named');
      const t = await kc(cp, ['status']);
      assert.equal(t.code, 1);
      assert.match(t.stdout, /^FAIL nodes\s+1\/3 NotReady: d8w2$/m);
      assert.match(t.stdout, /unhealthy: .*nodes/);
    } finally {
      await w2.execOk(['systemctl', 'start', 'kubelet']);
    }
    const again = await status('--wait', '3m');
    assert.equal(again.code, 0, JSON.stringify(again.doc.checks.filter((c) => c.state === 'fail')));
    assert.match(again.check('nodes').detail, /^3\/3 Ready/);
  });
});

describe("networking.plugin: 'none'", { timeout: 900_000 }, () => {
  let host: Host;
  before(async () => {
    host = await bootHost({ name: 'd8none', kubelet: { cni: 'none' } });
    await importKubeceptionImage(host);
  });
  after(async () => {
    await host?.destroy();
  });

  test('bootstrap exits 0, says what is missing; nothing of flannel on the host; a later run never installs it', async () => {
    await writeConfig(host, { distro: 'debian', networking: { plugin: 'none' } });
    const r = await kc(host, ['run', 'bootstrap'], { timeoutMs: 900_000 });
    assert.equal(r.code, 0, `${r.stderr}\n${r.stdout.slice(-3000)}`);
    const out = r.stdout + r.stderr;
    assert.match(out, /no pod network is installed \(networking\.plugin: none\)/);
    assert.match(out, /CoreDNS stays Pending until the pod network is ready/);
    const nothingOfFlannel = async () => {
      const r = await host.exec(['sh', '-c', 'ls -d /etc/cni/net.d/* /opt/cni/bin/flannel /run/flannel 2>/dev/null; ip link show flannel.1 2>/dev/null']);
      assert.equal(r.stdout, '', `flannel traces on the host:\n${r.stdout}`);
      assert.equal((await host.exec(['kubectl', '--kubeconfig=/etc/kubernetes/admin.conf', '-n', 'kube-system', 'get', 'daemonset', 'kube-flannel-ds'])).code, 1);
    };
    await nothingOfFlannel();
    assert.equal((await getJson(host, 'configmap', '-n', 'kube-system', 'kubeception-addons')).data.flannel, "networking.plugin is 'none'");
    // The controller-manager creates the pods a moment after the Deployment (the run may end first).
    const phases = await waitFor('CoreDNS pods', 60_000, async () => {
      const p = [...new Set((await getJson(host, 'pods', '-n', 'kube-system', '-l', 'k8s-app=kube-dns')).items.map((p: any) => p.status.phase))];
      return p.length ? p : undefined;
    });
    assert.deepEqual(phases, ['Pending']);

    await writeConfig(host, { distro: 'debian' }); // the default plugin again: flannel stays off
    const again = await kc(host, ['run', 'bootstrap', '--output', 'json'], { timeoutMs: 600_000 });
    assert.equal(again.code, 0, again.stderr);
    const skipped = again.events.find((e) => e.step === 'addon/flannel');
    assert.equal(skipped?.event, 'step-skipped', JSON.stringify(skipped));
    assert.match(skipped.reason, /never re-applied/);
    await nothingOfFlannel();
  });
});
