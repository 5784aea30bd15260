/**
 * The join client against real HTTPS servers on loopback: the real join server (fed a fake
 * cluster-info source) and a capturing impostor that records every request byte it receives.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:https';
import { X509Certificate } from 'node:crypto';
import { discover, NOT_SIGNED_POLL_MS, parseBundle, spkiHash } from '../../../lib/join/client.ts';
import { serveJoin, type DiscoverySource } from '../../../lib/join/server.ts';
import { clusterInfoKubeconfig } from '../../../lib/join/cluster-info.ts';
import { signDetached } from '../../../lib/join/jws.ts';
import { entryFor, type TokenIndex } from '../../../lib/join/token-index.ts';
import { parseIdentities } from '../../../lib/join/node-identities.ts';
import { makeCa, makeLeaf, type Pair } from './fixtures.ts';

const TOKEN = 'abcdef.q1w2e3r4t5y6u7i8';
const SECRET = TOKEN.slice(7);
const hashOf = (pem: string) => spkiHash(new X509Certificate(pem));

let clusterCa: Pair;
let impostorCa: Pair;
let pin: string;
let real: { port: number; close: () => Promise<void> };
let impostor: Server;
let impostorPort: number;
/** Every byte the impostor received after TLS: request lines, headers, bodies. */
let captured = '';
let impostorAnswer: () => object = () => ({});

function source(kubeconfig: string, jws: Record<string, string>, index: TokenIndex = new Map(), identities = parseIdentities(undefined)): DiscoverySource {
  return { ready: () => true, clusterInfo: () => ({ kubeconfig, jws }), index: () => index, identities: () => identities };
}

before(async () => {
  [clusterCa, impostorCa] = await Promise.all([makeCa('kubernetes'), makeCa('impostor')]);
  pin = hashOf(clusterCa.certPem);
  const kubeconfig = clusterInfoKubeconfig('https://10.250.9.9:6443', clusterCa.certPem);
  const index: TokenIndex = new Map([['expird', entryFor(Date.now() - 1_000, 3_600_000)]]);
  const leaf = await makeLeaf(impostorCa, 'transport');
  real = await serveJoin({ listen: '127.0.0.1:0', tls: leaf, source: source(kubeconfig, { abcdef: await signDetached(kubeconfig, 'abcdef', SECRET) }, index), log: () => undefined });
  impostor = createServer({ cert: leaf.certPem, key: leaf.keyPem }, (req, res) => {
    captured += `${req.method} ${req.url}\n${JSON.stringify(req.headers)}\n`;
    req.on('data', (c) => (captured += c));
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(impostorAnswer())));
  });
  await new Promise<void>((r) => impostor.listen(0, '127.0.0.1', r));
  impostorPort = (impostor.address() as { port: number }).port;
});
after(async () => {
  await real.close();
  impostor.closeAllConnections();
  await new Promise((r) => impostor.close(r));
});

const at = (port: number) => `https://127.0.0.1:${port}`;

async function refused(p: Promise<unknown>, code: string): Promise<Error & { code: string; badInput: boolean; why: string }> {
  const err = await p.then(() => assert.fail('expected a refusal'), (e) => e);
  assert.equal(err.code, code, err.message);
  assert.equal(err.badInput, true, 'exit 2');
  return err;
}

