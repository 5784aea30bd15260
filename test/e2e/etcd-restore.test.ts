/**
 * `kubeception etcd restore SNAPSHOT` on the bed: one control-plane node and one worker. Objects
 * made before snapshot A, between A and B, and after B; a corrupt snapshot is refused by verify and
 * by restore, and a restore over the serving cluster without --force — each exit 2 with nothing on the
 * host changed; then etcd's data dir is deleted and `etcd restore B` brings the API back with B's
 * objects (and not the later ones), both Nodes Ready, the self-hosted control plane and the recovery
 * watcher as before; the RTO is printed. Then `--force` over the restored cluster keeps the data dir
 * it replaces (moved aside); last, a lost host (`reset`: PKI, kubeconfigs, units and etcd data gone,
 * the snapshots and their key kept) comes back from B with the snapshot's keys. One cluster for the file.
 */
import { after, before, describe } from 'node:test';
import assert from 'node:assert/strict';
import { bootHost, type Host } from '../bed/bed.ts';
import { importKubeceptionImage } from '../bed/kubeception-image.ts';
import { assertSameTree, kc, snapshot, writeConfig, type KcResult } from '../helpers/bed-cli.ts';
import { printedJoin } from '../helpers/join-command.ts';
import { apply, getJson, kubectl, timed, waitFor } from '../helpers/cluster.ts';

const CP = 'rsrc';
const W = 'rsrw';
const MANIFESTS = '/etc/kubernetes/manifests';
/** What a refused restore must leave as it was (etcd's own files and the kubelet's change by themselves: checked apart). */
const TREE = ['/etc/kubernetes', '/etc/default/etcd', '/etc/systemd/system', '/var/lib/kubeception'];
const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

