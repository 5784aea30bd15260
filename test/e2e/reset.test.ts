/**
 * `kubeception reset` on the bed, on a control plane and a joined worker: `--dry-run` changes
 * nothing; a reset leaves an empty residue report (checked again here with the host's own tools);
 * foreign files are kept and reported — also foreign state planted where reset looks (another runtime's
 * veth, a `CNI-*` chain, podman's CNI files, a bind mount under a tree reset removes, kubeadm's PKI on a
 * host kubeception did not set up); a second reset is a no-op; bootstrap after reset gives a fresh
 * working cluster; a reset killed midway is finished by the next one. One cluster for the file.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { bootHost, type Host } from '../bed/bed.ts';
import { importKubeceptionImage } from '../bed/kubeception-image.ts';
import { assertSameTree, kc, KC, SITE, snapshot, writeConfig } from '../helpers/bed-cli.ts';
import { printedJoin, type PrintedJoin } from '../helpers/join-command.ts';

const ADMIN = '/etc/kubernetes/admin.conf';
const FOREIGN = '/etc/kubernetes/operator-notes.txt';
/** State another runtime or tool left on the worker, at places reset's patterns match: none of it is kubeception's. */
const PLANT = `
  ip link add vethf00dfeed type veth peer name kcforeignpeer
  iptables -t nat -N CNI-FOO
  mkdir -p /var/lib/cni/networks/podman && echo 10.88.0.5 > /var/lib/cni/networks/podman/last_reserved_ip.0
  echo '{"cniVersion":"1.0.0","name":"podman-flannel","plugins":[{"type":"flannel"}]}' > /etc/cni/net.d/87-podman-flannel.conflist
  mkdir -p /root/foreign-src /var/lib/kubelet/checkpoints/foreign-bind && echo keep > /root/foreign-src/data
  # (not under pods/: the running kubelet itself empties an unknown directory there, bind mount or not)
  mount --bind /root/foreign-src /var/lib/kubelet/checkpoints/foreign-bind`;
/** Each piece of the planted state, checked on its own (exit 0 = still there). */
const PLANTED: Record<string, string> = {
  'veth pair': 'ip link show vethf00dfeed',
  'CNI-FOO chain': 'iptables -t nat -S CNI-FOO',
  'podman IPAM file': 'grep -qx 10.88.0.5 /var/lib/cni/networks/podman/last_reserved_ip.0',
  'podman flannel conflist': 'test -f /etc/cni/net.d/87-podman-flannel.conflist',
  'bind-mounted data': 'grep -qx keep /root/foreign-src/data',
  'bind mount': 'mountpoint -q /var/lib/kubelet/checkpoints/foreign-bind',
};
const isPlanted = (l: string) => /vethf00dfeed|kcforeignpeer|CNI-FOO|foreign-bind/.test(l);
const TREE = ['/etc/kubernetes', '/etc/default/etcd', '/etc/systemd/system', '/etc/cni', '/var/lib/kubelet'];
const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs `reset --output json` and parses its one document. */
async function reset(host: Host, ...flags: string[]) {
  const r = await host.exec(['node', KC, 'reset', '--force', '--output', 'json', ...flags], { cwd: SITE, timeoutMs: 600_000 });
  let doc: any;
  assert.doesNotThrow(() => (doc = JSON.parse(r.stdout)), `reset --output json is not one JSON document:\n${r.stdout.slice(0, 2000)}\n${r.stderr}`);
  assert.equal(doc.kind, 'ResetReport');
  return { code: r.code, doc, stderr: r.stderr };
}

/** What of the cluster a host still has, asked with the host's own tools (not kubeception's report). */
async function leftovers(host: Host): Promise<string[]> {
  const script = `
    pgrep -l -x 'kubelet|kube-apiserver|kube-controller|kube-scheduler|kube-proxy|etcd' | sed 's/^/process /'
    ctr -n k8s.io containers ls -q | sed 's/^/container /'
    ss -Hltn | awk '{print $4}' | grep -E ':(6443|6444|2379|2380|10250|10257|10259)$' | sed 's/^/port /'
    grep -E ' (/var/lib/kubelet/|/run/netns/cni-)' /proc/self/mountinfo | awk '{print "mount " $5}'
    ls /run/netns 2>/dev/null | grep '^cni-' | sed 's/^/netns /'
    ip -o link | awk -F': ' '{print $2}' | grep -E '^(cni0|flannel|veth|kube-)' | sed 's/^/link /'
    iptables-save | grep -E '^:(KUBE-|CNI-|FLANNEL)' | sed 's/^/chain /'
    ip route | grep -E '^10\\.(244|96)\\.' | sed 's/^/route /'
    ls /etc/kubernetes/pki /etc/kubernetes/admin.conf /var/lib/kubelet/config.yaml /etc/kubernetes/recovery /var/lib/etcd/default/member 2>/dev/null | sed 's/^/file /'
    for u in kubelet etcd kubeception-recovery; do systemctl is-active -q $u && echo "unit $u active"; systemctl is-enabled -q $u 2>/dev/null && echo "unit $u enabled"; done
    true`;
  return (await host.execOk(['bash', '-c', script])).split('\n').filter(Boolean);
}