describe('join client discovery', () => {
  test('the real service: signature and pin verify; server and CA come from the signed cluster-info', async () => {
    const d = await discover(at(real.port), TOKEN, [pin], 5_000);
    assert.equal(d.server, 'https://10.250.9.9:6443');
    assert.equal(d.caPem, clusterCa.certPem);
  });

  test('an impostor serving the real CA plus its own (bundle): exit 2, and it records no byte of the token secret', async () => {
    const bundle = clusterCa.certPem + impostorCa.certPem;
    for (const jws of ['', 'eyJhbGciOiJIUzI1NiIsImtpZCI6ImFiY2RlZiJ9..AAAA', await signDetached(clusterInfoKubeconfig(at(impostorPort), bundle), 'abcdef', 'guessedsecret000')]) {
      captured = '';
      impostorAnswer = () => ({ kubeconfig: clusterInfoKubeconfig(at(impostorPort), bundle), jws });
      await refused(discover(at(impostorPort), TOKEN, [pin], 5_000), 'join-signature-invalid');
      assert.match(captured, /token-id=abcdef/, 'the impostor saw the request');
      for (let i = 0; i + 4 <= SECRET.length; i++) assert.ok(!captured.includes(SECRET.slice(i, i + 4)), `secret bytes "${SECRET.slice(i, i + 4)}" reached the impostor`);
    }
  });

  test('a wrong token secret: the real answer does not verify, refused', async () => {
    const err = await refused(discover(at(real.port), 'abcdef.ffffffffffffffff', [pin], 5_000), 'join-signature-invalid');
    assert.match(err.why, /not signed with this token's secret/);
  });

  test('pins are any-of; a mismatch names the hash presented', async () => {
    const other = hashOf(impostorCa.certPem);
    await discover(at(real.port), TOKEN, [other, pin], 5_000);
    await discover(at(real.port), TOKEN, [pin.toUpperCase().replace('SHA256', 'sha256')], 5_000);
    const err = await refused(discover(at(real.port), TOKEN, [other, `sha256:${'0'.repeat(64)}`], 5_000), 'join-ca-hash-mismatch');
    assert.ok(err.why.includes(pin), 'names the presented hash');
  });

  test('a signed bundle with an unpinned CA in it: only the pinned CA is kept as trust; refused when none is pinned', async () => {
    const bundle = impostorCa.certPem + clusterCa.certPem;
    const kubeconfig = clusterInfoKubeconfig('https://cp.example:6443', bundle);
    impostorAnswer = () => ({ kubeconfig, jws: '' });
    const signed = await serveJoin({ listen: '127.0.0.1:0', tls: await makeLeaf(impostorCa, 't'), source: source(kubeconfig, { abcdef: await signDetached(kubeconfig, 'abcdef', SECRET) }), log: () => undefined });
    try {
      const trust = (await discover(at(signed.port), TOKEN, [pin], 5_000)).caPem;
      const kept = parseBundle(trust, 'test').map(spkiHash);
      assert.deepEqual(kept, [pin], 'the impostor CA the signed bundle carried is dropped');
      assert.ok(!trust.includes(impostorCa.certPem.trim().split('\n')[1]!), 'no line of the impostor CA is left');
      await refused(discover(at(signed.port), TOKEN, [`sha256:${'1'.repeat(64)}`], 5_000), 'join-ca-hash-mismatch');
    } finally {
      await signed.close();
    }
  });

  test('a token signed while discovery waits: asked again every NOT_SIGNED_POLL_MS, done within two polls of the signature', async () => {
    const kubeconfig = clusterInfoKubeconfig('https://10.250.9.9:6443', clusterCa.certPem);
    const jws: Record<string, string> = {};
    const index: TokenIndex = new Map([['abcdef', entryFor(Date.now() + 3_600_000)]]);
    const leaf = await makeLeaf(impostorCa, 'transport');
    const answers: number[] = [];
    const late = await serveJoin({ listen: '127.0.0.1:0', tls: leaf, source: source(kubeconfig, jws, index), log: () => void answers.push(Date.now()) });
    try {
      const signature = await signDetached(kubeconfig, 'abcdef', SECRET);
      let signedAt = 0;
      const timer = setTimeout(() => {
        jws.abcdef = signature;
        signedAt = Date.now();
      }, 600);
      const got = await discover(at(late.port), TOKEN, [pin], 10_000);
      const doneAt = Date.now();
      clearTimeout(timer);
      assert.equal(got.server, 'https://10.250.9.9:6443');
      assert.ok(signedAt > 0, 'discovery returned before the token was signed');
      assert.ok(answers.length >= 2, `asked while unsigned ${answers.length} time(s)`);
      assert.ok(doneAt - signedAt <= 2 * NOT_SIGNED_POLL_MS, `done ${doneAt - signedAt} ms after the signature (polls every ${NOT_SIGNED_POLL_MS} ms)`);
    } finally {
      await late.close();
    }
  });

  test('a token that already bought its node is refused at discovery (exit 2 at once, no retry)', async () => {
    const kubeconfig = clusterInfoKubeconfig('https://10.250.9.9:6443', clusterCa.certPem);
    const used = parseIdentities({ 'token.abcdef': JSON.stringify({ node: 'w1', at: '2026-12-01T00:00:00Z' }) });
    const srv = await serveJoin({ listen: '127.0.0.1:0', tls: await makeLeaf(impostorCa, 't'), source: source(kubeconfig, { abcdef: await signDetached(kubeconfig, 'abcdef', SECRET) }, new Map(), used), log: () => undefined });
    try {
      const t0 = Date.now();
      const err = await refused(discover(at(srv.port), TOKEN, [pin], 30_000), 'join-token-used');
      assert.match(err.why, /buys one node/);
      assert.ok(Date.now() - t0 < 3_000, 'no retries');
      await refused(discover(at(srv.port), TOKEN, [pin], 30_000, undefined, 'w2'), 'join-token-used');
      assert.equal((await discover(at(srv.port), TOKEN, [pin], 30_000, undefined, 'w1')).server, 'https://10.250.9.9:6443', 'w1, which the token bought, may re-run its join');
    } finally {
      await srv.close();
    }
  });

  test('unknown and expired ids are final answers (exit 2 at once)', async () => {
    const t0 = Date.now();
    await refused(discover(at(real.port), 'zzzzzz.0123456789abcdef', [pin], 30_000), 'join-token-unknown');
    await refused(discover(at(real.port), 'expird.0123456789abcdef', [pin], 30_000), 'join-token-expired');
    assert.ok(Date.now() - t0 < 5_000, 'no retries');
  });
});
