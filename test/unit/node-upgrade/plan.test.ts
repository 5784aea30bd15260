/** The node upgrade planner (lib/node-upgrade/plan.ts): batches, cordons, failures, pause, restarts. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { planStep, type NodeFacts, type Observed, type Step } from '../../../lib/node-upgrade/plan.ts';
import type { NodeProgress, NodeUpgradePlanSpec, NodeUpgradePlanStatus } from '../../../lib/node-upgrade/types.ts';

const OLD = 'v1.36.4';
const NEW = 'v1.37.2';
const T0 = Date.parse('2026-12-07T05:00:00Z');
const healthy = { ok: true, why: 'fine' };
const node = (name: string, over: Partial<NodeFacts> = {}): NodeFacts => ({ name, labels: { pool: 'a' }, kubeletVersion: OLD, ready: true, unschedulable: false, ourCordon: false, ...over });
const obs = (nodes: NodeFacts[], over: Partial<Observed> = {}): Observed => ({ nodes, health: healthy, nowMs: T0, ...over });
const spec = (over: Partial<NodeUpgradePlanSpec> = {}): NodeUpgradePlanSpec => ({ targetVersion: NEW, maxUnavailable: 2, ...over });
const kinds = (s: Step) => s.actions.map((a) => `${a.kind} ${a.node}`);
const cond = (s: NodeUpgradePlanStatus, type: string) => s.conditions?.find((c) => c.type === type);
const phases = (s: NodeUpgradePlanStatus) => Object.fromEntries((s.nodes ?? []).map((n) => [n.name, n.phase]));
/** A Node of the plan's status that kubeception cordoned when its batch started at T0. */
const ours = (name: string, phase: NodeProgress['phase'], batch: number): NodeProgress => ({ name, phase, batch, fromVersion: OLD, cordonedByUs: true, startedAt: new Date(T0).toISOString() });

/**
 * Plays the cluster: applies the actions to the Nodes as the controller and the agents would
 * (a cordon sets the annotation, a drain empties the Node, an agent brings it to `NEW`, Ready).
 */
function play(nodes: NodeFacts[], s: Step): NodeFacts[] {
  return nodes.map((n) => {
    const mine = s.actions.filter((a) => a.node === n.name);
    let m = { ...n };
    for (const a of mine) {
      if (a.kind === 'cordon') m = { ...m, unschedulable: true, ourCordon: true };
      if (a.kind === 'drain') m = { ...m, drained: true };
      if (a.kind === 'start-agent') m = { ...m, kubeletVersion: NEW };
      if (a.kind === 'uncordon') m = { ...m, unschedulable: false, ourCordon: false };
    }
    return m;
  });
}

test('the first batch: at most maxUnavailable Nodes, by name, each cordoned and drained', () => {
  const s = planStep(spec(), undefined, obs(['n3', 'n1', 'n2', 'n4'].map((n) => node(n))));
  assert.deepEqual(kinds(s), ['cordon n1', 'drain n1', 'cordon n2', 'drain n2']);
  assert.equal(s.status.batch, 1);
  assert.deepEqual(phases(s.status), { n1: 'Draining', n2: 'Draining' });
  assert.ok(s.status.nodes!.every((n) => n.cordonedByUs && n.fromVersion === OLD));
  assert.equal(cond(s.status, 'Progressing')?.reason, 'BatchStarted');
});

test('a Node an operator cordoned is held: never batched, never uncordoned, named when the plan completes', () => {
  let nodes = [node('n1'), node('n2', { unschedulable: true }), node('n3')];
  let s = planStep(spec({ maxUnavailable: 3 }), undefined, obs(nodes));
  assert.deepEqual(s.status.held, ['n2']);
  assert.ok(!s.actions.some((a) => a.node === 'n2'), kinds(s).join());
  for (let i = 0; i < 10 && s.status.phase !== 'Complete'; i++) {
    nodes = play(nodes, s);
    s = planStep(spec({ maxUnavailable: 3 }), s.status, obs(nodes));
    assert.ok(!s.actions.some((a) => a.node === 'n2'), kinds(s).join());
  }
  assert.equal(s.status.phase, 'Complete');
  assert.equal(nodes.find((n) => n.name === 'n2')?.unschedulable, true);
  assert.match(cond(s.status, 'Complete')!.message, /held .*n2/);
});

