/**
 * Certificates on the bed, with leaves valid for 8 minutes and a 7-minute renewal window: check-expiration
 * lists every certificate kubeception issued; `run bootstrap` inside the window renews them; the
 * cluster keeps working past the original expiry (kubectl, Node Ready, a worker joins); `certs renew
 * all` while a prober inside the host hits /readyz every 100 ms — the longest gap is printed.
 * One cluster for the file.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { bootHost, type Host } from '../bed/bed.ts';
import { importKubeceptionImage } from '../bed/kubeception-image.ts';
import { kc, KC, SITE, stepsWith, writeConfig } from '../helpers/bed-cli.ts';
import { startProber } from '../helpers/prober.ts';
import { printedJoin, type PrintedJoin } from '../helpers/join-command.ts';

const ADMIN = '/etc/kubernetes/admin.conf';
/** Leaves valid for 8 minutes, renewed in their last 7: the first bootstrap (≈1.5 min quiet, ≈4 under CI load) ends inside the window. */
const VALIDITY_MIN = 8;
const WINDOW_MIN = 7;
const CONFIG = { distro: 'debian', networking: { plugin: 'none' }, certificateValidityPeriod: `${VALIDITY_MIN}m`, certificateRenewalWindow: `${WINDOW_MIN}m` };
const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));



