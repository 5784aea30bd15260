/**
 * The bed's runtime stacks (test/bed/runtime.ts), each running kubeception at the default version:
 * the default one (etcd 3.6 and containerd 2 built from the Go module proxy, bind-mounted over the
 * Debian binaries, so the stock units run them) and the Debian variant (etcd 3.4.23, containerd
 * 1.6.20). Preflight's version checks on real binaries: `EtcdVersion` and `ContainerRuntimeVersion`
 * warn where they should and only there, and `EtcdDataDirVersion` warns about a distro upgrade that
 * jumps etcd 3.4 → 3.6 under a running cluster; etcd 3.6 is then shown to migrate that one-member
 * data dir (storage 3.6.0) with the data kept. Hosts rs-bed, rs-deb.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { bootHost, CACHE_DIR, type Host } from '../bed/bed.ts';
import { importKubeceptionImage } from '../bed/kubeception-image.ts';
import { BED_CONTAINERD_VERSION, BED_ETCD_VERSION } from '../bed/runtime.ts';
import { kc, writeConfig, type KcResult } from '../helpers/bed-cli.ts';
import { DEFAULT_KUBERNETES_VERSION } from '../../lib/constants.ts';

const CONFIG = { distro: 'debian', networking: { plugin: 'none' } };
const warnings = (r: KcResult) => r.events.filter((e) => e.event === 'log' && e.level === 'warn').map((e) => String(e.message));
const etcdctl = (h: Host, ...args: string[]) =>
  h.exec(['etcdctl', '--endpoints=https://127.0.0.1:2379', '--cacert=/etc/kubernetes/pki/etcd/ca.crt', '--cert=/etc/kubernetes/pki/etcd/healthcheck-client.crt', '--key=/etc/kubernetes/pki/etcd/healthcheck-client.key', ...args], { timeoutMs: 30_000 });

describe('runtime stacks of the bed', { timeout: 1_500_000 }, () => {
  let bed: Host;
  let deb: Host;
  const results: Record<string, KcResult> = {};

  before(async () => {
    [bed, deb] = await Promise.all([bootHost({ name: 'rs-bed', kubelet: true }), bootHost({ name: 'rs-deb', kubelet: true, etcd: 'debian', containerd: 'debian' })]);
    await Promise.all([importKubeceptionImage(bed), importKubeceptionImage(deb)]);
    for (const h of [bed, deb]) await writeConfig(h, CONFIG);
  });
  after(async () => {
    await Promise.all([bed, deb].map((h) => h?.destroy()));
  });

  test(`default stack: the stock units run etcd ${BED_ETCD_VERSION} and containerd ${BED_CONTAINERD_VERSION} (CRI plugin loaded from a version 3 config)`, async () => {
    assert.match(await bed.execOk(['etcd', '--version']), new RegExp(`^etcd Version: ${BED_ETCD_VERSION.slice(1).replace(/\./g, '\\.')}$`, 'm'));
    assert.match(await bed.execOk(['etcdutl', 'version']), /^etcdutl version: 3\.6\./m);
    assert.match(await bed.execOk(['systemctl', 'show', '-p', 'ExecStart', 'etcd.service']), /path=\/usr\/bin\/etcd /);
    const ctr = await bed.execOk(['ctr', 'version']);
    assert.match(ctr, new RegExp(`Server:\\s+Version:\\s+${BED_CONTAINERD_VERSION.replace(/\./g, '\\.')}`));
    assert.match(await bed.execOk(['cat', '/etc/containerd/config.toml']), /^version = 3$/m);
    const plugins = await bed.execOk(['ctr', 'plugins', 'ls']);
    for (const p of [/io\.containerd\.cri\.v1\s+images\s+\S+\s+ok/, /io\.containerd\.cri\.v1\s+runtime\s+\S+\s+ok/, /io\.containerd\.grpc\.v1\s+cri\s+\S+\s+ok/]) assert.match(plugins, p);
    assert.match(await deb.execOk(['etcd', '--version']), /^etcd Version: 3\.4\.23$/m);
    assert.match(await deb.execOk(['ctr', 'version']), /Server:\s+Version:\s+1\.6\.20/);
    assert.match(await deb.execOk(['cat', '/etc/containerd/config.toml']), /^version = 2$/m);
  });

  test(`bootstrap ${DEFAULT_KUBERNETES_VERSION} on both stacks; preflight warns on etcd and containerd only where it should`, async () => {
    const [a, b] = await Promise.all([kc(bed, ['run', 'bootstrap', '--output', 'json'], { timeoutMs: 900_000 }), kc(deb, ['run', 'bootstrap', '--output', 'json'], { timeoutMs: 900_000 })]);
    results.bed = a;
    results.deb = b;
    for (const [name, r] of Object.entries(results)) assert.equal(r.code, 0, `${name}: bootstrap failed\n${r.stderr}\n${r.stdout.slice(-3000)}`);
    const wa = warnings(a).join('\n');
    const wb = warnings(b).join('\n');
    // The default stack: etcd 3.6 is supported but of an older minor than 1.37's pairing (3.7.0); containerd 2 is silent.
    assert.match(wa, /\[EtcdVersion\] etcd 3\.6\.\d+ is of an older minor than the etcd 3\.7\.0 kubeadm pairs with Kubernetes 1\.37/);
    assert.doesNotMatch(wa, /ContainerRuntimeVersion/);
    // Debian's: etcd below kubeadm's minimum, containerd 1.6 under a 1.37 kubelet.
    assert.match(wb, /\[EtcdVersion\] etcd 3\.4\.23 is older than 3\.5\.24/);
    assert.match(wb, /\[ContainerRuntimeVersion\] containerd 1\.6\.20 has no CRI RuntimeConfig call: .*1\.38 will need containerd 2\.0 or newer/);
    for (const h of [bed, deb]) {
      const nodes = await h.execOk(['kubectl', '--kubeconfig=/etc/kubernetes/admin.conf', 'get', 'node', h.name, '-o', 'jsonpath={.status.nodeInfo.kubeletVersion} {.status.nodeInfo.containerRuntimeVersion}']);
      assert.equal(nodes, `${DEFAULT_KUBERNETES_VERSION} containerd://${h === bed ? BED_CONTAINERD_VERSION.slice(1) : '1.6.20'}`);
    }
    // etcd 3.6 serves the cluster with its own health endpoints and the 3.6 storage schema.
    for (const path of ['/livez', '/readyz']) assert.equal((await bed.execOk(['curl', '-sf', `http://127.0.0.1:2381${path}`])).trim(), 'ok', path);
    const status = JSON.parse((await etcdctl(bed, 'endpoint', 'status', '-w', 'json')).stdout)[0].Status;
    assert.equal(status.version, BED_ETCD_VERSION.slice(1));
    assert.equal(status.storageVersion, '3.6.0');
  });

  test('a distro upgrade etcd 3.4 → 3.6 under the running cluster: preflight warns EtcdDataDirVersion (the jump skips 3.5); etcd 3.6 then migrates the one-member 3.4 data dir, data kept', async () => {
    assert.equal(results.deb?.code, 0, 'needs the Debian-stack cluster of the previous test');
    const kubectl = (...a: string[]) => deb.execOk(['kubectl', '--kubeconfig=/etc/kubernetes/admin.conf', ...a], { timeoutMs: 60_000 });
    await kubectl('create', 'configmap', 'before-etcd-upgrade', '--from-literal=k=v');
    // The "package upgrade": the new binary replaces /usr/bin/etcd; the running 3.4 process is untouched.
    await deb.bind({ src: join(CACHE_DIR, 'etcd', BED_ETCD_VERSION, 'bin', 'etcd'), dst: '/usr/bin/etcd', readOnly: true });
    assert.match(await deb.execOk(['etcd', '--version']), /^etcd Version: 3\.6\./m);
    const r = await kc(deb, ['run', 'bootstrap', '--output', 'json'], { timeoutMs: 600_000 });
    assert.equal(r.code, 0, `${r.stderr}\n${r.stdout.slice(-2000)}`);
    assert.match(warnings(r).join('\n'), /\[EtcdDataDirVersion\] etcd 3\.6\.\d+ is installed, but the running etcd that serves \/var\/lib\/etcd\/default is 3\.4\.23: its next restart skips etcd 3\.5/);
    // What the warning is about: the next restart runs 3.6 on the 3.4 data dir.
    await deb.execOk(['systemctl', 'restart', 'etcd.service'], { timeoutMs: 120_000 });
    const v = await waitForVersion(deb, (x) => x.etcdserver === BED_ETCD_VERSION.slice(1) && x.storage === '3.6.0');
    assert.equal(v.etcdcluster, '3.6.0');
    assert.match(await deb.journal('etcd.service', 400), /missing term information/, 'etcd 3.6 could not read the 3.4 schema at first');
    assert.equal((await kubectl('get', 'configmap', 'before-etcd-upgrade', '-o', 'jsonpath={.data.k}')).trim(), 'v', 'the data is kept');
  });
});

/** Polls etcd's `/version` over TLS (≤ 120 s; the Debian etcdctl of the host predates the storage version field) until `ok` holds. */
async function waitForVersion(h: Host, ok: (v: { etcdserver?: string; etcdcluster?: string; storage?: string }) => boolean): Promise<{ etcdserver?: string; etcdcluster?: string; storage?: string }> {
  const pki = '/etc/kubernetes/pki/etcd';
  let last = '';
  for (let i = 0; i < 120; i++) {
    const r = await h.exec(['curl', '-s', '--cacert', `${pki}/ca.crt`, '--cert', `${pki}/healthcheck-client.crt`, '--key', `${pki}/healthcheck-client.key`, 'https://127.0.0.1:2379/version'], { timeoutMs: 10_000 });
    last = r.stdout || r.stderr;
    try {
      const v = JSON.parse(r.stdout);
      if (ok(v)) return v;
    } catch {}
    await new Promise((res) => setTimeout(res, 1_000));
  }
  throw new Error(`etcd /version never matched: ${last}`);
}
