/**
 * Cluster.watch (the informer behind the join service and the CSR approver) against an HTTP server
 * that speaks the apiserver's list/watch protocol and misbehaves the way a real one does during a
 * hand-off: it accepts a request and never answers, or cuts a watch off. The server records every
 * request, so "listed again" is counted where it happens.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Cluster } from '../../../lib/k8s/client.ts';

type CM = { apiVersion: 'v1'; kind: 'ConfigMap'; metadata: { name: string; namespace: string; resourceVersion: string }; data: Record<string, string> };

class FakeApiserver {
  server!: Server;
  requests: string[] = [];
  /** List requests to leave unanswered (the connection stays open). */
  hangLists = 0;
  cm: CM = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cluster-info', namespace: 'kube-public', resourceVersion: '1' }, data: { v: 'one' } };
  watches: ServerResponse[] = [];
  hung: ServerResponse[] = [];

  async start(): Promise<number> {
    this.server = createServer((req, res) => this.handle(req, res));
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    return (this.server.address() as AddressInfo).port;
  }

  handle(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? '/', 'http://x');
    this.requests.push(`${url.pathname}${url.searchParams.get('watch') ? '?watch' : ''}`);
    const json = (o: object) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(o));
    if (url.pathname === '/api/v1') return json({ kind: 'APIResourceList', groupVersion: 'v1', resources: [{ name: 'configmaps', namespaced: true, kind: 'ConfigMap', verbs: ['list', 'watch'] }] });
    if (url.pathname !== '/api/v1/namespaces/kube-public/configmaps') return res.writeHead(404).end();
    if (url.searchParams.get('watch') === 'true') {
      res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
      res.flushHeaders();
      this.watches.push(res);
      return;
    }
    if (this.hangLists > 0) {
      this.hangLists--;
      this.hung.push(res);
      return;
    }
    json({ kind: 'ConfigMapList', apiVersion: 'v1', metadata: { resourceVersion: this.cm.metadata.resourceVersion }, items: [this.cm] });
  }

  modify(v: string) {
    this.cm = { ...this.cm, metadata: { ...this.cm.metadata, resourceVersion: String(Number(this.cm.metadata.resourceVersion) + 1) }, data: { v } };
  }

  lists(): number {
    return this.requests.filter((r) => r === '/api/v1/namespaces/kube-public/configmaps').length;
  }

  async stop() {
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }
}

const kubeconfig = (port: number) => `apiVersion: v1
kind: Config
clusters: [{ name: c, cluster: { server: "http://127.0.0.1:${port}", insecure-skip-tls-verify: true } }]
users: [{ name: u, user: { token: not-a-secret } }]
contexts: [{ name: x, context: { cluster: c, user: u } }]
current-context: x
`;

const until = async (what: string, cond: () => boolean, ms = 5_000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};

let fake: FakeApiserver;
let cluster: Cluster;
before(async () => {
  fake = new FakeApiserver();
  cluster = new Cluster(kubeconfig(await fake.start()), 'test');
});
after(() => fake.stop());

const watchCm = (log: string[], opts: { startTimeoutMs?: number; relistMs?: number; retryMs?: number } = {}) =>
  cluster.watch<CM>({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'kube-public', path: '/api/v1/namespaces/kube-public/configmaps', fieldSelector: 'metadata.name=cluster-info' }, () => undefined, { log: (l) => log.push(l), ...opts });

test('a list the apiserver never answers: a new generation lists again after startTimeoutMs and syncs', async () => {
  fake.requests = [];
  fake.hangLists = 1;
  const log: string[] = [];
  const w = watchCm(log, { startTimeoutMs: 300 });
  try {
    await until('a hung list', () => fake.hung.length === 1);
    assert.equal(w.synced(), false);
    await until('synced', () => w.synced());
    assert.equal(w.get('cluster-info')?.data.v, 'one');
    assert.equal(fake.lists(), 2);
    assert.match(log.join('\n'), /no list and watch within 0\.3 s; listing again/);
  } finally {
    w.stop();
  }
});

test('a watch event updates the cache; a watch cut off is listed again after retryMs, with what changed meanwhile', async () => {
  fake.requests = [];
  fake.watches = [];
  const changes: string[] = [];
  const log: string[] = [];
  const w = cluster.watch<CM>({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'kube-public', path: '/api/v1/namespaces/kube-public/configmaps', fieldSelector: 'metadata.name=cluster-info' }, () => changes.push(w.get('cluster-info')?.data.v ?? '-'), { log: (l) => log.push(l), retryMs: 200 });
  try {
    await until('watch open', () => w.synced() && fake.watches.length === 1);
    fake.modify('two');
    fake.watches[0]!.write(JSON.stringify({ type: 'MODIFIED', object: fake.cm }) + '\n');
    await until('event applied', () => w.get('cluster-info')?.data.v === 'two');
    // Changed while no watch is open, then the watch breaks (the connection is destroyed).
    fake.modify('three');
    fake.watches[0]!.socket?.destroy();
    await until('relisted', () => w.get('cluster-info')?.data.v === 'three');
    assert.ok(fake.lists() >= 2, `lists: ${fake.lists()}`);
    assert.deepEqual(changes.slice(0, 2), ['one', 'two']);
    assert.equal(changes.at(-1), 'three');
  } finally {
    w.stop();
  }
});

test('relistMs: a healthy watch is replaced by a fresh list; stop() ends all requests', async () => {
  fake.requests = [];
  // retryMs short too: stop() aborts the open watch, which the library reports as an error, and
  // an error schedules a new generation after retryMs unless the watcher knows it was stopped.
  const w = watchCm([], { relistMs: 250, retryMs: 150 });
  await until('three lists', () => fake.lists() >= 3, 5_000);
  assert.ok(w.synced());
  w.stop();
  // A request the client had already sent when stop() was called may still arrive; after 100 ms
  // none can be in flight, and a relist or retry timer left running would fire within 300 ms.
  await new Promise((r) => setTimeout(r, 100));
  const n = fake.requests.length;
  await new Promise((r) => setTimeout(r, 800));
  assert.equal(fake.requests.length, n, `requests after stop: ${fake.requests.slice(n).join(', ')}`);
});

test('a list answered after stop() is not followed by a watch request', async () => {
  fake.requests = [];
  fake.hung = [];
  fake.hangLists = 1;
  const w = watchCm([], { startTimeoutMs: 5_000 });
  await until('list sent', () => fake.hung.length === 1);
  w.stop();
  const list = { kind: 'ConfigMapList', apiVersion: 'v1', metadata: { resourceVersion: fake.cm.metadata.resourceVersion }, items: [fake.cm] };
  fake.hung[0]!.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(list));
  await new Promise((r) => setTimeout(r, 500));
  assert.deepEqual(fake.requests.filter((r) => r.endsWith('?watch')), []);
  assert.equal(w.synced(), false);
});
