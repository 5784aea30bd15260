/**
 * kubeception's CSR approver at run time, against a real kube-apiserver and etcd on loopback
 * (test/bed/loopback-apiserver.ts): the approver runs with its own ServiceAccount and RBAC
 * (manifests/csr-approver.ts); bootstrap tokens are real token Secrets authenticated by the apiserver;
 * CSRs are posted with them as a joining worker (or an attacker holding a worker's token) would.
 * What a token can buy: one new node, never a second name, never an existing Node (Ready or not),
 * never a name a control-plane node holds — also when two CSRs of one token race. Also: the token
 * commands (create, list, delete, the public index, expired tokens) against the same apiserver.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Cluster, type KubernetesObject } from '../../lib/k8s/client.ts';
import { call } from '../../lib/join/client.ts';
import { runApprover } from '../../lib/join/csr-approver.ts';
import { controlPlaneClaim, NODE_IDENTITIES, readIdentities, updateIdentities } from '../../lib/join/node-identities.ts';
import { createToken, deleteExpiredTokens, deleteToken, listTokens, syncTokenIndex } from '../../lib/join/tokens-api.ts';
import { parseIndex, TOKEN_INDEX_NAME } from '../../lib/join/token-index.ts';
import { tokenSecret } from '../../lib/join/token.ts';
import { uploadCerts } from '../../lib/join/upload-certs.ts';
import { CERTS_SECRET, SHARED_FILES } from '../../lib/join/certificate-key.ts';
import { RealFiles } from '../../lib/host/files.ts';
import { sampleConfig } from '../unit/pki/fixtures.ts';
import { watchDiscoverySource } from '../../lib/join/watch-source.ts';
import { bootstrapTokenRbac } from '../../manifests/bootstrap-token-rbac.ts';
import { csrApproverObjects, CSR_APPROVER_NAME } from '../../manifests/csr-approver.ts';
import { configMapReader, JOIN_SERVICE_NAME } from '../../manifests/join-service.ts';
import { startLoopbackApiserver, type LoopbackApiserver } from '../bed/loopback-apiserver.ts';

let api: LoopbackApiserver;
let admin: Cluster;
const stop = new AbortController();
const log: string[] = [];
const tmp = mkdtempSync('/tmp/kc-approver-test-');

/** A ServiceAccount token of `name` in kube-system (TokenRequest, through kubectl). */
function saToken(name: string): string {
  const kc = join(tmp, 'admin.conf');
  writeFileSync(kc, api.adminKubeconfig, { mode: 0o600 });
  return execFileSync('kubectl', ['--kubeconfig', kc, '-n', 'kube-system', 'create', 'token', name, '--duration=1h']).toString().trim();
}

const csrPem = (cn: string) => execFileSync('openssl', ['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', join(tmp, 'k.pem'), '-subj', `/O=system:nodes/CN=${cn}`], { stdio: ['ignore', 'pipe', 'ignore'] }).toString();
let csrCount = 0;

/** POSTs a kubelet client CSR for `node` with `token` (as `run join` does) and waits ≤ 20 s for its decision. */
async function ask(token: string, node: string): Promise<string> {
  const name = `test-csr-${++csrCount}-${node}`;
  const body = { apiVersion: 'certificates.k8s.io/v1', kind: 'CertificateSigningRequest', metadata: { name }, spec: { request: Buffer.from(csrPem(`system:node:${node}`)).toString('base64'), signerName: 'kubernetes.io/kube-apiserver-client-kubelet', usages: ['digital signature', 'client auth'] } };
  const posted = await call(new URL('/apis/certificates.k8s.io/v1/certificatesigningrequests', api.url), { ca: api.caPem, bearer: token, timeoutMs: 10_000, json: body });
  assert.equal(posted.status, 201, `POST as the token: ${posted.body.slice(0, 300)}`);
  for (let i = 0; i < 200; i++) {
    const csr = await admin.read<KubernetesObject & { status?: { conditions?: { type: string; reason?: string }[] } }>({ apiVersion: 'certificates.k8s.io/v1', kind: 'CertificateSigningRequest', metadata: { name } });
    const c = csr?.status?.conditions?.find((x) => x.type === 'Approved' || x.type === 'Denied');
    if (c) return `${c.type} ${c.reason}`;
    await sleep(100);
  }
  return 'pending';
}

