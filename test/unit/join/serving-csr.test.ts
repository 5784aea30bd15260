/**
 * The kubelet serving CSR decision (lib/join/serving-csr.ts), pure, with real CSRs made by openssl:
 * a node gets a serving certificate only for the addresses its own Node lists, none of them another
 * Node's or the apiserver's. The same decision against a real apiserver: test/e2e/kubelet-serving.test.ts.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { decide, type CsrLike } from '../../../lib/join/csr-approver.ts';
import { nodeSans, parseReservedSans, servingSansVerdict, type NodeLike } from '../../../lib/join/serving-csr.ts';
import { csrSubject } from '../../../lib/pki/x509.ts';
import { apiServerSharedSans } from '../../../lib/pki/certs.ts';
import { sampleConfig } from '../pki/fixtures.ts';

const dir = mkdtempSync('/tmp/serving-csr-test-');
/** A PEM CSR with `subj` and `san` (openssl's subjectAltName syntax, e.g. `DNS:w1,IP:10.0.0.2`). */
const csrPem = (subj: string, san?: string) =>
  execFileSync('openssl', ['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', join(dir, 'k.pem'), '-subj', subj, ...(san ? ['-addext', `subjectAltName=${san}`] : [])], { stdio: ['ignore', 'pipe', 'ignore'] }).toString();
const serving = (pem: string, over: Partial<NonNullable<CsrLike['spec']>> = {}): CsrLike => ({
  metadata: { name: 'csr-1' },
  spec: { signerName: 'kubernetes.io/kubelet-serving', username: 'system:node:w1', groups: ['system:nodes', 'system:authenticated'], request: Buffer.from(pem).toString('base64'), usages: ['digital signature', 'server auth'], ...over },
});
const node = (name: string, ...addresses: [string, string][]): NodeLike => ({ metadata: { name }, status: { addresses: addresses.map(([type, address]) => ({ type, address })) } });
const w1 = node('w1', ['InternalIP', '10.0.0.2'], ['Hostname', 'w1']);
const cp = node('cp', ['InternalIP', '10.0.0.1'], ['Hostname', 'cp']);
const reserved = parseReservedSans('kubernetes,kubernetes.default,kubernetes.default.svc,kubernetes.default.svc.cluster.local,localhost,api.example.com,10.96.0.1,127.0.0.1,10.0.0.100');

/** The verdict for w1's request with `san`, as `approve reason`. */
async function verdict(san: string | undefined, over: Partial<NonNullable<CsrLike['spec']>> = {}, subj = '/O=system:nodes/CN=system:node:w1', nodes = [w1, cp]): Promise<string> {
  const d = await decide(serving(csrPem(subj, san), over));
  assert.ok(d, 'a serving CSR is always decided');
  if ('deny' in d) return `${d.deny.approve} ${d.deny.reason}`;
  assert.ok('serving' in d, JSON.stringify(d));
  const own = nodes.find((n) => n.metadata?.name === d.serving.node);
  const v = servingSansVerdict(d.serving.node, d.serving.subject, own, nodes, reserved);
  return `${v.approve} ${v.reason}`;
}

