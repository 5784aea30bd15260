/**
 * `kubeception run bootstrap` through the etcd step on a real systemd host (nspawn, its own system
 * D-Bus, Debian's etcd-server), run inside the host as an operator would.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { bootHost, type Host } from '../bed/bed.ts';
import { assertSameTree, kc, snapshot, stepsWith, writeConfig, type KcResult } from '../helpers/bed-cli.ts';

const PKI = '/etc/kubernetes/pki';
const UNTIL_ETCD = ['--only', 'preflight,certs,kubeconfig,etcd', '--ignore-preflight-errors', 'FileExisting-kubelet,Service-kubelet,ImagePull', '--output', 'json'];
const CONFIG = { distro: 'debian', apiServer: { extraSANs: ['api.example.test', '10.250.99.1'] } };

const etcdctl = (host: Host, endpoint: string, cert: string, key: string, ...args: string[]) =>
  host.exec(['etcdctl', `--endpoints=${endpoint}`, `--cacert=${PKI}/etcd/ca.crt`, `--cert=${cert}`, `--key=${key}`, '--dial-timeout=3s', '--command-timeout=5s', ...args], { env: { ETCDCTL_API: '3' } });

/** Leaves and the CA each must chain to. */
const CHAINS: [string, string][] = [
  ['apiserver', 'ca'], ['apiserver-kubelet-client', 'ca'], ['front-proxy-client', 'front-proxy-ca'],
  ['etcd/server', 'etcd/ca'], ['etcd/peer', 'etcd/ca'], ['etcd/healthcheck-client', 'etcd/ca'], ['apiserver-etcd-client', 'etcd/ca'],
];

function assertNoSecrets(r: KcResult, keyPem: string) {
  const out = r.stdout + r.stderr;
  assert.ok(!out.includes('PRIVATE KEY'), 'no PEM key in output');
  const body = keyPem.split('\n').filter((l) => l && !l.startsWith('-----'));
  for (const line of body.slice(1, 4)) assert.ok(!out.includes(line), 'no key bytes in output');
}

