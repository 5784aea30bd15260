/** `kubeception upgrade status|pause|resume`: the text a plan prints, and bad input refused before any request. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatPlanStatus } from '../../../lib/commands/node-upgrade.ts';
import type { NodeUpgradePlan } from '../../../lib/node-upgrade/types.ts';
import { cli } from '../../helpers/cli.ts';

const T = '2026-12-07T05:00:00.000Z';
const plan: NodeUpgradePlan = {
  apiVersion: 'kubeception.io/v1alpha1', kind: 'NodeUpgradePlan', metadata: { name: 'kubelet' },
  spec: { targetVersion: 'v1.37.2', maxUnavailable: 2 },
  status: {
    phase: 'Failed', batch: 1, held: ['w3'],
    nodes: [
      { name: 'w1', phase: 'Failed', batch: 1, fromVersion: 'v1.36.4', cordonedByUs: true, startedAt: T, message: 'the upgrade agent failed: exit 1' },
      { name: 'w2', phase: 'Stopped', batch: 1, fromVersion: 'v1.36.4', cordonedByUs: true, startedAt: T },
    ],
    conditions: [
      { type: 'Failed', status: 'True', reason: 'NodeUpgradeFailed', message: 'Node w1: the upgrade agent failed: exit 1', lastTransitionTime: T },
      { type: 'Paused', status: 'False', reason: 'Running', message: 'not paused', lastTransitionTime: T },
    ],
  },
};

test('status text: the plan, its true conditions, a row per Node, the held Nodes', () => {
  assert.equal(formatPlanStatus(plan), [
    'NodeUpgradePlan kubelet: target v1.37.2, phase Failed, batch 1, maxUnavailable 2',
    '  Failed (NodeUpgradeFailed): Node w1: the upgrade agent failed: exit 1',
    'NODE  BATCH  PHASE    FROM     CORDONED-BY-KUBECEPTION  MESSAGE',
    'w1    1      Failed   v1.36.4  yes                      the upgrade agent failed: exit 1',
    'w2    1      Stopped  v1.36.4  yes',
    'held (cordoned by an operator, left alone): w3',
    '',
  ].join('\n'));
  assert.equal(formatPlanStatus({ ...plan, spec: { targetVersion: 'v1.37.2', paused: true }, status: undefined }), 'NodeUpgradePlan kubelet: target v1.37.2, phase Pending, batch 0, maxUnavailable 1, paused\n');
});

test('pause and rollback with a --kubeconfig that does not exist: exit 2 naming it; an unknown subcommand lists the new ones', async () => {
  for (const sub of ['pause', 'rollback']) {
    const r = await cli(['upgrade', sub, '--kubeconfig', '/nonexistent/admin.conf']);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /--kubeconfig \/nonexistent\/admin\.conf/);
  }
  const u = await cli(['upgrade', 'bogus']);
  assert.equal(u.code, 2);
  assert.match(u.stderr, /upgrade needs plan, apply, node, status, pause, resume or rollback, not "bogus"/);
});

test('--max-unavailable: only with `upgrade apply --nodes`, a whole number from 1 to 1000; refused (exit 2) before any request', async () => {
  for (const [args, why] of [
    [['upgrade', 'apply', 'v1.37.2', '--max-unavailable', '2'], /--max-unavailable goes with `upgrade apply vX.Y.Z --nodes`/],
    [['upgrade', 'node', '--max-unavailable', '2'], /--max-unavailable goes with/],
    [['upgrade', 'apply', 'v1.37.2', '--nodes', '--max-unavailable', '0'], /--max-unavailable 0 is not a whole number of Nodes from 1 to 1000/],
    [['upgrade', 'apply', 'v1.37.2', '--nodes', '--max-unavailable', '1.5'], /--max-unavailable 1\.5 is not/],
    [['upgrade', 'apply', 'v1.37.2', '--nodes', '--max-unavailable', 'two'], /--max-unavailable two is not/],
    [['upgrade', 'apply', 'v1.37.2', '--nodes', '--max-unavailable', '1001'], /--max-unavailable 1001 is not/],
  ] as const) {
    const r = await cli([...args]);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, why);
  }
});