describe('kubelet serving CSRs', () => {
  test('the CSR parser reads the requested DNS, IP and other SANs', async () => {
    const s = await csrSubject(csrPem('/O=system:nodes/CN=system:node:w1', 'DNS:W1,IP:10.0.0.2,IP:fd00:0::1,email:a@b.c,URI:spiffe://x'));
    assert.deepEqual([s.commonName, s.organizations, s.dnsNames, s.ipAddresses, s.otherSans], ['system:node:w1', ['system:nodes'], ['W1'], ['10.0.0.2', 'fd00::1'], ['email:a@b.c', 'URI:spiffe://x']]);
    assert.deepEqual((await csrSubject(csrPem('/CN=x'))).dnsNames, []);
  });

  test("a node's own request for exactly its own addresses is approved (what the kubelet asks: Hostname and InternalIP)", async () => {
    assert.equal(await verdict('DNS:w1,IP:10.0.0.2'), 'true KubeceptionAutoApproved');
    assert.equal(await verdict('IP:10.0.0.2'), 'true KubeceptionAutoApproved');
    assert.equal(await verdict('DNS:W1,IP:10.0.0.2', { usages: ['digital signature', 'key encipherment', 'server auth'] }), 'true KubeceptionAutoApproved');
  });

  test("a node asking for another node's IP or name is denied, even after listing it in its own status", async () => {
    assert.equal(await verdict('DNS:w1,IP:10.0.0.1'), 'false KubeceptionSANOfOtherNode');
    assert.equal(await verdict('DNS:cp,IP:10.0.0.2'), 'false KubeceptionSANOfOtherNode');
    assert.equal(await verdict('DNS:w1,IP:10.0.0.77'), 'false KubeceptionSANNotNodeAddress');
    assert.equal(await verdict('DNS:w1.example.com,IP:10.0.0.2'), 'false KubeceptionSANNotNodeAddress');
    const greedy = node('w1', ['InternalIP', '10.0.0.2'], ['ExternalIP', '10.0.0.1'], ['Hostname', 'w1'], ['InternalDNS', 'cp']);
    assert.equal(await verdict('DNS:w1,IP:10.0.0.1', {}, undefined, [greedy, cp]), 'false KubeceptionSANOfOtherNode');
    assert.equal(await verdict('DNS:cp,IP:10.0.0.2', {}, undefined, [greedy, cp]), 'false KubeceptionSANOfOtherNode');
  });

  test("a Service name, the apiserver's names and IPs, loopback and wildcards are denied, even when the node lists them", async () => {
    const liar = node('w1', ['InternalIP', '10.0.0.2'], ['Hostname', 'w1'], ['InternalDNS', 'kubernetes.default.svc'], ['InternalDNS', 'api.example.com'], ['ExternalIP', '10.96.0.1'], ['ExternalIP', '127.0.0.1'], ['InternalDNS', 'web.prod.svc.cluster.local'], ['InternalDNS', '*.w1'], ['ExternalIP', '10.0.0.100']);
    for (const san of ['DNS:kubernetes.default.svc', 'DNS:api.example.com', 'IP:10.96.0.1', 'IP:127.0.0.1', 'DNS:web.prod.svc.cluster.local', 'DNS:*.w1', 'DNS:localhost', 'DNS:kubernetes', 'IP:10.0.0.100'])
      assert.equal(await verdict(`DNS:w1,IP:10.0.0.2,${san}`, {}, undefined, [liar, cp]), 'false KubeceptionSANReserved', san);
  });

  test('the requester must be the node itself, asking in its own name', async () => {
    assert.equal(await verdict('DNS:w1,IP:10.0.0.2', { username: 'system:node:cp' }), 'false KubeceptionNotKubeletServing');
    assert.equal(await verdict('DNS:w1,IP:10.0.0.2', { username: 'system:serviceaccount:default:x', groups: ['system:serviceaccounts'] }), 'false KubeceptionNotNode');
    assert.equal(await verdict('DNS:w1,IP:10.0.0.2', { groups: ['system:authenticated'] }), 'false KubeceptionNotNode');
    assert.equal(await verdict('DNS:w1,IP:10.0.0.2', { username: 'system:bootstrap:abcdef', groups: ['system:bootstrappers'] }), 'false KubeceptionNotNode');
  });

  test('subject, usages and SAN kinds must be a kubelet serving request', async () => {
    assert.equal(await verdict('DNS:w1,IP:10.0.0.2', {}, '/O=system:masters/CN=system:node:w1'), 'false KubeceptionNotKubeletServing');
    assert.equal(await verdict('DNS:w1,IP:10.0.0.2', {}, '/O=system:nodes/O=system:masters/CN=system:node:w1'), 'false KubeceptionNotKubeletServing');
    assert.equal(await verdict('DNS:w1,IP:10.0.0.2', { usages: ['digital signature', 'server auth', 'client auth'] }), 'false KubeceptionNotKubeletServing');
    assert.equal(await verdict('DNS:w1,IP:10.0.0.2', { usages: ['digital signature'] }), 'false KubeceptionNotKubeletServing');
    assert.equal(await verdict('DNS:w1,email:root@w1'), 'false KubeceptionNotKubeletServing');
    assert.equal(await verdict(undefined), 'false KubeceptionNotKubeletServing');
    assert.equal(await verdict('DNS:w1', {}, undefined, [cp]), 'false KubeceptionNodeUnknown');
  });

  test("nodeSans mirrors the kubelet's template: Hostname/InternalDNS/ExternalDNS names, InternalIP/ExternalIP/IP Hostname addresses", () => {
    const s = nodeSans(node('n', ['InternalIP', '10.0.0.5'], ['Hostname', '10.0.0.6'], ['Hostname', 'N1'], ['ExternalDNS', 'n.example.com'], ['InternalIP', 'fd00:0::5'], ['Weird', 'x']));
    assert.deepEqual([[...s.dnsNames], [...s.ipAddresses]], [['n1', 'n.example.com'], ['10.0.0.5', '10.0.0.6', 'fd00::5']]);
  });

  test("the reserved SANs are the apiserver's shared ones: this node's name and address stay its own", () => {
    const config = sampleConfig({ nodeName: 'cp', localAPIEndpoint: { advertiseAddress: '10.0.0.1', bindPort: 6443 }, controlPlaneEndpoint: 'api.example.com:6443', apiServer: { extraSANs: ['10.0.0.100'], extraArgs: {} } });
    const shared = apiServerSharedSans(config);
    for (const s of ['kubernetes.default.svc', 'api.example.com', '10.96.0.1', '10.0.0.100', 'localhost', '127.0.0.1']) assert.ok(shared.includes(s), s);
    for (const s of ['cp', '10.0.0.1']) assert.ok(!shared.includes(s), s);
  });
});
