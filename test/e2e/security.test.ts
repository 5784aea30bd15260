/**
 * What a bootstrap token can and cannot obtain, tried on the bed the way an attacker holding a
 * worker's join token would (README "Security"): one cluster, control plane s1cp, workers s1w1, s1w2.
 * - a token buys one new node: after s1w1 joined with it, kubeception's own join with it stops at
 *   discovery (exit 2, host unchanged) and raw CSRs posted with it for other names are denied;
 * - a name that exists as a Node is not sold, NotReady included (s1w1 with its kubelet stopped);
 * - a name held for a control-plane node (the bootstrap node's, and one `certs upload --node-name`
 *   held) is not sold; a name a token bought cannot be held for a control-plane node afterwards;
 * - no private key of the control plane is readable through a node identity: with the control-plane
 *   node's own kubelet credential, every Secret its pods reference is read (as the Node authorizer
 *   allows) and none holds the cluster's keys; and no Secret in the cluster holds them at all.
 */
import { after, before, describe } from 'node:test';
import assert from 'node:assert/strict';
import { bootHost, type Host } from '../bed/bed.ts';
import { importKubeceptionImage } from '../bed/kubeception-image.ts';
import { assertSameTree, E2E_PREFIX, kc, snapshot, writeConfig } from '../helpers/bed-cli.ts';
import { ADMIN, sleep, timed } from '../helpers/cluster.ts';