describe('bootstrap through etcd on a real systemd host', { timeout: 600_000 }, () => {
  let host: Host;
  let first: KcResult;
  before(async () => {
    host = await bootHost({ name: 'core', hostname: 'Node-A' });
    await writeConfig(host, CONFIG);
    first = await kc(host, ['run', 'bootstrap', ...UNTIL_ETCD]);
  });
  after(async () => host?.destroy());

  test('first run: preflight, certs, kubeconfig and etcd done', () => {
    assert.equal(first.code, 0, first.stderr + first.stdout);
    assert.deepEqual(stepsWith(first.events, 'step-done'), ['preflight', 'certs', 'kubeconfig', 'etcd']);
    assert.ok(first.events.filter((e) => e.event === 'step-done' && e.step !== 'preflight').every((e) => e.changed === true));
  });

  test('the etcd unit is enabled and active (asked over the host D-Bus by systemctl)', async () => {
    assert.equal((await host.exec(['systemctl', 'is-enabled', 'etcd.service'])).stdout.trim(), 'enabled');
    assert.equal((await host.exec(['systemctl', 'is-active', 'etcd.service'])).stdout.trim(), 'active');
  });

  test('host name Node-A with no nodeName → node-a everywhere', async () => {
    const env = await host.readFile('/etc/default/etcd');
    assert.match(env, /^ETCD_NAME="node-a"$/m);
    // The kubelet kubeconfig names the kubelet's own cert store file (certificate, then key), not inline data.
    assert.match(await host.readFile('/var/lib/kubelet/kubeconfig'), /client-certificate: \/var\/lib\/kubelet\/pki\/kubelet-client-current\.pem/);
    const subj = await host.execOk(['openssl', 'x509', '-noout', '-subject', '-in', '/var/lib/kubelet/pki/kubelet-client-current.pem']);
    assert.match(subj, /O ?= ?system:nodes, CN ?= ?system:node:node-a/);
    const members = await etcdctl(host, 'https://127.0.0.1:2379', `${PKI}/apiserver-etcd-client.crt`, `${PKI}/apiserver-etcd-client.key`, 'member', 'list');
    assert.match(members.stdout, /, node-a, https:\/\/10\.250\./);
  });

  test('etcdctl with the generated client cert: healthy on loopback and the advertise address; put/get', async () => {
    for (const ep of ['https://127.0.0.1:2379', `https://${host.ip}:2379`]) {
      const h = await etcdctl(host, ep, `${PKI}/apiserver-etcd-client.crt`, `${PKI}/apiserver-etcd-client.key`, 'endpoint', 'health');
      assert.equal(h.code, 0, h.stderr);
      assert.match(h.stdout + h.stderr, /is healthy/);
    }
    const put = await etcdctl(host, 'https://127.0.0.1:2379', `${PKI}/apiserver-etcd-client.crt`, `${PKI}/apiserver-etcd-client.key`, 'put', '/kubeception/probe', 'hello');
    assert.equal(put.code, 0, put.stderr);
    const get = await etcdctl(host, 'https://127.0.0.1:2379', `${PKI}/apiserver-etcd-client.crt`, `${PKI}/apiserver-etcd-client.key`, 'get', '/kubeception/probe', '--print-value-only');
    assert.equal(get.stdout.trim(), 'hello');
  });

  test('a client cert from a different CA is rejected', async () => {
    await host.execOk(['bash', '-c', [
      'set -e; mkdir -p /root/evil; cd /root/evil',
      'openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 -subj /CN=evil-ca 2>/dev/null',
      'openssl req -newkey rsa:2048 -nodes -keyout c.key -out c.csr -subj /CN=kube-apiserver-etcd-client 2>/dev/null',
      'printf "extendedKeyUsage=clientAuth\\n" > ext; openssl x509 -req -in c.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile ext -out c.crt 2>/dev/null',
    ].join('\n')]);
    const r = await etcdctl(host, 'https://127.0.0.1:2379', '/root/evil/c.crt', '/root/evil/c.key', 'get', '/kubeception/probe');
    assert.notEqual(r.code, 0);
    assert.match(r.stdout + r.stderr, /certificate|tls|deadline/i);
  });

  test('openssl verify passes for every leaf against its CA; keys are 0600; the PKI is root:root (CIS 1.1.19)', async () => {
    for (const [leaf, ca] of CHAINS) {
      const out = await host.execOk(['openssl', 'verify', '-CAfile', `${PKI}/${ca}.crt`, `${PKI}/${leaf}.crt`]);
      assert.match(out, /: OK/);
    }
    const modes = await host.execOk(['sh', '-c', `find ${PKI} -name '*.key' -printf '%m %p\\n'`]);
    const lines = modes.trim().split('\n');
    assert.ok(lines.length >= 11, modes);
    for (const l of lines) assert.match(l, /^600 /);
    // CIS 1.1.19: nothing under the PKI belongs to anyone but root; etcd reads its two keys as
    // systemd credentials (copies in the running unit's private credentials directory).
    assert.equal(await host.execOk(['find', PKI, '(', '!', '-user', 'root', '-o', '!', '-group', 'root', ')', '-printf', '%u:%g %p\\n']), '');
    const env = await host.readFile('/etc/default/etcd');
    assert.match(env, /^ETCD_KEY_FILE="\/run\/credentials\/etcd\.service\/etcd-server\.key"$/m);
    assert.match(env, /^ETCD_PEER_KEY_FILE="\/run\/credentials\/etcd\.service\/etcd-peer\.key"$/m);
    assert.equal(await host.execOk(['cmp', `${PKI}/etcd/server.key`, '/run/credentials/etcd.service/etcd-server.key']), '');
    // The etcd user reads the copy, not the PKI file.
    assert.equal((await host.exec(['runuser', '-u', 'etcd', '--', 'cat', `${PKI}/etcd/server.key`])).code !== 0, true, 'the etcd user reads the PKI key');
    assert.equal((await host.exec(['runuser', '-u', 'etcd', '--', 'test', '-r', '/run/credentials/etcd.service/etcd-server.key'])).code, 0, 'the etcd user cannot read its credential');
    for (const k of ['admin.conf', 'controller-manager.conf', 'scheduler.conf', 'bootstrap-admin.conf'])
      assert.match(await host.execOk(['stat', '-c', '%a', `/etc/kubernetes/${k}`]), /^600/);
  });

  test('the apiserver cert carries every SAN', async () => {
    const san = await host.execOk(['openssl', 'x509', '-noout', '-ext', 'subjectAltName', '-in', `${PKI}/apiserver.crt`]);
    for (const want of ['DNS:node-a', 'DNS:kubernetes', 'DNS:kubernetes.default', 'DNS:kubernetes.default.svc', 'DNS:kubernetes.default.svc.cluster.local', 'DNS:localhost', 'IP Address:10.96.0.1', `IP Address:${host.ip}`, 'IP Address:127.0.0.1', 'DNS:api.example.test', 'IP Address:10.250.99.1'])
      assert.ok(san.includes(want), `${want} missing from ${san}`);
  });

  test('no key material in the output', async () => {
    assertNoSecrets(first, await host.readFile(`${PKI}/ca.key`));
  });

  test('second run: every step skipped or no-op; CA, keys and etcd data byte-identical', async () => {
    const paths = [PKI, '/var/lib/etcd', '/etc/default/etcd', '/etc/kubernetes', '/var/lib/kubelet'];
    // etcd finishes its own start-up writes (member attributes, cluster version) a few seconds after
    // it starts; wait until its WAL is quiet so any change below is the second run's doing.
    let before = await snapshot(host, paths);
    for (let i = 0; i < 12; i++) {
      await new Promise((r) => setTimeout(r, 5_000));
      const again = await snapshot(host, paths);
      if (again === before) break;
      before = again;
    }
    const r = await kc(host, ['run', 'bootstrap', ...UNTIL_ETCD]);
    assert.equal(r.code, 0, r.stderr);
    const done = r.events.filter((e) => e.event === 'step-done');
    assert.deepEqual(done.map((e) => [e.step, e.changed]), [['preflight', false], ['certs', false], ['kubeconfig', false], ['etcd', false]]);
    assert.ok(stepsWith(r.events, 'step-skipped').length >= 1);
    assertSameTree(before, await snapshot(host, paths), 'second run');
    assertNoSecrets(r, await host.readFile(`${PKI}/ca.key`));
  });

  test('a kubelet client cert signed by a different CA is re-issued (same key)', async () => {
    const current = '/var/lib/kubelet/pki/kubelet-client-current.pem';
    const key = `openssl pkey -in ${current}`;
    await host.execOk(['bash', '-c', [
      'set -e; cd /root/evil',
      `${key} > k.key`,
      'openssl req -new -key k.key -subj "/O=system:nodes/CN=system:node:node-a" -out k.csr 2>/dev/null',
      'openssl x509 -req -in k.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 -out k.crt 2>/dev/null',
      // What a foreign writer leaves: the store file the symlink names now holds the foreign cert + our key.
      `f=$(readlink -f ${current}); cat k.crt k.key > "$f"`,
      `openssl verify -CAfile ${PKI}/ca.crt ${current} && exit 1 || true`,
    ].join('\n')]);
    const keyBefore = await host.execOk(['sh', '-c', key]);
    const r = await kc(host, ['run', 'bootstrap', ...UNTIL_ETCD]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.events.find((e) => e.step === 'kubeconfig' && e.event === 'step-done').changed, true);
    const verify = await host.execOk(['openssl', 'verify', '-CAfile', `${PKI}/ca.crt`, current]);
    assert.match(verify, /OK/);
    assert.equal(await host.execOk(['sh', '-c', key]), keyBefore);
  });

  test('a newly configured extra SAN re-issues the apiserver cert; CA and key kept', async () => {
    const hashes = () => host.execOk(['sha256sum', `${PKI}/ca.crt`, `${PKI}/ca.key`, `${PKI}/apiserver.key`, `${PKI}/etcd/ca.key`]);
    const before = await hashes();
    await writeConfig(host, { ...CONFIG, apiServer: { extraSANs: [...CONFIG.apiServer.extraSANs, 'api2.example.test'] } });
    const r = await kc(host, ['run', 'bootstrap', ...UNTIL_ETCD]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.events.find((e) => e.step === 'certs' && e.event === 'step-done').changed, true);
    const san = await host.execOk(['openssl', 'x509', '-noout', '-ext', 'subjectAltName', '-in', `${PKI}/apiserver.crt`]);
    assert.ok(san.includes('DNS:api2.example.test'), san);
    assert.equal(await hashes(), before);
    assert.match(await host.execOk(['openssl', 'verify', '-CAfile', `${PKI}/ca.crt`, `${PKI}/apiserver.crt`]), /OK/);
  });

  test('a kubeconfig server of https://localhost:<port> is covered by the apiserver cert', async () => {
    // Serve the real apiserver cert on loopback and connect by the name "localhost", verifying
    // against the cluster CA, as a kubeconfig with server https://localhost:16443 would.
    const r = await host.exec(['bash', '-c', [
      `openssl s_server -quiet -accept 127.0.0.1:16443 -cert ${PKI}/apiserver.crt -key ${PKI}/apiserver.key -www >/dev/null 2>&1 & pid=$!`,
      'for i in $(seq 50); do ss -ltn | grep -q 16443 && break; sleep 0.1; done',
      `curl -sS --cacert ${PKI}/ca.crt https://localhost:16443/ -o /dev/null -w '%{http_code}'; rc=$?`,
      'kill $pid; exit $rc',
    ].join('\n')]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.trim(), '200');
  });
});

