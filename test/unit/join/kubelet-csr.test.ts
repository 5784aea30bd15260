/**
 * `run join`'s kubelet client certificate request against HTTPS servers on loopback that the test
 * runs and that record every request: one that plays the apiserver's CSR endpoint (signing with
 * openssl as the controller-manager would, denying, answering 401, or signing with another CA), and
 * an impostor whose certificate is not from the verified CA (it must never see the token). The real
 * apiserver, approver and kubelet are exercised by the e2e join suite.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requestKubeletClientCert } from '../../../lib/join/kubelet-csr.ts';
import { certMatchesKey } from '../../../lib/pki/x509.ts';
import { certSignedBy, loadPrivateKey } from '../../../lib/pki/keys.ts';
import { makeCa, makeLeaf, type Pair } from './fixtures.ts';

const TOKEN = 'abcdef.q1w2e3r4t5y6u7i8';
type Mode = 'sign' | 'deny' | 'reject-token' | 'other-ca' | 'slow' | 'other-key' | 'other-cn' | 'short' | 'not-json' | 'gone' | 'exists' | 'flaky';

let clusterCa: Pair;
let otherCa: Pair;
let dir: string;
let mode: Mode = 'sign';
/** Every request the CSR endpoint got: method, path, authorization header, body. */
let seen: { method: string; url: string; auth?: string; body: string }[] = [];
/** Requests that reached the impostor's HTTP layer (none may: its TLS must fail first). */
let impostorSeen = 0;
const csrs = new Map<string, { body: { spec: { request: string; signerName: string; usages: string[] } }; gets: number }>();
let api: Server;
let impostor: Server;
const portOf = (s: Server) => (s.address() as { port: number }).port;

/** Signs the CSR (its key and subject, or `subj`) with `ca` for `days`, client auth (openssl, as the controller-manager's signer would). */
function sign(requestB64: string, ca: Pair, opts: { days?: string; subj?: string } = {}): string {
  const csr = join(dir, 'r.csr');
  writeFileSync(csr, Buffer.from(requestB64, 'base64'));
  writeFileSync(join(dir, 'ca.crt'), ca.certPem);
  writeFileSync(join(dir, 'ca.key'), ca.keyPem);
  writeFileSync(join(dir, 'ext'), 'extendedKeyUsage=clientAuth\nbasicConstraints=critical,CA:FALSE\n');
  execFileSync('openssl', ['x509', '-req', '-in', csr, '-CA', join(dir, 'ca.crt'), '-CAkey', join(dir, 'ca.key'), '-set_serial', '7', '-days', opts.days ?? '1', '-extfile', join(dir, 'ext'), ...(opts.subj ? ['-subj', opts.subj] : []), '-out', join(dir, 'r.crt')], { stdio: 'ignore' });
  return readFileSync(join(dir, 'r.crt'), 'utf8');
}

/** A request of another key (same subject), as base64 PEM. */
function otherRequest(): string {
  return execFileSync('openssl', ['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', join(dir, 'other.key'), '-subj', '/O=system:nodes/CN=system:node:w1'], { stdio: ['ignore', 'pipe', 'ignore'] }).toString('base64');
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'kubelet-csr-'));
  [clusterCa, otherCa] = await Promise.all([makeCa('kubernetes'), makeCa('impostor')]);
  const [serving, impostorServing] = await Promise.all([makeLeaf(clusterCa, 'kube-apiserver'), makeLeaf(otherCa, 'kube-apiserver')]);
  api = createServer({ cert: serving.certPem, key: serving.keyPem }, (req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, ...(req.headers.authorization && { auth: req.headers.authorization }), body });
      const json = (status: number, o: object) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(o));
      if (mode === 'reject-token') return json(401, { kind: 'Status', code: 401 });
      if (req.method === 'POST') {
        const o = JSON.parse(body);
        if (mode === 'flaky' && seen.filter((x) => x.method === 'POST').length === 1) return json(503, { kind: 'Status', code: 503 });
        csrs.set(o.metadata.name, { body: o, gets: 0 });
        return json(mode === 'exists' ? 409 : 201, o);
      }
      if (mode === 'gone') return json(404, { kind: 'Status', code: 404 });
      if (mode === 'not-json') return res.writeHead(200).end('<html>a proxy</html>');
      const name = req.url!.split('/').pop()!;
      const c = csrs.get(name);
      if (!c) return json(404, { kind: 'Status', code: 404 });
      c.gets++;
      if (mode === 'slow' || c.gets < 3) return json(200, { ...c.body, status: {} }); // pending for two polls
      if (mode === 'deny') return json(200, { ...c.body, status: { conditions: [{ type: 'Denied', reason: 'KubeceptionNodeNameTaken', message: 'kubeception: a Node named w1 exists and is Ready' }] } });
      const request = mode === 'other-key' ? otherRequest() : c.body.spec.request;
      const cert = sign(request, mode === 'other-ca' ? otherCa : clusterCa, { ...(mode === 'short' && { days: '0' }), ...(mode === 'other-cn' && { subj: '/O=system:nodes/CN=system:node:w9' }) });
      return json(200, { ...c.body, status: { conditions: [{ type: 'Approved' }], certificate: Buffer.from(cert).toString('base64') } });
    });
  });
  impostor = createServer({ cert: impostorServing.certPem, key: impostorServing.keyPem }, (_req, res) => {
    impostorSeen++;
    res.writeHead(201).end('{}');
  });
  await Promise.all([new Promise<void>((r) => api.listen(0, '127.0.0.1', r)), new Promise<void>((r) => impostor.listen(0, '127.0.0.1', r))]);
});
after(async () => {
  for (const s of [api, impostor]) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
  rmSync(dir, { recursive: true, force: true });
});

