/**
 * drainSkipReason: which pods `upgrade node`'s drain leaves on the node. A pure unit over pod objects.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { drainSkipReason } from '../../../lib/steps/upgrade/upgrade-node.ts';

const managed = { 'app.kubernetes.io/managed-by': 'kubeception' };
const pod = (namespace: string, labels: Record<string, string>, extra: object = {}) => ({ metadata: { name: 'p', namespace, labels, ...extra } });

test('the self-hosted kube-controller-manager and kube-scheduler pods stay, as DaemonSet and static pods do', () => {
  assert.equal(drainSkipReason(pod('kube-system', { component: 'kube-controller-manager', tier: 'control-plane', ...managed })), 'self-hosted control-plane pod');
  assert.equal(drainSkipReason(pod('kube-system', { component: 'kube-scheduler', tier: 'control-plane', ...managed })), 'self-hosted control-plane pod');
  assert.equal(drainSkipReason(pod('default', {}, { ownerReferences: [{ kind: 'DaemonSet', name: 'x', apiVersion: 'apps/v1', uid: 'u' }] })), 'DaemonSet pod');
  assert.equal(drainSkipReason(pod('kube-system', {}, { annotations: { 'kubernetes.io/config.mirror': 'h' } })), 'static pod');
});

test('look-alikes are evicted: another namespace, another manager, another component, a workload', () => {
  for (const p of [
    pod('default', { component: 'kube-scheduler', tier: 'control-plane', ...managed }),
    pod('kube-system', { component: 'kube-scheduler', tier: 'control-plane' }),
    pod('kube-system', { component: 'my-scheduler', tier: 'control-plane', ...managed }),
    pod('kube-system', { 'k8s-app': 'kube-dns' }),
    pod('default', { app: 'web' }),
  ])
    assert.equal(drainSkipReason(p), undefined, JSON.stringify(p.metadata));
});

test("kubeception's own control-plane services and the node upgrade agent stay; look-alikes outside kube-system or not ours go", () => {
  assert.equal(drainSkipReason(pod('kube-system', { 'app.kubernetes.io/name': 'kubeception-node-upgrade-agent', ...managed })), 'the node upgrade agent (it runs this upgrade)');
  for (const name of ['kubeception-join', 'kubeception-csr-approver', 'kubeception-node-upgrade-controller'])
    assert.equal(drainSkipReason(pod('kube-system', { 'app.kubernetes.io/name': name, ...managed })), "kubeception's control-plane service", name);
  for (const p of [
    pod('default', { 'app.kubernetes.io/name': 'kubeception-node-upgrade-agent', ...managed }),
    pod('kube-system', { 'app.kubernetes.io/name': 'kubeception-node-upgrade-controller' }),
    pod('kube-system', { 'app.kubernetes.io/name': 'kubeception-other', ...managed }),
  ])
    assert.equal(drainSkipReason(p), undefined, JSON.stringify(p.metadata));
});