describe('kubeception etcd restore', { timeout: 2_400_000 }, () => {
  let cp: Host;
  let w: Host;
  let dataDir: string;
  const names: Record<'A' | 'B', string> = { A: '', B: '' };
  const configmaps = async () => ((await getJson(cp, 'configmaps', '-n', 'default', '-l', 'e2e=restore')).items as any[]).map((c) => c.metadata.name).sort();
  const save = async () => {
    const r = await kc(cp, ['etcd', 'snapshot', 'save', '--output', 'json']);
    assert.equal(r.code, 0, r.stderr + r.stdout);
    return r.events.find((e) => e.event === 'snapshot-saved').snapshot.name as string;
  };
  const cm = (name: string) => apply(cp, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'default', labels: { e2e: 'restore' } }, data: { k: 'v' } });
  const restore = (...args: string[]) => kc(cp, ['etcd', 'restore', ...args, '--output', 'json'], { timeoutMs: 900_000 });
  const errorOf = (r: KcResult) => r.events.find((e) => e.event === 'error')?.code;
  /** PIDs of etcd and the kubelet, and etcd's data dir listing: a refused restore must not restart or touch them. */
  const live = async () => (await cp.execOk(['sh', '-c', `systemctl show -p MainPID --value etcd kubelet; ls -A ${dataDir}; ls -d ${dataDir}.before-restore-* 2>/dev/null; true`])).trim();
  const nodesReady = async () => {
    const nodes = (await getJson(cp, 'nodes')).items as any[];
    const ready = nodes.filter((n) => n.status.conditions.some((c: any) => c.type === 'Ready' && c.status === 'True')).map((n) => n.metadata.name).sort();
    return ready.join(',') === [CP, W].sort().join(',') ? ready : undefined;
  };

  before(async () => {
    const t = Date.now();
    [cp, w] = await Promise.all([bootHost({ name: CP, ip: '10.250.27.10', kubelet: true, bootTimeoutMs: 180_000 }), bootHost({ name: W, ip: '10.250.27.11', kubelet: true, bootTimeoutMs: 180_000 })]);
    await importKubeceptionImage(cp);
    for (const h of [cp, w]) await writeConfig(h, { distro: 'debian', networking: { plugin: 'none' } });
    const b = await kc(cp, ['run', 'bootstrap'], { timeoutMs: 900_000 });
    assert.equal(b.code, 0, `bootstrap failed:\n${b.stderr}\n${b.stdout.slice(-3000)}`);
    const join = printedJoin(b.stdout);
    const j = await kc(w, ['run', 'join', ...join.args], { timeoutMs: 300_000, env: join.env });
    assert.equal(j.code, 0, `${j.stderr}\n${j.stdout.slice(-2000)}`);
    await waitFor('both Nodes Ready', 180_000, nodesReady);
    dataDir = /^ETCD_DATA_DIR="(.*)"$/m.exec(await cp.readFile('/etc/default/etcd'))![1]!;
    console.log(`setup (2 hosts, bootstrap, join, Ready): ${secs(Date.now() - t)}`);
  });
  after(async () => {
    await Promise.all([cp, w].map((h) => h?.destroy()));
  });

  timed('objects before A, between A and B, after B; snapshots A and B', async () => {
    await cm('before-a');
    names.A = await save();
    await cm('between-a-and-b');
    await kubectl(cp, 'create', 'namespace', 'between-a-and-b');
    await new Promise((r) => setTimeout(r, 1_100)); // names are to the second
    names.B = await save();
    await cm('after-b');
    assert.deepEqual(await configmaps(), ['after-b', 'before-a', 'between-a-and-b']);
  });

  timed('a truncated snapshot: verify and restore refuse it (exit 2, snapshot-corrupt), nothing on the host changed', async () => {
    const db = `/var/lib/kubeception/snapshots/${names.A}/etcd.db`;
    await cp.execOk(['sh', '-c', `truncate -s $(( $(stat -c %s ${db}) - 4096 )) ${db}`]);
    const [tree, running] = [await snapshot(cp, TREE), await live()];
    const v = await kc(cp, ['etcd', 'snapshot', 'verify', names.A, '--output', 'json']);
    assert.equal(v.code, 2, v.stderr);
    assert.match(v.stderr, /snapshot-corrupt/);
    const r = await restore(names.A);
    assert.equal(r.code, 2, `${r.stderr}\n${r.stdout.slice(-2000)}`);
    assert.equal(errorOf(r), 'snapshot-corrupt', r.stdout.slice(-2000));
    assert.match(r.stderr, new RegExp(`${names.A}/etcd\\.db`));
    assert.match(r.stderr, /nothing was changed on this host/);
    assertSameTree(tree, await snapshot(cp, TREE), 'restore of a corrupt snapshot');
    assert.equal(await live(), running, 'etcd and the kubelet not restarted, the data dir untouched');
    await kubectl(cp, 'get', 'nodes');
  });

  timed('restore over the serving cluster without --force: refused (exit 2, cluster-serving), nothing changed', async () => {
    const [tree, running] = [await snapshot(cp, TREE), await live()];
    const r = await restore(names.B);
    assert.equal(r.code, 2, `${r.stderr}\n${r.stdout.slice(-2000)}`);
    assert.equal(errorOf(r), 'cluster-serving');
    assert.match(r.stderr, /--force/);
    assertSameTree(tree, await snapshot(cp, TREE), 'refused restore');
    assert.equal(await live(), running);
    assert.deepEqual(await configmaps(), ['after-b', 'before-a', 'between-a-and-b']);
  });

  timed('restore --force --dry-run over the serving cluster: the plan runs, nothing changes', async () => {
    const [tree, running] = [await snapshot(cp, TREE), await live()];
    const r = await restore(names.B, '--force', '--dry-run');
    assert.equal(r.code, 0, `${r.stderr}\n${r.stdout.split('\n').slice(-20).join('\n')}`);
    assert.ok(r.events.some((e) => e.event === 'step-done' && e.step === 'restore-data-dir'), 'the restore of the data dir is planned');
    assertSameTree(tree, await snapshot(cp, TREE), 'restore --dry-run');
    assert.equal(await live(), running);
    assert.deepEqual(await configmaps(), ['after-b', 'before-a', 'between-a-and-b']);
  });

  timed('a key on the host that differs from the snapshot\'s: refused even with --force (exit 2, restore-pki-differs), nothing changed', async () => {
    const pub = '/etc/kubernetes/pki/sa.pub';
    await cp.execOk(['sh', '-c', `cp -p ${pub} /root/sa.pub.orig && openssl genrsa 2048 2>/dev/null | openssl rsa -pubout > ${pub} 2>/dev/null`]);
    try {
      const [tree, running] = [await snapshot(cp, TREE), await live()];
      const r = await restore(names.B, '--force');
      assert.equal(r.code, 2, `${r.stderr}\n${r.stdout.slice(-2000)}`);
      assert.equal(errorOf(r), 'restore-pki-differs');
      assert.match(r.stderr, /sa\.pub/);
      assertSameTree(tree, await snapshot(cp, TREE), 'restore refused for other keys');
      assert.equal(await live(), running);
    } finally {
      await cp.execOk(['cp', '-p', '/root/sa.pub.orig', pub]);
    }
  });

  timed('etcd data dir deleted → etcd restore B: the API serves B, both Nodes Ready, self-hosted plane and watcher as before; RTO', async () => {
    const t0 = Date.now();
    // A lost host's part, too: two shared keys gone; the restore writes them back from pki.enc.
    const keys = ['/etc/kubernetes/pki/sa.key', '/etc/kubernetes/pki/front-proxy-ca.key'];
    const sums = await cp.execOk(['sha256sum', ...keys]);
    await cp.execOk(['rm', ...keys]);
    await cp.execOk(['sh', '-c', `systemctl stop etcd && rm -rf ${dataDir}`]);
    // As an operator finds it: the API no longer ready (its etcd check fails within seconds).
    await waitFor('the API stops serving', 60_000, async () => ((await cp.exec(['kubectl', '--kubeconfig=/etc/kubernetes/admin.conf', 'get', '--raw', '/readyz'], { timeoutMs: 10_000 })).code !== 0 ? true : undefined));
    const r = await restore(names.B);
    assert.equal(r.code, 0, `${r.stderr}\n${r.stdout.split('\n').slice(-30).join('\n')}`);
    const result = r.events.find((e) => e.event === 'result');
    const rto = result.restore.rtoMs as number;
    assert.equal(result.restore.snapshot, names.B);
    console.log(`[etcd-restore] RTO ${secs(rto)} (command start → self-hosted kube-apiserver serving B); restore command ${secs(result.durationMs)}; skipped: ${result.skipped.join(', ') || 'none'}`);
    for (const e of r.events.filter((x) => x.event === 'step-done')) console.log(`  ${e.step.padEnd(32)} ${secs(e.durationMs).padStart(7)}  ${e.detail ?? ''}`.slice(0, 220));
    // B's objects, and not the one made after it.
    assert.deepEqual(await waitFor('the API serves', 60_000, configmaps), ['before-a', 'between-a-and-b']);
    await kubectl(cp, 'get', 'namespace', 'between-a-and-b');
    await waitFor('both Nodes Ready again', 180_000, nodesReady, () => kubectl(cp, 'get', 'nodes', '-o', 'wide'));
    const readyMs = Date.now() - t0;
    // The self-hosted control plane serves alone, as before: its DaemonSet and Deployments, no bootstrap or recovery static pod, the watcher running.
    const selfHosted = async () => {
      const pods = (await getJson(cp, 'pods', '-n', 'kube-system', '-l', 'tier=control-plane')).items as any[];
      const ready = (c: string) => pods.some((p) => p.metadata.labels.component === c && ['DaemonSet', 'ReplicaSet'].includes(p.metadata.ownerReferences?.[0]?.kind) && p.status.conditions?.some((x: any) => x.type === 'Ready' && x.status === 'True'));
      const staticPods = (await cp.execOk(['ls', MANIFESTS])).split('\n').filter((f) => f.startsWith('bootstrap-') || f.startsWith('recovery-'));
      return ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler'].every(ready) && staticPods.length === 0 ? true : undefined;
    };
    await waitFor('the self-hosted control plane Ready, no bootstrap or recovery static pod', 120_000, selfHosted, async () => `${await kubectl(cp, '-n', 'kube-system', 'get', 'pods', '-o', 'wide')}\n${await cp.execOk(['ls', MANIFESTS])}`);
    assert.equal((await cp.execOk(['systemctl', 'is-active', 'kubeception-recovery'])).trim(), 'active');
    assert.equal(await cp.exists('/etc/kubernetes/recovery/recovery-kube-apiserver.yaml'), true);
    assert.equal(await cp.execOk(['sha256sum', ...keys]), sums, 'the shared keys restored from the snapshot, byte for byte');
    assert.equal((await cp.execOk(['stat', '-c', '%a', ...keys])).trim(), '600\n600');
    const marker = JSON.parse(await cp.readFile(`${dataDir}/kubeception-owner.json`));
    assert.equal(marker.restoredFrom, names.B);
    assert.equal((await cp.execOk(['stat', '-c', '%U %a', dataDir])).trim(), 'etcd 700');
    // etcd 3.6: the revision moved a billion ahead of B's, so no watcher sees the restored data as older.
    const rv = Number(JSON.parse(await kubectl(cp, 'get', '--raw', '/api/v1/namespaces/default/configmaps?limit=1')).metadata.resourceVersion);
    assert.ok(rv > 1e9, `resourceVersion ${rv} after the bump`);
    console.log(`[etcd-restore] data dir deleted → both Nodes Ready ${secs(readyMs)} (RTO ${secs(rto)})`);
  });

  timed('restore --force over the restored cluster: the data dir it replaces is kept, moved aside', async () => {
    const before = (await cp.execOk(['ls', `${dataDir}/member`])).trim();
    const r = await restore(names.B, '--force');
    assert.equal(r.code, 0, `${r.stderr}\n${r.stdout.split('\n').slice(-30).join('\n')}`);
    const aside = r.events.find((e) => e.event === 'result').restore.oldDataDir as string;
    assert.match(aside, new RegExp(`^${dataDir}\\.before-restore-\\d{8}T\\d{6}Z$`));
    assert.equal((await cp.execOk(['ls', `${aside}/member`])).trim(), before, 'the replaced data dir is kept whole');
    assert.equal(JSON.parse(await cp.readFile(`${aside}/kubeception-owner.json`)).restoredFrom, names.B);
    await waitFor('both Nodes Ready again', 180_000, nodesReady);
    console.log(`[etcd-restore] --force over a serving cluster: RTO ${secs(r.events.find((e) => e.event === 'result').restore.rtoMs)}`);
  });

  timed('a lost host: after reset (PKI, kubeconfigs, units, etcd data gone; snapshots and key kept), etcd restore B brings it back with the snapshot\'s keys', async () => {
    const shared = ['ca.crt', 'ca.key', 'sa.key', 'sa.pub', 'front-proxy-ca.crt', 'front-proxy-ca.key', 'etcd/ca.crt', 'etcd/ca.key'].map((f) => `/etc/kubernetes/pki/${f}`);
    const sums = await cp.execOk(['sha256sum', ...shared]);
    const reset = await kc(cp, ['reset', '--force'], { timeoutMs: 600_000 });
    assert.equal(reset.code, 0, `${reset.stderr}\n${reset.stdout.slice(-2000)}`);
    assert.equal(await cp.exists('/etc/kubernetes/pki/ca.key'), false);
    const r = await restore(names.B);
    assert.equal(r.code, 0, `${r.stderr}\n${r.stdout.split('\n').slice(-30).join('\n')}`);
    const result = r.events.find((e) => e.event === 'result');
    for (const e of r.events.filter((x) => x.event === 'step-done' || x.event === 'log')) console.log(`  ${(e.step ?? '').padEnd(32)} ${e.event === 'log' ? `log: ${e.message}` : `${secs(e.durationMs).padStart(7)}  ${e.detail ?? ''}`}`.slice(0, 240));
    console.log(`[etcd-restore] lost host (after reset): RTO ${secs(result.restore.rtoMs)}`);
    assert.match(r.events.find((e) => e.event === 'step-done' && e.step === 'restore-pki').detail, /ca\.key/);
    assert.equal(await cp.execOk(['sha256sum', ...shared]), sums, 'every shared key back from the snapshot, byte for byte');
    assert.deepEqual(await waitFor('the API serves', 60_000, configmaps), ['before-a', 'between-a-and-b']);
    await waitFor('both Nodes Ready again', 180_000, nodesReady, () => kubectl(cp, 'get', 'nodes', '-o', 'wide'));
    assert.equal((await cp.execOk(['systemctl', 'is-active', 'kubeception-recovery', 'kubeception-etcd-snapshot.timer'])).trim(), 'active\nactive');
    assert.equal(await cp.exists('/etc/kubernetes/recovery/recovery-kube-apiserver.yaml'), true);
  });
});
