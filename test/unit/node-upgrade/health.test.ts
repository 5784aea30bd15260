/** The health gate between node upgrade batches (lib/node-upgrade/health.ts). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { healthGate, type PodFacts } from '../../../lib/node-upgrade/health.ts';

const pod = (name: string, over: Partial<PodFacts> = {}): PodFacts => ({ namespace: 'default', name, phase: 'Running', ready: true, controllerKind: 'ReplicaSet', terminating: false, ...over });
const up = { ok: true };

test("every workload's pod Ready and the API serving: passes", () => {
  const v = healthGate([pod('web-1'), pod('db-0', { controllerKind: 'StatefulSet' }), pod('proxy', { controllerKind: 'DaemonSet' })], up);
  assert.equal(v.ok, true);
  assert.match(v.why, /3 workload pod\(s\) Ready/);
});

test("a workload's pod not Ready fails, naming it; at most five are named", () => {
  const v = healthGate([pod('web-1', { ready: false }), pod('web-2')], up);
  assert.deepEqual(v, { ok: false, why: '1 workload pod(s) not Ready: default/web-1' });
  const many = healthGate(Array.from({ length: 7 }, (_, i) => pod(`p${i}`, { ready: false, phase: 'Pending' })), up);
  assert.match(many.why, /^7 workload pod\(s\) not Ready: default\/p0, default\/p1, default\/p2, default\/p3, default\/p4, …$/);
});

test("a Job's pod, a bare pod, a terminating pod and a finished pod are not counted", () => {
  const v = healthGate([
    pod('job-x', { controllerKind: 'Job', ready: false }),
    pod('bare', { controllerKind: undefined, ready: false }),
    pod('going', { terminating: true, ready: false }),
    pod('done', { phase: 'Succeeded', ready: false }),
    pod('crashed', { phase: 'Failed', ready: false }),
  ], up);
  assert.equal(v.ok, true, v.why);
});

test('the API not serving fails before any pod is looked at', () => {
  assert.deepEqual(healthGate([pod('web-1')], { ok: false, why: 'HTTP 503' }), { ok: false, why: 'the API does not serve: HTTP 503' });
});

test('healthGate.namespaces: only those namespaces count', () => {
  const pods = [pod('web-1', { namespace: 'shop', ready: false }), pod('x', { namespace: 'batch' })];
  assert.equal(healthGate(pods, up, ['batch']).ok, true);
  assert.equal(healthGate(pods, up, ['shop']).ok, false);
  assert.equal(healthGate(pods, up, []).ok, false, 'empty: every namespace');
});
