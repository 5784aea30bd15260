/**
 * Cluster's connection pool, counted where it happens: an HTTPS server (the test's own, on
 * loopback, with a CA made by kubeception's PKI code) records every TLS handshake and every request.
 * client-node alone opens a new connection (a new TLS context and handshake) for every request; a
 * Cluster reuses one keep-alive pool, shared by every Cluster with the same kubeconfig and server.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { Cluster } from '../../../lib/k8s/client.ts';
import { createCaCert, createSignedCert } from '../../../lib/pki/x509.ts';

let server: Server;
let port: number;
let caPem: string;
const handshakes: string[] = [];
const requests: string[] = [];

before(async () => {
  const caKey = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey;
  caPem = await createCaCert({ commonName: 'test-ca', validityDays: 1 }, caKey, 'ca');
  const serverKey = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey;
  const serverPem = await createSignedCert({ commonName: 'kube-apiserver', ipAddresses: ['127.0.0.1'], usages: ['serverAuth'], validityDays: 1 }, serverKey, { certPem: caPem, key: caKey }, 'apiserver');
  server = createServer({ cert: serverPem, key: serverKey.export({ type: 'pkcs8', format: 'pem' }) }, (req, res) => {
    requests.push(`${req.method} ${req.url}`);
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ major: '1', minor: '34', gitVersion: 'v1.34.4' }));
  });
  server.on('secureConnection', (s) => handshakes.push(`${s.remoteAddress}:${s.remotePort}`));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});

after(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

const kubeconfig = (user: string) => `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://127.0.0.1:${port}
    certificate-authority-data: ${Buffer.from(caPem).toString('base64')}
users:
- name: ${user}
  user:
    token: not-a-real-token-${user}
contexts:
- name: c
  context: { cluster: c, user: ${user} }
current-context: c
`;

test('requests of one Cluster, and of a second Cluster with the same kubeconfig, go over one TLS connection', async () => {
  handshakes.length = 0;
  requests.length = 0;
  const a = new Cluster(kubeconfig('admin'), 'admin.conf');
  for (let i = 0; i < 3; i++) assert.equal(await a.version(), 'v1.34.4');
  const b = new Cluster(kubeconfig('admin'), 'admin.conf (again)');
  assert.equal(await b.version(), 'v1.34.4');
  assert.equal(requests.length, 4, requests.join(', '));
  assert.deepEqual(handshakes.length, 1, `one handshake for ${requests.length} requests, saw ${handshakes.length}`);
});

test('another kubeconfig (other credentials) gets its own connection', async () => {
  handshakes.length = 0;
  const c = new Cluster(kubeconfig('someone-else'), 'other.conf');
  assert.equal(await c.version(), 'v1.34.4');
  assert.equal(handshakes.length, 1);
});