describe('kubeception reset', { timeout: 2_400_000 }, () => {
  let cp: Host;
  let w: Host;
  let joinCommand: PrintedJoin;
  let t: number;
  const kubectl = (...args: string[]) => cp.execOk(['kubectl', `--kubeconfig=${ADMIN}`, ...args], { timeoutMs: 30_000 });
  const bootstrap = async () => {
    const r = await kc(cp, ['run', 'bootstrap'], { timeoutMs: 900_000 });
    assert.equal(r.code, 0, `bootstrap failed:\n${r.stderr}\n${r.stdout.slice(-3000)}`);
    joinCommand = printedJoin(r.stdout); // the token in KUBECEPTION_TOKEN
  };

  before(async () => {
    t = Date.now();
    [cp, w] = await Promise.all([bootHost({ name: 'r9rc', kubelet: true, bootTimeoutMs: 180_000 }), bootHost({ name: 'r9rw', kubelet: true, bootTimeoutMs: 180_000 })]);
    await importKubeceptionImage(cp);
    for (const h of [cp, w]) await writeConfig(h, { distro: 'debian', networking: { plugin: 'none' } });
    await bootstrap();
    const j = await kc(w, ['run', 'join', ...joinCommand.args], { timeoutMs: 300_000, env: joinCommand.env });
    assert.equal(j.code, 0, `${j.stderr}\n${j.stdout.slice(-2000)}`);
    for (const h of [cp, w]) await h.writeFile(FOREIGN, 'not kubeception\'s\n');
    await w.execOk(['bash', '-ec', PLANT]);
    console.log(`setup (2 hosts, bootstrap, join): ${secs(Date.now() - t)}`);
  });
  after(async () => {
    await Promise.all([cp, w].map((h) => h?.destroy()));
  });

  test('reset --dry-run changes nothing and lists what a reset would remove', async () => {
    t = Date.now();
    // kube-proxy keeps creating chains for a while after the join: compare only once they held still for 5 s (at most 90 s).
    let last = '';
    for (let stable = 0, i = 0; stable < 5 && i < 90; i++) {
      const now = await cp.execOk(['sh', '-c', "iptables-save | grep '^:' | sort"]);
      stable = now === last ? stable + 1 : 0;
      last = now;
      await sleep(1_000);
    }
    const before = await snapshot(cp, TREE);
    const units = await leftovers(cp);
    const r = await reset(cp, '--dry-run');
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.doc.dryRun, true);
    assert.ok(r.doc.residue.files.includes('/etc/kubernetes/pki/ca.key'), 'the report lists the files it would remove');
    assert.ok(r.doc.residue.containers.length > 0 && r.doc.residue.processes.length > 0);
    assert.ok(r.doc.planned.commands.length > 0, 'the planned commands are shown');
    // The running kubelet removes the pivoted-away bootstrap pods' directories under
    // /var/lib/kubelet/pods on its own schedule (seen here once the join got fast enough to end
    // before it did): its own state, not what a dry run may touch; the rest must not change at all.
    const notKubeletPods = (tree: string) => tree.split('\n').filter((l) => !l.startsWith('/var/lib/kubelet/pods/')).join('\n');
    assertSameTree(notKubeletPods(before), notKubeletPods(await snapshot(cp, TREE)), 'reset --dry-run');
    // Containers come and go with the kubelet's GC: compare what a reset would stop — processes (by name), ports, units, chains.
    const stable = (l: string[]) => l.filter((x) => !/^(container|mount|netns|link) /.test(x)).map((x) => x.replace(/^process \d+ /, 'process ')).sort();
    assert.deepEqual(stable(await leftovers(cp)), stable(units), 'processes, ports, units and chains unchanged');
    await kubectl('get', 'nodes');
    console.log(`test time: ${secs(Date.now() - t)}`);
  });

  test('reset on a worker: its Node deleted, residue empty, foreign file and planted foreign state kept and reported', async () => {
    t = Date.now();
    for (const [what, check] of Object.entries(PLANTED)) assert.equal((await w.exec(['bash', '-c', check])).code, 0, `${what} planted and there before the reset`);
    const r = await reset(w);
    assert.equal(r.code, 0, `${r.stderr}\n${JSON.stringify(r.doc.residue)}\n${JSON.stringify(r.doc.error)}`);
    assert.deepEqual(Object.values(r.doc.residue).flat(), []);
    assert.deepEqual((await leftovers(w)).filter((l) => !isPlanted(l)), []);
    assert.ok(r.doc.foreign.includes(FOREIGN));
    assert.equal(await w.readFile(FOREIGN), 'not kubeception\'s\n');
    // Another runtime's veth and chain, podman's CNI files, and a bind mount under /var/lib/kubelet/pods: kept, listed.
    const gone: string[] = [];
    for (const [what, check] of Object.entries(PLANTED)) if ((await w.exec(['bash', '-c', check])).code !== 0) gone.push(what);
    assert.deepEqual(gone, [], 'reset removed foreign state');
    const listed = JSON.stringify([r.doc.foreign, r.doc.foreignState]);
    for (const x of ['vethf00dfeed', 'CNI-FOO', '/var/lib/cni/networks/podman', '87-podman-flannel.conflist', 'foreign-bind']) assert.ok(listed.includes(x), `${x} not listed as foreign: ${listed}`);
    // The worker's own credentials cordon its Node; deleting it is the control plane's (Node authorizer): the reset says how.
    const warned = r.doc.events.some((e: any) => e.event === 'log' && e.step === 'remove-node' && /kubectl delete node r9rw/.test(e.message));
    const node = await cp.exec(['kubectl', `--kubeconfig=${ADMIN}`, 'get', 'node', 'r9rw', '-o', 'jsonpath={.spec.unschedulable}']);
    assert.ok(node.code !== 0 || (node.stdout.trim() === 'true' && warned), `Node r9rw neither deleted nor cordoned with a warning: ${node.stdout}${node.stderr}`);
    console.log(`worker Node: ${node.code !== 0 ? 'deleted' : 'cordoned; the reset printed how to delete it'}`);
    if (node.code === 0) await kubectl('delete', 'node', 'r9rw');
    console.log(`test time: ${secs(Date.now() - t)}`);
  });

  test("kubeadm's PKI and admin.conf, written after kubeception's reset (files it never recorded): reset keeps and lists them", async () => {
    await w.execOk(['bash', '-ec', 'mkdir -p /etc/kubernetes/pki && openssl genrsa -out /etc/kubernetes/pki/ca.key 2048 2>/dev/null && echo "apiVersion: v1" > /etc/kubernetes/admin.conf']);
    const key = await w.readFile('/etc/kubernetes/pki/ca.key');
    const r = await reset(w);
    assert.equal(r.code, 0, `${r.stderr}\n${JSON.stringify(r.doc.residue)}`);
    assert.equal(await w.readFile('/etc/kubernetes/pki/ca.key'), key, "kubeadm's CA key was kept");
    assert.ok(await w.exists('/etc/kubernetes/admin.conf'));
    assert.ok(r.doc.foreign.includes('/etc/kubernetes/pki/ca.key') && r.doc.foreign.includes('/etc/kubernetes/admin.conf'), JSON.stringify(r.doc.foreign));
  });

  test('reset on the control plane: residue empty, exit 0; the host\'s own tools agree; a second reset is fine', async () => {
    t = Date.now();
    const r = await reset(cp);
    assert.equal(r.code, 0, `${r.stderr}\n${JSON.stringify(r.doc.residue)}\n${JSON.stringify(r.doc.error)}`);
    assert.deepEqual(Object.values(r.doc.residue).flat(), []);
    assert.deepEqual(await leftovers(cp), []);
    assert.ok(r.doc.foreign.includes(FOREIGN) && r.doc.foreign.includes('/etc/cni/net.d/10-bed.conflist'));
    assert.ok(await cp.exists(FOREIGN));
    const again = await reset(cp);
    assert.equal(again.code, 0, again.stderr);
    const worked = again.doc.events.filter((e: any) => e.event === 'step-done' && e.changed).map((e: any) => e.step);
    assert.deepEqual(worked, [], `a second reset changed: ${worked.join(', ')}`);
    console.log(`test time: ${secs(Date.now() - t)}`);
  });

  test('bootstrap after reset gives a fresh working cluster; a reset killed midway is finished by the next one', async () => {
    t = Date.now();
    await bootstrap();
    await kubectl('wait', '--for=condition=Ready', `node/${cp.name}`, '--timeout=120s');
    assert.doesNotMatch(await kubectl('get', 'nodes', '-o', 'name'), /r9rw/, 'a fresh cluster: nothing of the old one');
    await kubectl('create', 'configmap', 'fresh', '-n', 'default');
    console.log(`bootstrap after reset: ${secs(Date.now() - t)}`);
    const killed = cp.exec(['node', KC, 'reset', '--force'], { cwd: SITE, timeoutMs: 600_000 });
    for (let i = 0; i < 600 && (await cp.exec(['systemctl', 'is-active', '-q', 'kubelet'])).code === 0; i++) await sleep(100);
    await cp.exec(['pkill', '-KILL', '-f', `${KC} reset`]);
    assert.notEqual((await killed).code, 0, 'the first reset was killed');
    const r = await reset(cp);
    assert.equal(r.code, 0, `${r.stderr}\n${JSON.stringify(r.doc.residue)}`);
    assert.deepEqual(await leftovers(cp), []);
    console.log(`test time: ${secs(Date.now() - t)}`);
  });
});