describe('certificates: check, renew in the window, renew all', { timeout: 2_400_000 }, () => {
  let cp: Host;
  let w: Host;
  let t: number;
  let joinCommand: PrintedJoin | undefined;
  const kubectl = (...args: string[]) => cp.execOk(['kubectl', `--kubeconfig=${ADMIN}`, ...args], { timeoutMs: 30_000 });
  const check = async () => {
    const r = await cp.exec(['node', KC, 'certs', 'check-expiration', '--output', 'json'], { cwd: SITE, timeoutMs: 60_000 });
    assert.equal(r.code, 0, r.stderr);
    const doc = JSON.parse(r.stdout);
    assert.equal(doc.kind, 'CertificateExpirationInfo');
    return doc as { certificates: { name: string; expirationDate: string; residualTime: number; missing: boolean }[]; certificateAuthorities: { name: string }[] };
  };
  const expiry = (doc: Awaited<ReturnType<typeof check>>, name: string) => Date.parse(doc.certificates.find((c) => c.name === name)!.expirationDate);
  /** notAfter (epoch ms) of the certificate the kube-apiserver on this host presents on :6443. */
  const served = async () => {
    const out = await cp.execOk(['sh', '-c', 'openssl s_client -connect 127.0.0.1:6443 </dev/null 2>/dev/null | openssl x509 -noout -enddate'], { timeoutMs: 30_000 });
    return Date.parse(out.trim().replace(/^notAfter=/, ''));
  };
  const bootstrap = async () => {
    const r = await kc(cp, ['run', 'bootstrap', '--output', 'json'], { timeoutMs: 900_000 });
    assert.equal(r.code, 0, `${r.stderr}\n${r.stdout.split('\n').slice(-15).join('\n')}`);
    joinCommand = printedJoin((await kc(cp, ['token', 'create', '--print-join-command'])).stdout);
    return r;
  };

  before(async () => {
    t = Date.now();
    [cp, w] = await Promise.all([bootHost({ name: 'r9ct', kubelet: true, bootTimeoutMs: 180_000 }), bootHost({ name: 'r9cw', kubelet: true, bootTimeoutMs: 180_000 })]);
    await importKubeceptionImage(cp);
    await writeConfig(cp, CONFIG);
    await writeConfig(w, { distro: 'debian' });
    await bootstrap();
    console.log(`setup (2 hosts, bootstrap with ${VALIDITY_MIN}-minute leaves): ${secs(Date.now() - t)}`);
  });
  after(async () => {
    await Promise.all([cp, w].map((h) => h?.destroy()));
  });

  let first: Awaited<ReturnType<typeof check>>;
  test('check-expiration lists every certificate kubeception issued, with its residual time', async () => {
    t = Date.now();
    first = await check();
    const names = first.certificates.map((c) => c.name);
    for (const n of ['apiserver', 'apiserver-kubelet-client', 'front-proxy-client', 'etcd-server', 'etcd-peer', 'etcd-healthcheck-client', 'apiserver-etcd-client',
      'kubeception-join', 'admin.conf', 'controller-manager.conf', 'scheduler.conf', 'kubelet.conf', 'kubelet-serving',
      'secret/kubeception-join-tls:tls.crt'])
      assert.ok(names.includes(n), `${n} missing from ${names.join(', ')}`);
    assert.ok(!names.some((n) => /^secret\/kube-(apiserver|controller-manager|scheduler):/.test(n)), 'no control-plane certificate or key is kept in a Secret');
    assert.deepEqual(first.certificateAuthorities.map((c) => c.name), ['ca', 'front-proxy-ca', 'etcd-ca']);
    assert.ok(first.certificates.every((c) => !c.missing));
    const left = first.certificates.find((c) => c.name === 'apiserver')!.residualTime / 1e9;
    assert.ok(left > 0 && left <= VALIDITY_MIN * 60, `apiserver residual ${left} s, want within the ${VALIDITY_MIN}-minute validity`);
    const text = await cp.execOk(['node', KC, 'certs', 'check-expiration'], { cwd: SITE });
    console.log(text);
    assert.match(text, /^CERTIFICATE\s+EXPIRES\s+RESIDUAL TIME\s+CERTIFICATE AUTHORITY\s+EXTERNALLY MANAGED\n/);
    assert.ok(await cp.exists('/var/lib/kubelet/pki/kubelet-client-current.pem'));
    assert.match(await cp.readFile('/var/lib/kubelet/kubeconfig'), /client-certificate: \/var\/lib\/kubelet\/pki\/kubelet-client-current.pem/);
    assert.doesNotMatch(await cp.readFile('/var/lib/kubelet/kubeconfig'), /client-certificate-data/);
    console.log(`test time: ${secs(Date.now() - t)}`);
  });

  let original = 0;
  let inWindow: Awaited<ReturnType<typeof bootstrap>>;
  test('run bootstrap inside the renewal window renews them and says so', async () => {
    t = Date.now();
    original = expiry(first, 'apiserver');
    while (original - Date.now() > WINDOW_MIN * 60_000 - 10_000) await sleep(2_000);
    inWindow = await bootstrap();
    const certsLog = inWindow.events.filter((e) => e.event === 'log' && e.step === 'certs').map((e) => e.message).join('\n');
    assert.match(certsLog, /apiserver: reissued \(expires in 0 days .* renewal window\)/);
    assert.ok(stepsWith(inWindow.events, 'step-done').includes('certs'));
    const renewed = await check();
    for (const n of ['apiserver', 'admin.conf', 'etcd-server'])
      assert.ok(expiry(renewed, n) > expiry(first, n), `${n} renewed`);
    // The running kube-apiserver serves the renewed file (its pod reads the host's PKI; the files' digest rolled it).
    assert.equal(await served(), expiry(renewed, 'apiserver'), 'the apiserver on :6443 presents the renewed certificate');
    console.log(`renewal run: ${secs(Date.now() - t)}`);
  });

  // Right after the in-window renewal, while every certificate in use has most of its 8 minutes left:
  // a surge roll needs the old kube-apiserver's serving certificate valid until the new one is ready
  // (connections reach both instances). Run at the last minute, the old instance's expired
  // certificate fails half the controller-manager's requests and the DaemonSet roll stalls.
  test('certs renew all with a 100 ms /readyz prober: every certificate renewed, longest gap printed', async () => {
    t = Date.now();
    const before = await check();
    const prober = await startProber(cp, `https://${cp.ip}:6443/readyz`);
    await sleep(2_000);
    const r = await cp.exec(['node', KC, 'certs', 'renew', 'all'], { cwd: SITE, timeoutMs: 900_000 });
    await sleep(3_000);
    const gap = await prober.stop();
    assert.equal(r.code, 0, `${r.stderr}\n${r.stdout}`);
    console.log(`certs renew all: ${secs(Date.now() - t)}; /readyz longest gap ${gap.gapMs} ms (${gap.failed} of ${gap.total} probes failed)`);
    const after = await check();
    for (const c of before.certificates.filter((x) => !['kubelet-serving', 'kubelet.conf'].includes(x.name)))
      assert.ok(expiry(after, c.name) > expiry(before, c.name), `${c.name} renewed`);
    assert.equal(await served(), expiry(after, 'apiserver'), 'the apiserver on :6443 presents the renewed certificate');
    assert.ok(gap.gapMs < 10_000, `the API was down ${gap.gapMs} ms`);
    await kubectl('get', 'nodes');
  });

  test('past the original expiry the cluster works: kubectl, the Node Ready, a worker joins', async () => {
    t = Date.now();
    console.log(`waiting past the original expiry ${new Date(original).toISOString()}`);
    while (Date.now() < original + 10_000) await sleep(2_000);
    await kubectl('get', 'nodes');
    await kubectl('wait', '--for=condition=Ready', `node/${cp.name}`, '--timeout=60s');
    assert.ok(joinCommand, 'no join command printed');
    const j = await kc(w, ['run', 'join', ...joinCommand.args], { timeoutMs: 300_000, env: joinCommand.env });
    assert.equal(j.code, 0, `${j.stderr}\n${j.stdout.slice(-2000)}`);
    // join exits once the kubelet holds its client certificate (as kubeadm join does); the Node object follows.
    for (let i = 0; i < 60 && (await cp.exec(['kubectl', `--kubeconfig=${ADMIN}`, 'get', 'node/r9cw'])).code !== 0; i++) await sleep(2_000);
    await kubectl('wait', '--for=condition=Ready', 'node/r9cw', '--timeout=120s');
    console.log(`test time: ${secs(Date.now() - t)}`);
  });
});