test("a Node carrying kubeception's own cordon (a crash after the cordon) is batched as ours, not held", () => {
  const s = planStep(spec({ maxUnavailable: 1 }), undefined, obs([node('n1', { unschedulable: true, ourCordon: true }), node('n2')]));
  assert.deepEqual(s.status.held, []);
  assert.deepEqual(kinds(s), ['drain n1'], 'already cordoned: no second cordon');
  assert.equal(s.status.nodes![0]!.cordonedByUs, true);
});

test('a whole rollout: batches of ≤ maxUnavailable, each started only after the last is done, every cordon lifted', () => {
  let nodes = ['a', 'b', 'c', 'd', 'e'].map((n) => node(n));
  let s = planStep(spec(), undefined, obs(nodes));
  const seen: string[] = [];
  for (let i = 0; i < 30 && s.status.phase !== 'Complete'; i++) {
    const starting = s.actions.filter((a) => a.kind === 'drain' && s.status.nodes!.find((n) => n.name === a.node)?.phase === 'Draining');
    const open = s.status.nodes!.filter((n) => n.batch < s.status.batch! && n.phase !== 'Done');
    assert.deepEqual(open, [], 'an earlier batch is not done');
    if (starting.length) seen.push(`${s.status.batch}:${starting.map((a) => a.node).join('')}`);
    nodes = play(nodes, s);
    s = planStep(spec(), s.status, obs(nodes, { nowMs: T0 + i * 1000 }));
  }
  assert.equal(s.status.phase, 'Complete');
  assert.deepEqual([...new Set(seen)], ['1:ab', '2:cd', '3:e']);
  assert.deepEqual(kinds(s), ['uncordon e'], 'the last Node is uncordoned as the plan completes');
  nodes = play(nodes, s);
  assert.ok(nodes.every((n) => n.kubeletVersion === NEW && !n.unschedulable && !n.ourCordon));
});

test('the next batch waits for the health gate; a gate failing past its timeout fails the rollout', () => {
  const done = [node('a', { kubeletVersion: NEW }), node('b')];
  const status: NodeUpgradePlanStatus = { batch: 1, nodes: [{ name: 'a', phase: 'Done', batch: 1, fromVersion: OLD, cordonedByUs: true, startedAt: new Date(T0).toISOString() }], batchUpgradedAt: new Date(T0).toISOString() };
  const sick = { ok: false, why: '1 workload pod(s) not Ready: default/web-1' };
  let s = planStep(spec({ healthGate: { timeoutSeconds: 60 } }), status, obs(done, { health: sick, nowMs: T0 + 30_000 }));
  assert.deepEqual(kinds(s), []);
  assert.equal(cond(s.status, 'Progressing')?.reason, 'HealthGate');
  s = planStep(spec({ healthGate: { timeoutSeconds: 60 } }), status, obs(done, { nowMs: T0 + 30_000 }));
  assert.deepEqual(kinds(s), ['cordon b', 'drain b'], 'healthy: the next batch starts');
  s = planStep(spec({ healthGate: { timeoutSeconds: 60 } }), status, obs(done, { health: sick, nowMs: T0 + 61_000 }));
  assert.equal(s.status.phase, 'Failed');
  assert.equal(cond(s.status, 'Failed')?.reason, 'HealthGate');
  assert.match(cond(s.status, 'Failed')!.message, /web-1/);
});

