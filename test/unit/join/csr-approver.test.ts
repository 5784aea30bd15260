/** The CSR approver's request checks (pure): only well-formed kubelet client CSRs of bootstrap tokens go on to the identity record (test/unit/join/node-identities.test.ts; the whole decision against a real apiserver: test/integration/csr-approver.test.ts). */
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { decide, type CsrLike } from '../../../lib/join/csr-approver.ts';

const dir = mkdtempSync('/tmp/csr-test-');
const csrPem = (subj: string) => execFileSync('openssl', ['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', join(dir, 'k.pem'), '-subj', subj], { stdio: ['ignore', 'pipe', 'ignore'] }).toString();
const csr = (pem: string, over: Partial<NonNullable<CsrLike['spec']>> = {}): CsrLike => ({
  metadata: { name: 'c' },
  spec: { signerName: 'kubernetes.io/kube-apiserver-client-kubelet', username: 'system:bootstrap:abcdef', request: Buffer.from(pem).toString('base64'), usages: ['digital signature', 'client auth'], ...over },
});
let good: string;
before(() => {
  good = csrPem('/O=system:nodes/CN=system:node:new1');
});

describe('CSR approver decide()', () => {
  test('a kubelet client CSR of a bootstrap token goes to the identity record with its name and token id, whatever the name', async () => {
    assert.deepEqual(await decide(csr(good)), { claim: { name: 'new1', token: 'abcdef', csr: 'c' } });
    assert.deepEqual(await decide(csr(csrPem('/O=system:nodes/CN=system:node:cp1'))), { claim: { name: 'cp1', token: 'abcdef', csr: 'c' } });
  });

  test('denies what is not a kubelet client request: other CN/O, extra usages, garbage', async () => {
    const reason = async (c: CsrLike) => {
      const d = await decide(c);
      return d && 'deny' in d ? `${d.deny.approve} ${d.deny.reason}` : JSON.stringify(d);
    };
    assert.equal(await reason(csr(csrPem('/O=system:masters/CN=system:node:x'))), 'false KubeceptionNotNodeClient');
    assert.equal(await reason(csr(csrPem('/O=system:nodes/O=system:masters/CN=system:node:x'))), 'false KubeceptionNotNodeClient');
    assert.equal(await reason(csr(csrPem('/O=system:nodes/CN=admin'))), 'false KubeceptionNotNodeClient');
    assert.equal(await reason(csr(good, { usages: ['client auth', 'server auth'] })), 'false KubeceptionNotNodeClient');
    assert.equal(await reason(csr('not a csr')), 'false KubeceptionInvalidRequest');
  });

  test('leaves alone other signers, non-bootstrap requesters (renewals) and decided CSRs', async () => {
    assert.equal(await decide(csr(good, { signerName: 'example.com/other' })), undefined);
    assert.equal(await decide(csr(good, { username: 'system:node:new1' })), undefined);
    assert.equal(await decide({ ...csr(good), status: { conditions: [{ type: 'Denied' }] } }), undefined);
  });
});
