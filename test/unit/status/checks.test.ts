/**
 * `kubeception status`'s checks as pure functions of what was read (lib/status/checks.ts), and the
 * text rendering. The gathering against a real cluster is test/e2e/status.test.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  apiserversCheck, certificatesCheck, corednsCheck, deploymentCheck, etcdCheck, healthy, leaderCheck, nodesCheck, podNetworkCheck, recoveryCheck, snapshotsCheck, upgradeCheck,
} from '../../../lib/status/checks.ts';
import { formatStatus } from '../../../lib/commands/status.ts';

const now = new Date('2026-12-04T00:00:00Z');
const node = (name: string, ready: boolean, extra: { podCIDR?: string; network?: boolean; version?: string } = {}) => ({
  metadata: { name },
  spec: { podCIDR: extra.podCIDR ?? '10.244.0.0/24' },
  status: {
    conditions: [{ type: 'Ready', status: ready ? 'True' : 'Unknown', reason: ready ? 'KubeletReady' : 'NodeStatusUnknown', message: ready ? '' : 'Kubelet stopped posting node status.' }, ...(extra.network === false ? [{ type: 'NetworkUnavailable', status: 'True', reason: 'NoRouteCreated' }] : [])],
    nodeInfo: { kubeletVersion: extra.version ?? 'v1.37.2' },
  },
});

test('etcd: all voting members healthy passes; one down of three fails with quorum held; two down says quorum lost', () => {
  const m = (name: string, why?: string, learner = false) => ({ name, clientUrl: `https://${name}:2379`, learner, why });
  assert.equal(etcdCheck([m('a'), m('b'), m('c')]).state, 'pass');
  const one = etcdCheck([m('a'), m('b', 'connect ECONNREFUSED'), m('c')]);
  assert.equal(one.state, 'fail');
  assert.match(one.detail, /2\/3 voting members healthy, quorum held/);
  assert.ok(one.items?.some((i) => i.includes('b https://b:2379: connect ECONNREFUSED')));
  assert.match(etcdCheck([m('a'), m('b', 'x'), m('c', 'y')]).detail, /quorum LOST/);
  // A learner does not count for quorum but an unhealthy one still fails the check.
  assert.match(etcdCheck([m('a'), m('l', undefined, true)]).detail, /1\/1 voting/);
  assert.equal(etcdCheck([m('a'), m('l', 'down', true)]).state, 'fail');
  assert.equal(etcdCheck([]).state, 'fail');
});

test('apiservers: every endpoint must answer /readyz', () => {
  assert.equal(apiserversCheck([{ endpoint: '10.0.0.1:6443' }]).state, 'pass');
  const r = apiserversCheck([{ endpoint: '10.0.0.1:6443' }, { endpoint: '10.0.0.2:6443', why: 'HTTP 500' }]);
  assert.equal(r.state, 'fail');
  assert.match(r.detail, /1\/2/);
  assert.equal(apiserversCheck([]).state, 'fail');
});

test('leaders: a Lease renewed within its duration passes; a stale or missing one fails and says since when', () => {
  const lease = (agoS: number, holder = 'cp1_1234') => ({ spec: { holderIdentity: holder, renewTime: new Date(now.getTime() - agoS * 1000).toISOString(), leaseDurationSeconds: 15 } });
  const ok = leaderCheck('kube-scheduler', lease(2), now);
  assert.deepEqual([ok.name, ok.state], ['scheduler-leader', 'pass']);
  assert.match(ok.detail, /^cp1 leads/);
  const stale = leaderCheck('kube-controller-manager', lease(645), now);
  assert.deepEqual([stale.name, stale.state], ['controller-manager-leader', 'fail']);
  assert.match(stale.detail, /645 s ago/);
  assert.equal(leaderCheck('kube-scheduler', undefined, now).state, 'fail');
  assert.equal(leaderCheck('kube-scheduler', { spec: {} }, now).state, 'fail');
});

test('nodes: a NotReady node fails the check by name, with its reason; versions are listed', () => {
  assert.match(nodesCheck([node('cp1', true), node('w1', true, { version: 'v1.36.3' })]).detail, /2\/2 Ready \(kubelet v1\.37\.2, v1\.36\.3\)/);
  const r = nodesCheck([node('cp1', true), node('w1', false)]);
  assert.equal(r.state, 'fail');
  assert.match(r.detail, /1\/2 NotReady: w1/);
  assert.ok(r.items?.some((i) => /^w1 v1\.37\.2: NotReady \(NodeStatusUnknown: Kubelet stopped/.test(i)));
  assert.equal(nodesCheck([]).state, 'fail');
});

test('pod network: per node, podCIDR, NetworkUnavailable and a Ready plugin pod on it', () => {
  const pod = (n: string, ready: boolean) => ({ metadata: { name: `flannel-${n}` }, spec: { nodeName: n }, status: { phase: 'Running', conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] } });
  assert.equal(podNetworkCheck([node('cp1', true), node('w1', true)], 'flannel', [pod('cp1', true), pod('w1', true)]).state, 'pass');
  const r = podNetworkCheck([node('cp1', true), node('w1', true)], 'flannel', [pod('cp1', true), pod('w1', false)]);
  assert.equal(r.state, 'fail');
  assert.match(r.detail, /1\/2 nodes without a working pod network: w1/);
  assert.match(podNetworkCheck([node('cp1', true)], 'flannel', []).items![0]!, /no flannel pod/);
  assert.match(podNetworkCheck([node('cp1', true, { network: false })], 'none', undefined).items![0]!, /NetworkUnavailable \(NoRouteCreated\)/);
  assert.equal(podNetworkCheck([node('cp1', true)], 'none', undefined).state, 'pass');
});

test('deployments, CoreDNS, certificates, recovery, snapshots, upgrade', () => {
  assert.equal(deploymentCheck('join-service', 'kubeception-join', { spec: { replicas: 1 }, status: { availableReplicas: 1 } }).state, 'pass');
  assert.equal(deploymentCheck('join-service', 'kubeception-join', { spec: { replicas: 1 }, status: {} }).state, 'fail');
  assert.equal(deploymentCheck('join-service', 'kubeception-join', undefined).state, 'fail');
  assert.equal(deploymentCheck('x', 'x', { spec: { replicas: 2 }, status: { availableReplicas: 1 } }).state, 'warn');

  assert.equal(corednsCheck('kubernetes.default.svc.cluster.local', '10.96.0.10', '10.96.0.1', ['10.96.0.1']).state, 'pass');
  assert.equal(corednsCheck('q', 's', '10.96.0.1', ['10.96.0.2']).state, 'fail');
  assert.match(corednsCheck('q', 's', '10.96.0.1', { error: 'ETIMEOUT' }).detail, /ETIMEOUT/);

  const day = 86_400_000;
  const cert = (name: string, days: number) => ({ name, notAfter: new Date(now.getTime() + days * day + 1000), missing: false });
  assert.equal(certificatesCheck([cert('apiserver', 364), cert('ca', 3649)], now).state, 'pass');
  assert.match(certificatesCheck([cert('apiserver', 364), cert('ca', 3649)], now).detail, /the soonest \(apiserver\) in 364 d/);
  assert.equal(certificatesCheck([cert('apiserver', 10)], now).state, 'warn');
  assert.equal(certificatesCheck([cert('apiserver', -2)], now).state, 'fail');
  assert.equal(certificatesCheck([cert('apiserver', 300), { name: 'front-proxy-client', missing: true }], now).state, 'warn');

  assert.equal(recoveryCheck(3, 3, 'active').state, 'pass');
  assert.equal(recoveryCheck(2, 3, 'active').state, 'warn');
  assert.equal(recoveryCheck(3, 3, 'failed').state, 'fail');
  assert.equal(recoveryCheck(undefined, 3, 'active').state, 'fail');

  const s = { disabled: false, intervalMs: 12 * 3_600_000, interval: '12h' };
  assert.equal(snapshotsCheck({ name: 'n', created: new Date(now.getTime() - 3_600_000) }, s, 2, now).state, 'pass');
  assert.equal(snapshotsCheck({ name: 'n', created: new Date(now.getTime() - 25 * 3_600_000) }, s, 2, now).state, 'warn');
  assert.equal(snapshotsCheck(undefined, s, 0, now).state, 'warn');
  assert.equal(snapshotsCheck(undefined, { ...s, disabled: true }, 0, now).state, 'pass');

  assert.equal(upgradeCheck(undefined).state, 'pass');
  assert.equal(upgradeCheck({ from: 'v1.36.3', to: 'v1.37.2', started: 't', phase: 'done' }).state, 'pass');
  assert.equal(upgradeCheck({ from: 'v1.36.3', to: 'v1.37.2', started: 't', phase: 'control-plane' }).state, 'warn');
});

test('healthy: warnings allowed, any fail is unhealthy; the text names the failing checks and their items', () => {
  const checks = [
    { name: 'etcd', state: 'pass' as const, detail: '1/1' },
    { name: 'etcd-snapshots', state: 'warn' as const, detail: 'no snapshot yet' },
  ];
  assert.equal(healthy(checks), true);
  assert.match(formatStatus(checks), /healthy \(2 checks, with warnings\)/);
  const bad = [...checks, { name: 'nodes', state: 'fail' as const, detail: '1/2 NotReady: w1', items: ['w1 v1.37.2: NotReady (NodeStatusUnknown)'] }];
  assert.equal(healthy(bad), false);
  const text = formatStatus(bad);
  assert.match(text, /^FAIL nodes\s+1\/2 NotReady: w1$/m);
  assert.match(text, /^\s+w1 v1\.37\.2: NotReady/m);
  assert.match(text, /unhealthy: nodes\n$/);
});