test("a failing Node stops the rollout: named in the condition, left cordoned; the batch's undrained Node uncordoned; nothing more starts", () => {
  const status: NodeUpgradePlanStatus = { phase: 'Progressing', batch: 1, nodes: [ours('a', 'Upgrading', 1), ours('b', 'Draining', 1)] };
  let nodes = [node('a', { unschedulable: true, ourCordon: true, agentFailed: 'exit 1: kubelet-restart' }), node('b', { unschedulable: true, ourCordon: true }), node('c')];
  let s = planStep(spec(), status, obs(nodes));
  assert.equal(s.status.phase, 'Failed');
  assert.equal(cond(s.status, 'Failed')?.reason, 'NodeUpgradeFailed');
  assert.match(cond(s.status, 'Failed')!.message, /^Node a: the upgrade agent failed: exit 1/);
  assert.ok(!s.actions.some((x) => x.node === 'a'), kinds(s).join());
  assert.deepEqual(kinds(s), ['uncordon b']);
  assert.deepEqual(phases(s.status), { a: 'Failed', b: 'Stopped' });
  nodes = play(nodes, s);
  for (let i = 1; i < 4; i++) {
    s = planStep(spec(), s.status, obs(nodes, { nowMs: T0 + i * 3_600_000 }));
    assert.deepEqual(kinds(s), [], 'a failed rollout does nothing more');
    assert.equal(s.status.phase, 'Failed');
  }
  assert.equal(nodes.find((n) => n.name === 'a')?.unschedulable, true);
  const paused = planStep(spec({ paused: true }), s.status, obs(nodes));
  assert.equal(paused.status.phase, 'Failed', 'paused, a failed rollout still says Failed');
  const resumed = planStep(spec(), paused.status, obs(nodes, { nowMs: T0 + 9 * 3_600_000 }));
  assert.deepEqual([resumed.status.phase, kinds(resumed)], ['Failed', []], 'and resuming it does not restart it');
});

test('rollback of a failed plan: the Node its agent rolled back is uncordoned and RolledBack; one its agent could not is left cordoned, named; then the plan ends RolledBack', () => {
  const status: NodeUpgradePlanStatus = { phase: 'Progressing', batch: 2, nodes: [ours('done', 'Done', 1), ours('a', 'Upgrading', 2), ours('b', 'Upgrading', 2)] };
  // a: its agent rolled back (the old kubelet Ready again); b: its agent failed without a roll-back.
  let nodes = [node('done', { kubeletVersion: NEW }), node('a', { unschedulable: true, ourCordon: true, agentFailed: 'Job x BackoffLimitExceeded — error kubelet-upgrade-rolled-back: Node a: …', agentRolledBack: true }),
    node('b', { unschedulable: true, ourCordon: true, ready: false, agentFailed: 'Job y BackoffLimitExceeded' })];
  let s = planStep(spec(), status, obs(nodes));
  assert.equal(s.status.phase, 'Failed');
  assert.deepEqual(s.status.nodes!.map((n) => [n.name, n.phase, n.rolledBack ?? false]), [['done', 'Done', false], ['a', 'Failed', true], ['b', 'Failed', false]]);
  assert.deepEqual(kinds(s), [], 'without spec.rollback a failed Node stays cordoned');
  s = planStep(spec({ rollback: true }), s.status, obs(nodes));
  assert.deepEqual(kinds(s), ['uncordon a']);
  assert.deepEqual(phases(s.status), { done: 'Done', a: 'RolledBack', b: 'Failed' });
  assert.match(s.status.nodes!.find((n) => n.name === 'b')!.message!, /not rolled back by its agent: put its previous kubelet back by hand/);
  assert.equal(s.status.phase, 'Failed', 'b still waits for an operator');
  assert.deepEqual([cond(s.status, 'RolledBack')?.status, cond(s.status, 'RolledBack')?.reason], ['False', 'Waiting']);
  nodes = play(nodes, s);
  s = planStep(spec({ rollback: true }), s.status, obs(nodes));
  assert.deepEqual(kinds(s), [], 'b is never uncordoned by the rollback, nor a twice');
  assert.equal(nodes.find((n) => n.name === 'b')?.unschedulable, true);
  // A rolled-back Node that is not (yet) Ready at its previous kubelet waits.
  const notYet = planStep(spec({ rollback: true }), { ...status, phase: 'Failed', nodes: [{ ...status.nodes![1]!, phase: 'Failed', rolledBack: true }] }, obs([node('a', { unschedulable: true, ourCordon: true, ready: false })]));
  assert.deepEqual([kinds(notYet), notYet.status.nodes![0]!.phase], [[], 'Failed']);
  // Once b is no longer failed (an operator fixed it, here as the planner would see it), the plan ends RolledBack, and stays so.
  const fixed: NodeUpgradePlanStatus = { ...s.status, nodes: s.status.nodes!.filter((n) => n.name !== 'b') };
  let end = planStep(spec({ rollback: true }), fixed, obs(nodes));
  assert.equal(end.status.phase, 'RolledBack');
  assert.match(cond(end.status, 'RolledBack')!.message, /^back in service at their previous kubelet: a; at the target \(kept\): done$/);
  for (const sp of [spec(), spec({ rollback: true }), spec({ paused: true })]) {
    end = planStep(sp, end.status, obs(nodes, { nowMs: T0 + 3_600_000 }));
    assert.deepEqual([end.status.phase, kinds(end)], ['RolledBack', []], JSON.stringify(sp));
  }
});