before(async () => {
  api = await startLoopbackApiserver();
  admin = new Cluster(api.adminKubeconfig, 'admin');
  const objects = csrApproverObjects('localhost/kubeception:test', 6443).filter((o) => o.kind !== 'Deployment');
  await admin.apply([...bootstrapTokenRbac(), ...objects, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: JOIN_SERVICE_NAME, namespace: 'kube-system' } }, ...configMapReader('kube-system', TOKEN_INDEX_NAME, NODE_IDENTITIES)]);
  // As bootstrap does: the record exists, holding the bootstrap node's name.
  await updateIdentities(admin, (ids) => {
    const c = controlPlaneClaim(ids, ['cp1'], Date.now());
    return { next: 'next' in c ? c.next : undefined, result: undefined };
  }, { create: true });
  runApprover((l) => log.push(l), api.tokenKubeconfig(saToken(CSR_APPROVER_NAME)), stop.signal);
});

after(async () => {
  stop.abort();
  await api?.stop();
  rmSync(tmp, { recursive: true, force: true });
});

describe('CSR approver against a real apiserver', () => {
  test('one token buys one new node: its first name is approved, a second name and a future control-plane name are denied', async () => {
    const t = await createToken(admin, 3_600_000, 'test');
    assert.equal(await ask(t, 'w1'), 'Approved KubeceptionAutoApproved');
    assert.equal(await ask(t, 'w2'), 'Denied KubeceptionTokenUsed');
    assert.equal(await ask(t, 'cp2'), 'Denied KubeceptionTokenUsed');
    const ids = await readIdentities(admin);
    assert.equal(ids.tokens.get(t.slice(0, 6))?.node, 'w1');
    assert.equal(ids.nodes.get('w1')?.token, t.slice(0, 6));
    assert.equal(ids.nodes.has('w2'), false);
  });

  test('an existing Node is never sold, NotReady or Ready; a name a control-plane node holds is never sold', async () => {
    await admin.apply([{ apiVersion: 'v1', kind: 'Node', metadata: { name: 'old1' } } as KubernetesObject]);
    assert.equal(await ask(await createToken(admin, 3_600_000), 'old1'), 'Denied KubeceptionNodeNameTaken');
    assert.equal(await ask(await createToken(admin, 3_600_000), 'cp1'), 'Denied KubeceptionNameReserved', 'cp1 has no Node object, but the bootstrap node holds its name');
  });

  test('two CSRs of one token at once: exactly one is approved', async () => {
    const t = await createToken(admin, 3_600_000);
    const both = await Promise.all([ask(t, 'race-a'), ask(t, 'race-b')]);
    assert.deepEqual(both.sort(), ['Approved KubeceptionAutoApproved', 'Denied KubeceptionTokenUsed']);
  });

  test('the same token for the same name again before its Node registers (a retried join) is approved; after, denied', async () => {
    const t = await createToken(admin, 3_600_000);
    assert.equal(await ask(t, 'w5'), 'Approved KubeceptionAutoApproved');
    assert.equal(await ask(t, 'w5'), 'Approved KubeceptionAutoApproved');
    await admin.apply([{ apiVersion: 'v1', kind: 'Node', metadata: { name: 'w5' } } as KubernetesObject]);
    assert.equal(await ask(t, 'w5'), 'Denied KubeceptionNodeNameTaken');
  });

  test("the approver's ServiceAccount reads no Secret and can write no other ConfigMap", async () => {
    const sa = new Cluster(api.tokenKubeconfig(saToken(CSR_APPROVER_NAME)), 'approver');
    await assert.rejects(sa.read({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'bootstrap-token-zzzzzz', namespace: 'kube-system' } }), /403/);
    await assert.rejects(sa.apply([{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: TOKEN_INDEX_NAME, namespace: 'kube-system' }, data: {} } as KubernetesObject]), /403/);
  });

  test('the join service sees a used token in the record (its own ServiceAccount, its RBAC)', async () => {
    const t = await createToken(admin, 3_600_000);
    assert.equal(await ask(t, 'w6'), 'Approved KubeceptionAutoApproved');
    const src = watchDiscoverySource(api.tokenKubeconfig(saToken(JOIN_SERVICE_NAME)));
    try {
      for (let i = 0; i < 100 && !src.identities().tokens.has(t.slice(0, 6)); i++) await sleep(100);
      assert.equal(src.identities().tokens.get(t.slice(0, 6))?.node, 'w6');
    } finally {
      src.stop();
    }
  });
});

