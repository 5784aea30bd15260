/**
 * Joining workers on the bed: a control plane bootstrapped by kubeception prints the join command;
 * a second host runs it, its kubelet gets a client certificate through an approved CSR, and its Node
 * becomes Ready. Bad tokens, a wrong CA hash, an impostor service and an unreachable URL all fail
 * fast with a named error and leave the worker's files unchanged.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { bootHost, type Host } from '../bed/bed.ts';
import { importKubeceptionImage } from '../bed/kubeception-image.ts';
import { assertSameTree, kc, snapshot, writeConfig, type KcResult } from '../helpers/bed-cli.ts';

const ADMIN = '/etc/kubernetes/admin.conf';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('join on the bed', { timeout: 1_800_000 }, () => {
  let cp: Host;
  let w1: Host;
  let w2: Host;
  let joinArgs: string[];
  let token: string;
  const outputs: string[] = [];
  const kubectl = (...args: string[]) => cp.execOk(['kubectl', `--kubeconfig=${ADMIN}`, ...args], { timeoutMs: 30_000 });
  const join = async (host: Host, args: string[]): Promise<KcResult> => {
    const r = await kc(host, ['run', 'join', ...args, '--output', 'json'], { timeoutMs: 300_000 });
    outputs.push(r.stdout, r.stderr);
    return r;
  };
  const replaceArg = (name: string, value: string) => joinArgs.map((a, i) => (joinArgs[i - 1] === name ? value : a));

  before(async () => {
    [cp, w1, w2] = await Promise.all([bootHost({ name: 'jcp', kubelet: true }), bootHost({ name: 'jw1', kubelet: true }), bootHost({ name: 'jw2', kubelet: true })]);
    await importKubeceptionImage(cp);
    for (const h of [cp, w1, w2]) await writeConfig(h, { distro: 'debian', networking: { plugin: 'none' } });
    const r = await kc(cp, ['run', 'bootstrap'], { timeoutMs: 900_000 });
    assert.equal(r.code, 0, `bootstrap failed:\n${r.stderr}\n${r.stdout.slice(-3000)}`);
    const line = r.stdout.split('\n').find((l) => l.includes('kubeception run join'));
    assert.ok(line, `no join command printed:\n${r.stdout.slice(-2000)}`);
    joinArgs = line.trim().split(/\s+/).slice(4); // after "npx kubeception run join"
    token = joinArgs[joinArgs.indexOf('--token') + 1]!;
    assert.match(token, /^[a-z0-9]{6}\.[a-z0-9]{16}$/);
  });
  after(async () => {
    await Promise.all([cp, w1, w2].map((h) => h?.destroy()));
  });

  test('the printed command joins a worker: Node Ready within seconds, CSR approved, a pod runs there', async () => {
    const t0 = Date.now();
    const r = await join(w1, joinArgs);
    assert.equal(r.code, 0, `${r.stderr}\n${r.stdout.slice(-2000)}`);
    let ready = false;
    for (let i = 0; i < 90 && !ready; i++) {
      const n = await cp.exec(['kubectl', `--kubeconfig=${ADMIN}`, 'get', 'node', 'jw1', '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}']);
      ready = n.stdout.trim() === 'True';
      if (!ready) await sleep(1_000);
    }
    assert.ok(ready, 'jw1 Ready');
    console.log(`join → Node Ready: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    const csrs = await kubectl('get', 'csr', '-o', 'custom-columns=USER:.spec.username,COND:.status.conditions[*].type,SIGNER:.spec.signerName', '--no-headers');
    assert.match(csrs, new RegExp(`system:bootstrap:${token.slice(0, 6)}\\s+Approved\\s+kubernetes.io/kube-apiserver-client-kubelet`));
    await cp.execOk(['kubectl', `--kubeconfig=${ADMIN}`, 'apply', '-f', '-'], {
      input: JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'on-worker', namespace: 'default' }, spec: { nodeName: 'jw1', containers: [{ name: 'pause', image: 'registry.k8s.io/pause:3.10.1', imagePullPolicy: 'IfNotPresent' }] } }),
    });
    let phase = '';
    for (let i = 0; i < 60 && phase !== 'Running'; i++) {
      phase = (await kubectl('get', 'pod', 'on-worker', '-o', 'jsonpath={.status.phase}')).trim();
      if (phase !== 'Running') await sleep(1_000);
    }
    assert.equal(phase, 'Running');
  });

  test('joining again converges: no new Node, no new CSR', async () => {
    const before = { uid: await kubectl('get', 'node', 'jw1', '-o', 'jsonpath={.metadata.uid}'), csrs: await kubectl('get', 'csr', '--no-headers') };
    const r = await join(w1, joinArgs);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(r.events.some((e) => e.event === 'step-skipped' && e.step === 'discovery'));
    await sleep(5_000);
    assert.equal(await kubectl('get', 'node', 'jw1', '-o', 'jsonpath={.metadata.uid}'), before.uid);
    assert.equal((await kubectl('get', 'csr', '--no-headers')).trim().split('\n').length, before.csrs.trim().split('\n').length);
  });

  async function refused(args: string[], code: number, want: RegExp[]): Promise<KcResult> {
    const before = await snapshot(w2);
    const r = await join(w2, args);
    assert.equal(r.code, code, `${r.stderr}\n${r.stdout.slice(-1500)}`);
    for (const re of want) assert.match(r.stderr, re);
    assertSameTree(before, await snapshot(w2), 'refused join');
    return r;
  }

  test('join on the control-plane node is refused (exit 2), its kubelet untouched', async () => {
    const before = await cp.execOk(['sh', '-c', 'sha256sum /etc/systemd/system/kubelet.service.d/*; systemctl show -p ActiveEnterTimestamp kubelet']);
    const r = await kc(cp, ['run', 'join', ...joinArgs, '--output', 'json']);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /NotControlPlane/);
    assert.equal(await cp.execOk(['sh', '-c', 'sha256sum /etc/systemd/system/kubelet.service.d/*; systemctl show -p ActiveEnterTimestamp kubelet']), before);
  });

  test('malformed token: exit 2 before any network call, files unchanged', async () => {
    await refused(replaceArg('--token', 'ABC.def'), 2, [/JoinToken/, /\[a-z0-9\]\{6\}\.\[a-z0-9\]\{16\}/]);
  });

  test('wrong CA hash: exit 2, the token is never sent', async () => {
    const logsBefore = await kubectl('-n', 'kube-system', 'logs', 'deploy/kubeception-join');
    await refused(replaceArg('--ca-cert-hash', `sha256:${'0'.repeat(64)}`), 2, [/join-ca-hash-mismatch/, /token was not sent/]);
    const logsAfter = await kubectl('-n', 'kube-system', 'logs', 'deploy/kubeception-join');
    assert.equal(logsAfter.split('\n').filter((l) => l.includes(w2.ip)).length, logsBefore.split('\n').filter((l) => l.includes(w2.ip)).length);
  });

  test('deleted token: exit 2 saying it is unknown and how to get a new one', async () => {
    const t = (await kc(cp, ['token', 'create'])).stdout.trim();
    await kubectl('-n', 'kube-system', 'delete', 'secret', `bootstrap-token-${t.slice(0, 6)}`);
    await refused(replaceArg('--token', t), 2, [/join-token-unknown/, /token create/]);
  });

  test('expired token: exit 2 saying it expired', async () => {
    const t = (await kc(cp, ['token', 'create', '--ttl', '2s'])).stdout.trim();
    await sleep(3_000);
    await refused(replaceArg('--token', t), 2, [/join-token-expired/, /expired/, /token create/]);
  });

  test('a join service with a certificate from another CA: exit 2 before the token is sent', async () => {
    // An impostor on the worker's loopback serves the real CA (so the hash matches) with its own certificate.
    const caPem = await cp.readFile('/etc/kubernetes/pki/ca.crt');
    await w2.writeFile('/root/impostor/ca', caPem);
    await w2.execOk(['bash', '-c', 'cd /root/impostor && openssl req -x509 -newkey rsa:2048 -nodes -keyout k.pem -out c.pem -days 1 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 2>/dev/null']);
    await w2.execOk(['bash', '-c', 'cd /root/impostor && (setsid openssl s_server -quiet -accept 127.0.0.1:18443 -cert c.pem -key k.pem -WWW > log 2>&1 & echo $! > pid); for i in $(seq 50); do ss -ltn | grep -q 18443 && break; sleep 0.1; done']);
    try {
      await refused(replaceArg('--url', 'https://127.0.0.1:18443'), 2, [/join-untrusted-service/, /token was not sent/]);
      assert.doesNotMatch(await w2.readFile('/root/impostor/log'), new RegExp(token.slice(7)));
    } finally {
      await w2.exec(['sh', '-c', 'kill $(cat /root/impostor/pid)']);
    }
  });

  test('unreachable URL: retries with backoff until --discovery-timeout, then names the URL (exit 1)', async () => {
    const t0 = Date.now();
    const r = await refused([...replaceArg('--url', 'https://10.250.0.250:30000'), '--discovery-timeout', '8s'], 1, [/join-unreachable/, /https:\/\/10\.250\.0\.250:30000/]);
    const took = Date.now() - t0;
    assert.ok(took >= 8_000 && took < 60_000, `took ${took} ms`);
    assert.ok(r.events.some((e) => e.event === 'step-failed' && e.step === 'discovery'));
  });

  test('no token or key material in any output, JSON event or join-service log', async () => {
    const logs = await kubectl('-n', 'kube-system', 'logs', 'deploy/kubeception-join');
    const json = await kc(cp, ['run', 'bootstrap', '--output', 'json'], { timeoutMs: 600_000 });
    assert.equal(json.code, 0, json.stderr);
    const secretPart = token.slice(7);
    for (const text of [...outputs, logs, json.stdout, json.stderr]) {
      assert.ok(!text.includes(secretPart), 'token secret in output');
      assert.ok(!text.includes('PRIVATE KEY'), 'key in output');
    }
    assert.ok(!json.stdout.includes('kubeception run join'), 'the join command is not in JSON events');
  });
});