test('a Node not Ready at the target within nodeTimeoutSeconds fails; one whose drain outlasts the drain timeout fails', () => {
  const started = new Date(T0).toISOString();
  const up: NodeUpgradePlanStatus = { batch: 1, nodes: [{ name: 'a', phase: 'Upgrading', batch: 1, fromVersion: OLD, cordonedByUs: true, startedAt: started }] };
  const n = [node('a', { unschedulable: true, ourCordon: true, ready: false })];
  assert.equal(planStep(spec({ nodeTimeoutSeconds: 600 }), up, obs(n, { nowMs: T0 + 599_000 })).status.phase, 'Progressing');
  const late = planStep(spec({ nodeTimeoutSeconds: 600 }), up, obs(n, { nowMs: T0 + 601_000 }));
  assert.match(cond(late.status, 'Failed')!.message, /^Node a: not Ready with kubelet v1\.37\.2 within 600 s/);
  const dr: NodeUpgradePlanStatus = { batch: 1, nodes: [{ ...up.nodes![0]!, phase: 'Draining' }] };
  const stuck = planStep(spec({ drain: { timeoutSeconds: 120 } }), dr, obs([node('a', { unschedulable: true, ourCordon: true })], { nowMs: T0 + 121_000 }));
  assert.match(cond(stuck.status, 'Failed')!.message, /^Node a: pods still on it after 120 s/);
});

test('paused: no action, a batch under way is left as it is; resumed, it goes on', () => {
  const status: NodeUpgradePlanStatus = { batch: 1, nodes: [{ name: 'a', phase: 'Upgrading', batch: 1, fromVersion: OLD, cordonedByUs: true, startedAt: new Date(T0).toISOString() }] };
  const nodes = [node('a', { kubeletVersion: NEW, unschedulable: true, ourCordon: true }), node('b')];
  const paused = planStep(spec({ paused: true }), status, obs(nodes));
  assert.deepEqual(kinds(paused), []);
  assert.equal(paused.status.phase, 'Paused');
  assert.equal(cond(paused.status, 'Paused')?.status, 'True');
  assert.deepEqual(phases(paused.status), { a: 'Upgrading' });
  const resumed = planStep(spec(), paused.status, obs(nodes));
  assert.deepEqual(kinds(resumed), ['uncordon a', 'cordon b', 'drain b']);
  assert.equal(cond(resumed.status, 'Paused')?.status, 'False');
});

test('maxUnavailable counts selected Nodes outside the batch that are not Ready; NotReady candidates go first; the selector is honoured', () => {
  const nodes = [node('a'), node('b', { ready: false, kubeletVersion: NEW }), node('c', { ready: false }), node('d'), node('x', { labels: { pool: 'other' } })];
  const s = planStep(spec({ maxUnavailable: 3, nodeSelector: { pool: 'a' } }), undefined, obs(nodes));
  assert.deepEqual(s.status.nodes!.map((n) => n.name), ['c', 'a'], 'b is not Ready and outside: 3 - 1 = 2; c first');
  const none = planStep(spec({ maxUnavailable: 1 }), undefined, obs([node('a'), node('b', { ready: false, kubeletVersion: NEW })]));
  assert.deepEqual(kinds(none), []);
  assert.equal(cond(none.status, 'Progressing')?.reason, 'Unavailable');
});

test('run again on the same status (a restarted controller): the same Nodes, no new batch, the same idempotent actions', () => {
  const nodes = [node('a'), node('b'), node('c')];
  const first = planStep(spec(), undefined, obs(nodes));
  const again = planStep(spec(), first.status, obs(nodes, { nowMs: T0 + 5_000 }));
  assert.equal(again.status.batch, 1);
  assert.deepEqual(kinds(again), kinds(first), 'the cordon was lost with the crash: made again; drain again');
  const cordoned = play(nodes, first).map((n) => ({ ...n, drained: false }));
  assert.deepEqual(kinds(planStep(spec(), first.status, obs(cordoned))), ['drain a', 'drain b']);
});