describe('security: what a bootstrap token buys', { timeout: 1_800_000 }, () => {
  let cp: Host;
  let w1: Host;
  let w2: Host;
  let used: string;
  let joinFlags: string[];
  const kubectl = (...args: string[]) => cp.execOk(['kubectl', `--kubeconfig=${ADMIN}`, ...args], { timeoutMs: 30_000 });
  const newToken = async () => {
    const r = await kc(cp, ['token', 'create']);
    assert.equal(r.code, 0, r.stderr);
    const t = r.stdout.trim();
    assert.match(t, /^[a-z0-9]{6}\.[a-z0-9]{16}$/);
    return t;
  };
  const join = (host: Host, token: string) => kc(host, ['run', 'join', ...joinFlags, '--output', 'json'], { timeoutMs: 300_000, env: { KUBECEPTION_TOKEN: token } });

  /** Posts a kubelet client CSR for `node` with `token` from s1w2 (a raw request, as an attacker would) and returns its decision. */
  let n = 0;
  async function rawCsr(token: string, node: string): Promise<string> {
    const name = `attack-${++n}-${node}`;
    const pem = await w2.execOk(['bash', '-c', `mkdir -p /root/csr && cd /root/csr && openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ${name}.key -subj "/O=system:nodes/CN=system:node:${node}" 2>/dev/null`]);
    const csr = { apiVersion: 'certificates.k8s.io/v1', kind: 'CertificateSigningRequest', metadata: { name }, spec: { request: Buffer.from(pem).toString('base64'), signerName: 'kubernetes.io/kube-apiserver-client-kubelet', usages: ['digital signature', 'client auth'] } };
    await w2.execOk(['kubectl', `--server=https://${cp.ip}:6443`, '--certificate-authority=/root/csr/ca.crt', `--token=${token}`, 'create', '-f', '-'], { input: JSON.stringify(csr) });
    for (let i = 0; i < 60; i++) {
      const cond = (await kubectl('get', 'csr', name, '-o', 'jsonpath={.status.conditions[0].type} {.status.conditions[0].reason}')).trim();
      if (cond) {
        await sleep(2_000); // a signer would have signed an approved CSR by now
        const cert = await kubectl('get', 'csr', name, '-o', 'jsonpath={.status.certificate}');
        return `${cond}${cert ? ' (certificate issued)' : ''}`;
      }
      await sleep(500);
    }
    return 'pending';
  }

  before(async () => {
    [cp, w1, w2] = (await Promise.all(['s1cp', 's1w1', 's1w2'].map((name) => bootHost({ name: `${E2E_PREFIX}${name}`, kubelet: true })))) as [Host, Host, Host];
    await importKubeceptionImage(cp);
    // An endpoint (its own address): `certs upload` prepares control-plane joins only with one.
    await writeConfig(cp, { distro: 'debian', networking: { plugin: 'none' }, controlPlaneEndpoint: `${cp.ip}:6443` });
    for (const h of [w1, w2]) await writeConfig(h, { distro: 'debian', networking: { plugin: 'none' } });
    const r = await kc(cp, ['run', 'bootstrap'], { timeoutMs: 900_000 });
    assert.equal(r.code, 0, `bootstrap failed:\n${r.stderr}\n${r.stdout.slice(-3000)}`);
    const hash = (await cp.execOk(['sh', '-c', 'openssl x509 -pubkey -noout -in /etc/kubernetes/pki/ca.crt | openssl pkey -pubin -outform der | sha256sum | cut -d" " -f1'])).trim();
    joinFlags = ['--url', `https://${cp.ip}:30000`, '--ca-cert-hash', `sha256:${hash}`];
    await w2.writeFile('/root/csr/ca.crt', await cp.readFile('/etc/kubernetes/pki/ca.crt'));
    used = await newToken();
    const j = await join(w1, used);
    assert.equal(j.code, 0, `join of s1w1:\n${j.stderr}\n${j.stdout.slice(-2000)}`);
  });
  after(async () => {
    await Promise.all([cp, w1, w2].map((h) => h?.destroy()));
  });

  timed('the token that joined s1w1 buys nothing more: its join elsewhere stops at discovery (exit 2, host unchanged)', async () => {
    const before = await snapshot(w2);
    const r = await join(w2, used);
    assert.equal(r.code, 2, `${r.stderr}\n${r.stdout.slice(-1500)}`);
    assert.match(r.stdout + r.stderr, /join-token-used/);
    assertSameTree(before, await snapshot(w2), 'a used token changed the host');
    const listed = await kc(cp, ['token', 'list', '--output', 'json']);
    assert.equal(listed.events.find((t: { id: string }) => t.id === used.slice(0, 6))?.joinedNode, `${E2E_PREFIX}s1w1`.toLowerCase());
  });

  timed('several raw CSRs with that one token, for new names and a future control-plane name: all denied, no certificate', async () => {
    for (const name of ['x-new-1', 'x-new-2', 'cp9']) assert.equal(await rawCsr(used, name), 'Denied KubeceptionTokenUsed', name);
  });

  timed('an existing NotReady Node (s1w1, kubelet stopped) is not sold to a fresh token', async () => {
    await w1.execOk(['systemctl', 'stop', 'kubelet']);
    const node = `${E2E_PREFIX}s1w1`.toLowerCase();
    try {
      for (let i = 0; i < 90; i++) {
        const ready = (await kubectl('get', 'node', node, '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}')).trim();
        if (ready !== 'True') break;
        await sleep(2_000);
      }
      assert.notEqual((await kubectl('get', 'node', node, '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}')).trim(), 'True', 'the Node went NotReady');
      assert.equal(await rawCsr(await newToken(), node), 'Denied KubeceptionNodeNameTaken');
      const before = await snapshot(w2);
      await writeConfig(w2, { distro: 'debian', networking: { plugin: 'none' }, nodeName: node });
      const r = await join(w2, await newToken());
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stdout + r.stderr, /join-node-name-taken/);
      await writeConfig(w2, { distro: 'debian', networking: { plugin: 'none' } });
      assertSameTree(before, await snapshot(w2), 'a refused name changed the host');
    } finally {
      await w1.execOk(['systemctl', 'start', 'kubelet']);
    }
  });

  timed('names held for control-plane nodes are not sold: the bootstrap node, and one `certs upload --node-name` held before its join', async () => {
    assert.equal(await rawCsr(await newToken(), `${E2E_PREFIX}s1cp`.toLowerCase()), 'Denied KubeceptionNameReserved');
    const up = await kc(cp, ['certs', 'upload', '--node-name', 'cp2']);
    assert.equal(up.code, 0, up.stderr);
    assert.match(up.stdout, /Held node names cp2 for control-plane joins/);
    assert.equal(await rawCsr(await newToken(), 'cp2'), 'Denied KubeceptionNameReserved');
  });

  timed('a name a token bought can never be held for a control-plane node (the check a control-plane join makes before writing)', async () => {
    assert.equal(await rawCsr(await newToken(), 'cp3'), 'Approved KubeceptionAutoApproved (certificate issued)');
    const up = await kc(cp, ['certs', 'upload', '--node-name', 'cp3']);
    assert.equal(up.code, 2, up.stdout + up.stderr);
    assert.match(up.stdout + up.stderr, /node-name-issued/);
    assert.match(up.stdout + up.stderr, /bought a kubelet certificate for it/);
  });

  timed("no private key of the control plane is readable with the control-plane node's own kubelet identity, nor in any Secret", async () => {
    const keys = await Promise.all(['ca.key', 'sa.key', 'apiserver-etcd-client.key', 'apiserver.key', 'front-proxy-ca.key', 'etcd/ca.key'].map(async (f) => [f, (await cp.readFile(`/etc/kubernetes/pki/${f}`)).split('\n')[1]!] as const));
    const kubelet = ['kubectl', '--server=https://127.0.0.1:6443', '--certificate-authority=/etc/kubernetes/pki/ca.crt', '--client-certificate=/var/lib/kubelet/pki/kubelet-client-current.pem', '--client-key=/var/lib/kubelet/pki/kubelet-client-current.pem'];
    assert.match((await cp.execOk([...kubelet, 'auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}'])).trim(), /^system:node:/);
    const pods = JSON.parse(await kubectl('get', 'pods', '-A', '--field-selector', `spec.nodeName=${`${E2E_PREFIX}s1cp`.toLowerCase()}`, '-o', 'json')) as { items: { metadata: { namespace: string }; spec: { volumes?: { secret?: { secretName: string } }[] } }[] };
    const referenced = new Set(pods.items.flatMap((p) => (p.spec.volumes ?? []).filter((v) => v.secret).map((v) => `${p.metadata.namespace}/${v.secret!.secretName}`)));
    let read = 0;
    for (const ref of referenced) {
      const [ns, name] = ref.split('/') as [string, string];
      const r = await cp.exec([...kubelet, '-n', ns, 'get', 'secret', name, '-o', 'json']);
      if (r.code !== 0) continue;
      read++;
      const data = Object.values((JSON.parse(r.stdout) as { data?: Record<string, string> }).data ?? {}).map((v) => Buffer.from(v, 'base64').toString('utf8')).join('\n');
      for (const [file, line] of keys) assert.ok(!data.includes(line), `${file} is readable as Secret ${ref} through the node identity`);
    }
    console.log(`node identity read ${read} of ${referenced.size} Secret(s) referenced by its pods (${[...referenced].join(', ')}): none holds a control-plane key`);
    const all = JSON.parse(await kubectl('get', 'secrets', '-A', '-o', 'json')) as { items: { metadata: { namespace: string; name: string }; data?: Record<string, string> }[] };
    for (const s of all.items) {
      const data = Object.values(s.data ?? {}).map((v) => Buffer.from(v, 'base64').toString('utf8')).join('\n');
      for (const [file, line] of keys) assert.ok(!data.includes(line), `${file} is in Secret ${s.metadata.namespace}/${s.metadata.name}`);
    }
    for (const c of ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler']) assert.equal((await cp.exec(['kubectl', `--kubeconfig=${ADMIN}`, '-n', 'kube-system', 'get', 'secret', c])).code, 1, `Secret ${c} exists`);
  });
});
