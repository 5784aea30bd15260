/** The upgrade version-skew policy (kubeadm's EnforceVersionPolicies and the Kubernetes skew policy). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compareVersions, parseVersion, skewChecks } from '../../../lib/upgrade/skew.ts';

const ids = (c: ReturnType<typeof skewChecks>, severity = 'error') => c.filter((x) => x.severity === severity).map((x) => x.id);
const at = (cluster: string, ...kubelets: string[]) => ({ cluster, kubelets: kubelets.map((version, i) => ({ node: `n${i}`, version })), etcd: '3.6.0' });

test('parseVersion/compareVersions: release, kubelet build suffix, garbage', () => {
  assert.deepEqual(parseVersion('v1.34.4'), { major: 1, minor: 34, patch: 4 });
  assert.deepEqual(parseVersion('v1.35.4+abc'), { major: 1, minor: 35, patch: 4 });
  assert.equal(parseVersion('1.x'), undefined);
  assert.ok(compareVersions(parseVersion('v1.35.0')!, parseVersion('v1.34.9')!) > 0);
  assert.equal(compareVersions(parseVersion('v1.34.4')!, parseVersion('1.34.4')!), 0);
});

test('one minor up with kubelets at the current version: allowed', () => {
  assert.deepEqual(skewChecks(at('v1.34.4', 'v1.34.4', 'v1.34.4'), 'v1.35.4'), []);
  assert.deepEqual(skewChecks(at('v1.34.4', 'v1.34.4'), 'v1.34.5'), [], 'a patch upgrade');
  assert.deepEqual(skewChecks(at('v1.35.4', 'v1.34.4'), 'v1.35.4'), [], 'a resumed/converged upgrade');
});

test('a skipped minor, a minor downgrade and a bad target are errors with their ids', () => {
  assert.deepEqual(ids(skewChecks(at('v1.33.2', 'v1.33.2'), 'v1.35.4')), ['ControlPlaneMinorSkew']);
  assert.deepEqual(ids(skewChecks(at('v1.34.4'), 'v2.0.0')), ['ControlPlaneMinorSkew']);
  assert.deepEqual(ids(skewChecks(at('v1.35.4', 'v1.34.4'), 'v1.34.4')), ['ControlPlaneDowngrade']);
  assert.deepEqual(ids(skewChecks(at('v1.34.4'), 'v1.35.4-rc.0')), ['TargetVersion']);
  assert.deepEqual(ids(skewChecks(at('garbage'), 'v1.35.4')), ['ClusterVersion']);
});

test('kubelets: newer than the target, or more than three minors older, are errors naming the node', () => {
  const newer = skewChecks(at('v1.34.4', 'v1.34.4', 'v1.35.5'), 'v1.35.4');
  assert.deepEqual(ids(newer), ['KubeletNewerThanTarget']);
  assert.match(newer[0]!.why, /n1 is v1\.35\.5, newer than v1\.35\.4/);
  assert.deepEqual(ids(skewChecks(at('v1.34.4', 'v1.31.0'), 'v1.35.4')), ['KubeletTooOld']);
  assert.deepEqual(ids(skewChecks(at('v1.34.4', 'v1.32.0'), 'v1.35.4')), [], 'three minors older is within the policy');
});

test("etcd older than kubeadm's minimum is a warning, not a refusal", () => {
  const c = skewChecks({ ...at('v1.34.4', 'v1.34.4'), etcd: '3.4.23' }, 'v1.35.4');
  assert.deepEqual(ids(c), []);
  assert.deepEqual(ids(c, 'warning'), ['EtcdVersion']);
});