const request = (port: number, extra: { timeoutMs?: number } = {}) =>
  requestKubeletClientCert({ server: `https://127.0.0.1:${port}`, caPem: clusterCa.certPem, token: TOKEN, nodeName: 'w1', ...extra });

async function refused(p: Promise<unknown>, code: string, badInput: boolean) {
  const err = await p.then(() => assert.fail('expected an error'), (e) => e);
  assert.equal(err.code, code, err.message);
  assert.equal(err.badInput === true, badInput, `badInput ${badInput}`);
  assert.ok(!JSON.stringify({ message: err.message, why: err.why, what: err.what, fix: err.fix }).includes(TOKEN.slice(7)), 'the token secret is not in the error');
  return err;
}

describe('kubelet client certificate by CSR', () => {
  test('posts the kubelet\'s request with the token, waits for approval, returns a certificate for its own key that chains to the verified CA', async () => {
    mode = 'sign';
    seen = [];
    const r = await request(portOf(api));
    assert.ok(certSignedBy(r.certPem, clusterCa.certPem), 'chains to the verified CA');
    assert.ok(certMatchesKey(r.certPem, loadPrivateKey(r.keyPem, 'k')), 'for the key made here');
    assert.match(r.keyPem, /^-----BEGIN EC PRIVATE KEY-----/);
    const post = seen.filter((s) => s.method === 'POST');
    assert.equal(post.length, 1);
    assert.equal(post[0]!.url, '/apis/certificates.k8s.io/v1/certificatesigningrequests');
    const body = JSON.parse(post[0]!.body);
    assert.equal(body.metadata.name, r.csrName);
    assert.equal(body.spec.signerName, 'kubernetes.io/kube-apiserver-client-kubelet');
    assert.deepEqual(body.spec.usages, ['digital signature', 'client auth']);
    const csrText = execFileSync('openssl', ['req', '-noout', '-verify', '-subject'], { input: Buffer.from(body.spec.request, 'base64'), stdio: ['pipe', 'pipe', 'pipe'] }).toString();
    assert.match(csrText, /O ?= ?system:nodes, CN ?= ?system:node:w1/);
    assert.ok(!post[0]!.body.includes('PRIVATE KEY'), 'no key in the request');
    assert.ok(seen.every((s) => s.auth === `Bearer ${TOKEN}`), 'every request carries the bootstrap token');
    assert.equal(seen.filter((s) => s.method === 'GET').length, 3, 'polled until signed');
  });

  test('a denied CSR stops the join (exit 2) quoting the approver\'s reason', async () => {
    mode = 'deny';
    const err = await refused(request(portOf(api)), 'join-csr-denied', true);
    assert.match(err.why, /Denied \(KubeceptionNodeNameTaken\): kubeception: a Node named w1 exists and is Ready/);
  });

  test('a token the apiserver refuses: join-token-rejected (exit 2)', async () => {
    mode = 'reject-token';
    await refused(request(portOf(api)), 'join-token-rejected', true);
  });

  test('a certificate from another CA is refused', async () => {
    mode = 'other-ca';
    const err = await refused(request(portOf(api)), 'join-csr-bad-certificate', false);
    assert.match(err.why, /does not chain to the verified cluster CA/);
  });

  test('a certificate from the cluster CA for another key is refused', async () => {
    mode = 'other-key';
    const err = await refused(request(portOf(api)), 'join-csr-bad-certificate', false);
    assert.match(err.why, /not for the key this host generated/);
  });

  test('a certificate for another node name is refused', async () => {
    mode = 'other-cn';
    const err = await refused(request(portOf(api)), 'join-csr-bad-certificate', false);
    assert.match(err.why, /CN=system:node:w9, not O=system:nodes, CN=system:node:w1/);
  });

  test('a certificate that expires within the hour is refused (the kubelet could not start with it)', async () => {
    mode = 'short';
    const err = await refused(request(portOf(api)), 'join-csr-bad-certificate', false);
    assert.match(err.why, /in less than an hour/);
  });

  test('an answer that is not a CertificateSigningRequest, or a 404 for the one just created, fails at once', async () => {
    for (const m of ['not-json', 'gone'] as const) {
      mode = m;
      const t0 = Date.now();
      const err = await refused(request(portOf(api)), 'join-csr-request', false);
      assert.ok(Date.now() - t0 < 3_000, `${m}: failed at once`);
      assert.match(err.why, m === 'gone' ? /HTTP 404/ : /not JSON/);
    }
  });

  test("a POST answered 503 is retried; a 409 (this key's CSR exists) is waited on like a 201", async () => {
    for (const m of ['flaky', 'exists'] as const) {
      mode = m;
      seen = [];
      const r = await request(portOf(api));
      assert.ok(certSignedBy(r.certPem, clusterCa.certPem), m);
      assert.equal(seen.filter((x) => x.method === 'POST').length, m === 'flaky' ? 2 : 1, m);
    }
  });

  test('not signed in time: join-tls-bootstrap', async () => {
    mode = 'slow';
    await refused(request(portOf(api), { timeoutMs: 500 }), 'join-tls-bootstrap', false);
  });

  test('a server without a certificate from the verified CA never gets a request (the token stays here)', async () => {
    impostorSeen = 0;
    await refused(request(portOf(impostor)), 'join-csr-request', false);
    assert.equal(impostorSeen, 0);
  });
});
