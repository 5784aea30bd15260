import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatScores, scoreCluster, scoreRun } from '../../cis/summary.ts';

/** kube-bench --json output (v0.15.6's shape) with the given results per target and section. */
const report = (controls: { node_type: string; tests: { section: string; desc: string; results: { test_number: string; test_desc: string; status: string }[] }[] }[]) =>
  JSON.stringify({
    Controls: controls.map((c) => ({
      id: '1',
      version: 'cis-1.12',
      text: 'x',
      ...c,
      // kube-bench's own counters, deliberately wrong: the scores come from the results.
      tests: c.tests.map((t) => ({ ...t, pass: 99, fail: 99, warn: 99, info: 99 })),
      total_pass: 99,
    })),
    Totals: { total_pass: 99, total_fail: 99, total_warn: 99, total_info: 99 },
  });

const r = (id: string, status: string) => ({ test_number: id, test_desc: `check ${id}`, status, scored: true });
const cp = report([
  { node_type: 'master', tests: [{ section: '1.1', desc: 'Control Plane Node Configuration Files', results: [r('1.1.1', 'INFO'), r('1.1.7', 'FAIL'), r('1.1.9', 'WARN'), r('1.1.11', 'PASS')] }, { section: '1.2', desc: 'API Server', results: [r('1.2.5', 'FAIL'), r('1.2.6', 'PASS')] }] },
  { node_type: 'etcd', tests: [{ section: '2', desc: 'Etcd Node Configuration', results: [r('2.1', 'PASS')] }] },
  { node_type: 'node', tests: [{ section: '4.2', desc: 'Kubelet', results: [r('4.2.4', 'FAIL')] }] },
]);
const worker = report([{ node_type: 'node', tests: [{ section: '4.2', desc: 'Kubelet', results: [r('4.2.4', 'FAIL'), r('4.2.1', 'PASS')] }] }]);

test('scoreRun: counts per section from the results, FAIL ids in order', () => {
  const s = scoreRun(cp, 'control plane', 'cp.json');
  assert.deepEqual(s.sections.map((x) => [x.target, x.id, x.pass, x.fail, x.warn, x.info]), [
    ['master', '1.1', 1, 1, 1, 1],
    ['master', '1.2', 1, 1, 0, 0],
    ['etcd', '2', 1, 0, 0, 0],
    ['node', '4.2', 0, 1, 0, 0],
  ]);
  assert.deepEqual(s.totals, { pass: 3, fail: 3, warn: 1, info: 1 });
  assert.deepEqual(s.fails.map((f) => f.id), ['1.1.7', '1.2.5', '4.2.4']);
  assert.equal(s.fails[0]!.text, 'check 1.1.7');
});

test('scoreCluster: the sum of its hosts', () => {
  const c = scoreCluster('kubeception', [scoreRun(cp, 'control plane', 'cp.json'), scoreRun(worker, 'worker', 'w.json')]);
  assert.deepEqual(c.totals, { pass: 4, fail: 4, warn: 1, info: 1 });
});

test('scoreRun: not kube-bench JSON, no Controls, an unknown status → an error naming the file', () => {
  assert.throws(() => scoreRun('== Summary ==', 'worker', '/r/w.json'), /\/r\/w\.json: not JSON/);
  assert.throws(() => scoreRun('[]', 'worker', '/r/w.json'), /\/r\/w\.json: no "Controls" list/);
  const odd = report([{ node_type: 'node', tests: [{ section: '4.2', desc: 'Kubelet', results: [r('4.2.1', 'SKIPPED')] }] }]);
  assert.throws(() => scoreRun(odd, 'worker', 'w.json'), /w\.json: check 4\.2\.1 has status "SKIPPED"/);
});

test('formatScores: a row per host and section with both clusters side by side, a dash where one has no section, the FAIL ids', () => {
  const a = scoreCluster('kubeception', [scoreRun(cp, 'control plane', 'a'), scoreRun(worker, 'worker', 'b')]);
  const b = scoreCluster('kubeadm', [scoreRun(report([{ node_type: 'master', tests: [{ section: '1.1', desc: 'Control Plane Node Configuration Files', results: [r('1.1.1', 'PASS')] }] }]), 'control plane', 'c'), scoreRun(worker, 'worker', 'd')]);
  const text = formatScores('CIS cis-1.12', [a, b]);
  const lines = text.split('\n');
  assert.equal(lines[0], 'CIS cis-1.12');
  assert.match(lines.find((l) => l.includes('1.1 Control Plane'))!, /^ {2}1\.1 Control Plane Node Configuration Files\s+1\s+1\s+1\s+1\s+1\s+0\s+0\s+0$/);
  assert.match(lines.find((l) => l.includes('1.2 API Server'))!, /1\s+1\s+0\s+0\s+-\s+-\s+-\s+-$/);
  assert.match(lines.find((l) => l.startsWith('cluster total'))!, /4\s+4\s+1\s+1\s+2\s+1\s+0\s+0$/);
  assert.ok(text.includes('FAIL on kubeception (4):\n  control plane: 1.1.7 1.2.5 4.2.4\n  worker: 4.2.4\n'));
  assert.ok(text.includes('FAIL on kubeadm (1):\n  worker: 4.2.4\n'));
});
