/** The CSR approver's decision (pure): approve only well-formed kubelet client CSRs from bootstrap tokens for a free name. */
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { decide, type CsrLike } from '../../../lib/join/csr-approver.ts';
import type { NodeLike } from '../../../lib/join/node-name.ts';

const dir = mkdtempSync('/tmp/csr-test-');
const csrPem = (subj: string) => execFileSync('openssl', ['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', join(dir, 'k.pem'), '-subj', subj], { stdio: ['ignore', 'pipe', 'ignore'] }).toString();
const csr = (pem: string, over: Partial<NonNullable<CsrLike['spec']>> = {}): CsrLike => ({
  metadata: { name: 'c' },
  spec: { signerName: 'kubernetes.io/kube-apiserver-client-kubelet', username: 'system:bootstrap:abcdef', request: Buffer.from(pem).toString('base64'), usages: ['digital signature', 'client auth'], ...over },
});
const nodes: Record<string, NodeLike> = {
  cp: { metadata: { labels: { 'node-role.kubernetes.io/control-plane': '' } }, status: { conditions: [{ type: 'Ready', status: 'False' }] } },
  ready: { status: { conditions: [{ type: 'Ready', status: 'True' }] } },
  gone: { status: { conditions: [{ type: 'Ready', status: 'Unknown' }] } },
};
const node = (n: string) => nodes[n];

let good: string;
before(() => {
  good = csrPem('/O=system:nodes/CN=system:node:new1');
});

describe('CSR approver decide()', () => {
  test('approves a kubelet client CSR from a bootstrap token for a new name, or a NotReady worker name', () => {
    assert.deepEqual(decide(csr(good), node), { approve: true, reason: 'KubeceptionAutoApproved', message: 'kubeception: system:bootstrap:abcdef joins new node new1' });
    assert.equal(decide(csr(csrPem('/O=system:nodes/CN=system:node:gone')), node)?.approve, true);
  });

  test('denies a control-plane node name and a Ready Node name', () => {
    for (const n of ['cp', 'ready']) {
      const d = decide(csr(csrPem(`/O=system:nodes/CN=system:node:${n}`)), node);
      assert.deepEqual([d?.approve, d?.reason], [false, 'KubeceptionNodeNameTaken'], n);
    }
  });

  test('denies what is not a kubelet client request: other CN/O, extra usages, garbage', () => {
    assert.equal(decide(csr(csrPem('/O=system:masters/CN=system:node:x')), node)?.reason, 'KubeceptionNotNodeClient');
    assert.equal(decide(csr(csrPem('/O=system:nodes/CN=admin')), node)?.reason, 'KubeceptionNotNodeClient');
    assert.equal(decide(csr(good, { usages: ['client auth', 'server auth'] }), node)?.reason, 'KubeceptionNotNodeClient');
    assert.equal(decide(csr('not a csr'), node)?.reason, 'KubeceptionInvalidRequest');
  });

  test('leaves alone other signers, non-bootstrap requesters (renewals) and decided CSRs', () => {
    assert.equal(decide(csr(good, { signerName: 'kubernetes.io/kubelet-serving' }), node), undefined);
    assert.equal(decide(csr(good, { username: 'system:node:new1' }), node), undefined);
    assert.equal(decide({ ...csr(good), status: { conditions: [{ type: 'Denied' }] } }, node), undefined);
  });
});