describe('token commands against a real apiserver', () => {
  test('create → list (public facts only) → index → delete: the index forgets a deleted id at once', async () => {
    const t = await createToken(admin, 2 * 3_600_000, 'lifecycle');
    const id = t.slice(0, 6);
    const listed = (await listTokens(admin)).find((x) => x.id === id);
    assert.equal(listed?.description, 'lifecycle');
    assert.ok(!JSON.stringify(listed).includes(t.slice(7)), 'no secret in the listing');
    const index = async () => parseIndex((await admin.read<KubernetesObject & { data?: Record<string, string> }>({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: TOKEN_INDEX_NAME, namespace: 'kube-system' } }))?.data);
    assert.ok((await index()).has(id));
    assert.equal(await deleteToken(admin, id), true);
    assert.equal(await deleteToken(admin, id), false, 'deleting again: no such token');
    assert.equal((await index()).has(id), false);
    assert.equal((await listTokens(admin)).some((x) => x.id === id), false);
  });

  test('an expired token Secret is deleted by deleteExpiredTokens and answered expired by the index until its grace ends', async () => {
    const secret = tokenSecret('expird.0123456789abcdef', -60_000, new Date(), 'old');
    await admin.apply([secret]);
    assert.deepEqual(await deleteExpiredTokens(admin), ['expird']);
    assert.equal((await listTokens(admin)).some((x) => x.id === 'expird'), false);
    await syncTokenIndex(admin);
  });

  test('certs upload with a TTL proxy the token cleaner deletes before any read still uploads, owned by that proxy', async () => {
    // The token cleaner (kube-controller-manager) may delete an expired proxy between its apply and any
    // later read (`--ttl 1s` in the HA e2e): this cluster plays it, deleting a bootstrap-token Secret
    // without usages — a TTL proxy — the first time it is read.
    class CleanedCluster extends Cluster {
      override async read<T extends KubernetesObject>(ref: Parameters<Cluster['read']>[0]): Promise<T | undefined> {
        const name = ref.metadata?.name ?? '';
        if (ref.kind === 'Secret' && name.startsWith('bootstrap-token-')) {
          const s = await super.read<KubernetesObject & { data?: Record<string, string> }>(ref);
          if (s && !s.data?.['usage-bootstrap-authentication']) {
            await admin.delete(ref);
            return undefined;
          }
        }
        return super.read<T>(ref);
      }
    }
    const pki = join(tmp, 'pki');
    mkdirSync(join(pki, 'etcd'), { recursive: true, mode: 0o700 });
    for (const [file] of SHARED_FILES) writeFileSync(join(pki, file), file === 'ca.crt' ? api.caPem : `not a key: ${file}\n`, { mode: 0o600 });
    const up = await uploadCerts(new CleanedCluster(api.adminKubeconfig, 'admin'), sampleConfig({ controlPlaneEndpoint: 'cp.example:6443', certificatesDir: pki }), new RealFiles(), 60_000, []);
    assert.match(up.command, /--control-plane/);
    const certs = await admin.read<KubernetesObject & { metadata: { ownerReferences?: { name: string; uid: string }[] } }>({ apiVersion: 'v1', kind: 'Secret', metadata: { name: CERTS_SECRET, namespace: 'kube-system' } });
    const ref = certs?.metadata.ownerReferences?.[0];
    assert.match(ref?.name ?? '', /^bootstrap-token-[a-z0-9]{6}$/);
    assert.match(ref?.uid ?? '', /^[0-9a-f-]{36}$/, 'owned by the proxy the apply created');
    await admin.delete({ apiVersion: 'v1', kind: 'Secret', metadata: { name: CERTS_SECRET, namespace: 'kube-system' } });
  });
});
