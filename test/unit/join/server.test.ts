/**
 * The join server's answers and its limits, over real TLS on loopback: verdicts from the cached
 * source, slow and oversized requests cut off, 429 + Retry-After under a burst.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:tls';
import { request } from 'node:https';
import { answer, serveJoin, type DiscoverySource } from '../../../lib/join/server.ts';
import { entryFor, type TokenIndex } from '../../../lib/join/token-index.ts';
import { parseIdentities } from '../../../lib/join/node-identities.ts';
import { makeCa, makeLeaf } from './fixtures.ts';

const now = Date.now();
const index: TokenIndex = new Map([
  ['expird', entryFor(now - 1_000, 3_600_000)],
  ['forgot', entryFor(now - 7_200_000, 3_600_000)],
  ['unsign', entryFor(now + 3_600_000)],
  ['kubecp', entryFor(now + 3_600_000)],
]);
// usedup bought node w9 (signed, still valid); expird bought one too but answers as expired.
const identities = parseIdentities({ 'token.usedup': JSON.stringify({ node: 'w9', at: '2026-12-01T00:00:00Z' }), 'token.expird': JSON.stringify({ node: 'w8', at: '2026-12-01T00:00:00Z' }) });
const source: DiscoverySource = { ready: () => true, clusterInfo: () => ({ kubeconfig: 'apiVersion: v1\n', jws: { kubecp: 'a..b', kubead: 'c..d', usedup: 'e..f' } }), index: () => index, identities: () => identities };

let srv: { port: number; close: () => Promise<void> };
let limited: { port: number; close: () => Promise<void> };

function get(port: number, path: string, opts: { method?: string; body?: string; headers?: Record<string, string> } = {}): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method: opts.method ?? 'GET', rejectUnauthorized: false, agent: false, headers: opts.headers }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

before(async () => {
  const tls = await makeLeaf(await makeCa('join-transport'), 'kubeception-join');
  const limits = { headersTimeoutMs: 500, requestTimeoutMs: 1_000, handshakeTimeoutMs: 500, keepAliveTimeoutMs: 500 };
  srv = await serveJoin({ listen: '127.0.0.1:0', tls, source, limits: { ...limits, ratePoints: 10_000 }, log: () => undefined });
  limited = await serveJoin({ listen: '127.0.0.1:0', tls, source, limits: { ...limits, ratePoints: 5, rateWindowS: 600 }, log: () => undefined });
});
after(async () => {
  await srv.close();
  await limited.close();
});

describe('join server', () => {
  test('/readyz is 503 not-ready until the cache has listed and holds cluster-info; /healthz is 200 throughout', () => {
    const at = (ready: boolean, info: boolean) => {
      const src: DiscoverySource = { ...source, ready: () => ready, clusterInfo: () => (info ? source.clusterInfo() : undefined) };
      return ['/readyz', '/healthz', '/cluster-info?token-id=kubecp'].map((url) => `${answer({ method: 'GET', url }, src, now).status}`).join(' ');
    };
    assert.equal(at(false, false), '503 200 503');
    assert.equal(at(true, false), '503 200 503');
    assert.equal(at(true, true), '200 200 200');
  });

  test('answers from the cache: signed (also a token it did not index), used, expired, forgotten, unknown, not signed yet, malformed', async () => {
    const code = async (id: string) => {
      const r = await get(srv.port, `/cluster-info?token-id=${id}`);
      return `${r.status} ${JSON.parse(r.body).code ?? JSON.parse(r.body).jws}`;
    };
    assert.equal(await code('kubecp'), '200 a..b');
    assert.equal(await code('kubead'), '200 c..d');
    assert.equal(await code('usedup'), '409 token-used', 'a token that bought its node gets no cluster-info (its JWS is not sent)');
    assert.equal(await code('usedup&node-name=w8'), '409 token-used', 'nor when another node asks');
    assert.equal(await code('usedup&node-name=w9'), '200 e..f', 'the node it bought may run its join again (killed after the approval)');
    assert.equal(await code('expird'), '410 token-expired');
    assert.equal(await code('forgot'), '404 token-unknown');
    assert.equal(await code('zzzzzz'), '404 token-unknown');
    assert.equal(await code('unsign'), '503 not-signed-yet');
    assert.equal(await code('ABC'), '400 token-id-malformed');
    assert.equal((await get(srv.port, '/join', { method: 'GET' })).status, 404);
    assert.equal((await get(srv.port, '/cluster-info?token-id=kubecp', { method: 'DELETE' })).status, 405);
  });

  test('a request with a body is refused (413) and the connection closed; oversized headers are refused', async () => {
    const r = await get(srv.port, '/cluster-info?token-id=kubecp', { method: 'POST', body: 'x'.repeat(1 << 20) }).catch((e) => ({ status: 0, body: String(e), headers: {} }));
    assert.ok(r.status === 413 || r.status === 0, `status ${r.status}`);
    const big = await get(srv.port, '/healthz', { headers: { 'x-big': 'y'.repeat(20_000) } }).catch(() => ({ status: 431 }));
    assert.equal(big.status, 431);
  });

  test('a slow client (headers never finished) is cut off within the headers timeout', async () => {
    const t0 = Date.now();
    const closedAfter = await new Promise<number>((resolve) => {
      const s = connect({ host: '127.0.0.1', port: srv.port, rejectUnauthorized: false }, () => s.write('GET /healthz HTTP/1.1\r\nHost: x\r\n'));
      s.on('error', () => undefined);
      s.on('data', () => undefined);
      s.on('close', () => resolve(Date.now() - t0));
      setTimeout(() => resolve(-1), 5_000);
    });
    assert.ok(closedAfter > 0 && closedAfter < 3_000, `closed after ${closedAfter} ms (-1: still open after 5 s)`);
  });

  test('a client that never finishes the TLS handshake is cut off', async () => {
    const { Socket } = await import('node:net');
    const t0 = Date.now();
    const closedAfter = await new Promise<number>((resolve) => {
      const s = new Socket();
      s.connect(srv.port, '127.0.0.1');
      s.on('error', () => undefined);
      s.on('data', () => undefined);
      s.on('close', () => resolve(Date.now() - t0));
      setTimeout(() => resolve(-1), 5_000);
    });
    assert.ok(closedAfter > 0 && closedAfter < 3_000, `closed after ${closedAfter} ms`);
  });

  test('429 with Retry-After under a burst from one client', async () => {
    const rs = await Promise.all(Array.from({ length: 20 }, () => get(limited.port, '/cluster-info?token-id=kubecp')));
    const ok = rs.filter((r) => r.status === 200).length;
    const limitedRs = rs.filter((r) => r.status === 429);
    assert.equal(ok, 5);
    assert.equal(limitedRs.length, 15);
    assert.ok(Number(limitedRs[0]!.headers['retry-after']) >= 1);
  });
});
