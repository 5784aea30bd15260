/**
 * The join server's answers and its limits, over real TLS on loopback: verdicts from the cached
 * source, slow and oversized requests cut off (413/431 with the connection closed), the per-source
 * connection cap (a second loopback address, 127.0.0.2, as the other client), the total cap, 429 +
 * Retry-After under a burst.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect as netConnect } from 'node:net';
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

/**
 * Writes `request` on a fresh TLS connection; the bytes answered, and when the server closed the
 * connection (ms after the first answer byte; -1 if still open 2.5 s later).
 */
function raw(port: number, request: string, localAddress?: string): Promise<{ text: string; closedAfterMs: number }> {
  return new Promise((resolve) => {
    let text = '';
    let first = 0;
    const tcp = netConnect({ host: '127.0.0.1', port, localAddress });
    const s = connect({ socket: tcp, rejectUnauthorized: false }, () => s.write(request));
    tcp.on('error', () => undefined);
    const timer = setTimeout(() => {
      s.destroy();
      resolve({ text, closedAfterMs: -1 });
    }, 2_500);
    s.on('data', (c) => {
      first ||= Date.now();
      text += c;
    });
    s.on('error', () => undefined);
    s.on('close', () => {
      clearTimeout(timer);
      resolve({ text, closedAfterMs: first ? Date.now() - first : 0 });
    });
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

  test('a request with a body is refused (413) and the connection closed; oversized headers are refused (431) and the connection closed', async () => {
    // Keep-alive far beyond the test's wait: a close within it is the refusal's, not the idle timer's.
    const keep = await serveJoin({ listen: '127.0.0.1:0', tls: await makeLeaf(await makeCa('join-transport'), 'kubeception-join'), source, limits: { keepAliveTimeoutMs: 30_000, ratePoints: 10_000 }, log: () => undefined });
    try {
      const body = await raw(keep.port, 'POST /cluster-info?token-id=kubecp HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello');
      assert.match(body.text, /^HTTP\/1\.1 413 /);
      assert.match(body.text, /\r\nconnection: close\r\n/i);
      assert.match(body.text, /"code":"body-not-allowed"/);
      assert.ok(body.closedAfterMs >= 0 && body.closedAfterMs < 2_000, `413: closed after ${body.closedAfterMs} ms (-1: still open)`);
      const big = await raw(keep.port, `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'y'.repeat(20_000)}\r\n\r\n`);
      assert.match(big.text, /^HTTP\/1\.1 431 /);
      assert.ok(big.closedAfterMs >= 0 && big.closedAfterMs < 2_000, `431: closed after ${big.closedAfterMs} ms (-1: still open)`);
      const ok = await raw(keep.port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      assert.match(ok.text, /^HTTP\/1\.1 200 /);
      assert.equal(ok.closedAfterMs, -1, 'a good request keeps its connection open (so the closes above are the refusals\' own)');
    } finally {
      await keep.close();
    }
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

  test('one source holding many slow connections cannot exhaust the cap for another source (127.0.0.2)', async () => {
    const { Socket } = await import('node:net');
    const tls = await makeLeaf(await makeCa('join-transport'), 'kubeception-join');
    const lines: string[] = [];
    const capped = await serveJoin({ listen: '127.0.0.1:0', tls, source, limits: { maxConnections: 24, maxConnectionsPerClient: 4, handshakeTimeoutMs: 20_000, headersTimeoutMs: 20_000, requestTimeoutMs: 30_000 }, log: (l) => lines.push(l) });
    const held: import('node:net').Socket[] = [];
    try {
      // 127.0.0.1 opens 30 TCP connections and never starts TLS (slowloris).
      const closed = await Promise.all(Array.from({ length: 30 }, () => new Promise<boolean>((resolve) => {
        const s = new Socket();
        held.push(s);
        s.on('error', () => undefined);
        s.once('close', () => resolve(true));
        s.connect(capped.port, '127.0.0.1', () => setTimeout(() => resolve(false), 500));
      })));
      assert.equal(closed.filter((c) => !c).length, 4, 'four stay open: maxConnectionsPerClient');
      assert.equal(closed.filter(Boolean).length, 26, 'the rest are closed at once');
      assert.ok(lines.some((l) => /connection from 127\.0\.0\.1 closed: 4 connections from it are open/.test(l)), lines.join('\n'));
      // Another source is served meanwhile.
      const other = await raw(capped.port, 'GET /cluster-info?token-id=kubecp HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', '127.0.0.2');
      assert.match(other.text, /^HTTP\/1\.1 200 /);
      // Once the first source lets go, it is served again.
      for (const s of held) s.destroy();
      await new Promise((r) => setTimeout(r, 100));
      assert.match((await raw(capped.port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')).text, /^HTTP\/1\.1 200 /);
    } finally {
      for (const s of held) s.destroy();
      await capped.close();
    }
  });

  test('at maxConnections a new connection is closed at once, before TLS; a freed slot is served again', async () => {
    const { Socket } = await import('node:net');
    const tls = await makeLeaf(await makeCa('join-transport'), 'kubeception-join');
    const capped = await serveJoin({ listen: '127.0.0.1:0', tls, source, limits: { maxConnections: 3, maxConnectionsPerClient: 3, handshakeTimeoutMs: 20_000 }, log: () => undefined });
    const held: import('node:net').Socket[] = [];
    try {
      for (let i = 0; i < 3; i++) {
        const s = new Socket();
        held.push(s);
        s.on('error', () => undefined);
        await new Promise<void>((r) => s.connect({ port: capped.port, host: '127.0.0.1', localAddress: '127.0.0.2' }, () => r()));
      }
      await new Promise((r) => setTimeout(r, 100));
      const t0 = Date.now();
      const refused = await raw(capped.port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      assert.equal(refused.text, '', 'no TLS, no answer');
      assert.ok(refused.closedAfterMs === 0 && Date.now() - t0 < 1_000, `closed at once (${Date.now() - t0} ms)`);
      held.pop()!.destroy();
      await new Promise((r) => setTimeout(r, 100));
      assert.match((await raw(capped.port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')).text, /^HTTP\/1\.1 200 /);
    } finally {
      for (const s of held) s.destroy();
      await capped.close();
    }
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