describe('an etcd data dir holding another cluster\'s data', { timeout: 300_000 }, () => {
  let host: Host;
  before(async () => {
    host = await bootHost({ name: 'foreign' });
    // Debian's stock etcd unit with its stock config creates data of a different cluster.
    await host.execOk(['systemctl', 'start', 'etcd.service']);
    await host.execOk(['systemctl', 'stop', 'etcd.service']);
    await writeConfig(host, { distro: 'debian' });
  });
  after(async () => host?.destroy());

  test('is refused (exit 2, names the dir, says it is never wiped) and nothing on the host changes', async () => {
    const before = await snapshot(host);
    assert.match(before, /\/var\/lib\/etcd\/default\/member/);
    const r = await kc(host, ['run', 'bootstrap', ...UNTIL_ETCD]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /DirAvailable--var-lib-etcd-default/);
    assert.match(r.stderr, /\/var\/lib\/etcd\/default/);
    assert.match(r.stderr, /move .*aside/);
    assertSameTree(before, await snapshot(host), 'refused run');
    assert.equal(await host.exists('/etc/kubernetes/pki'), false);
  });
});

describe('IPv6 advertise address', { timeout: 300_000 }, () => {
  let host: Host;
  before(async () => {
    host = await bootHost({ name: 'six' });
    const dev = (await host.execOk(['sh', '-c', `ip -o -4 addr show | awk '/10\\.250\\./ {print $2}'`])).trim();
    await host.execOk(['ip', '-6', 'addr', 'add', 'fd00:20::2/64', 'dev', dev, 'nodad']);
    await writeConfig(host, { distro: 'debian', localAPIEndpoint: { advertiseAddress: 'fd00:20::2' }, networking: { serviceSubnet: 'fd00:96::/108', podSubnet: 'fd00:244::/48' } });
  });
  after(async () => host?.destroy());

  test('etcd URLs are bracketed and etcd answers on https://[fd00:20::2]:2379', async () => {
    const r = await kc(host, ['run', 'bootstrap', ...UNTIL_ETCD]);
    assert.equal(r.code, 0, r.stderr);
    const env = await host.readFile('/etc/default/etcd');
    assert.match(env, /ETCD_ADVERTISE_CLIENT_URLS="https:\/\/\[fd00:20::2\]:2379"/);
    assert.match(env, /ETCD_INITIAL_ADVERTISE_PEER_URLS="https:\/\/\[fd00:20::2\]:2380"/);
    const h = await etcdctl(host, 'https://[fd00:20::2]:2379', `${PKI}/apiserver-etcd-client.crt`, `${PKI}/apiserver-etcd-client.key`, 'endpoint', 'health');
    assert.equal(h.code, 0, h.stderr);
    const san = await host.execOk(['openssl', 'x509', '-noout', '-ext', 'subjectAltName', '-in', `${PKI}/etcd/server.crt`]);
    assert.ok(san.includes('IP Address:FD00:20:0:0:0:0:0:2'), san);
    const kubeconfig = await host.readFile('/etc/kubernetes/admin.conf');
    assert.match(kubeconfig, /server: https:\/\/\[fd00:20::2\]:6443/);
  });
});
