/** Field-level differences for `plan` (lib/k8s/object-diff.ts): pure. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fieldChangeLine, fieldChanges } from '../../../lib/k8s/object-diff.ts';

const ds = (command: string[], image = 'k8s/kube-apiserver:v1.37.2', extra: Record<string, unknown> = {}) => ({
  apiVersion: 'apps/v1', kind: 'DaemonSet', metadata: { name: 'kube-apiserver', namespace: 'kube-system', resourceVersion: '1', uid: 'u', generation: 1 },
  spec: { template: { spec: { containers: [{ name: 'kube-apiserver', image, command }, { name: 'sidecar', image: 'x' }], ...extra } } },
  status: { numberReady: 1 },
});

test('a changed flag is one line of removed and added items under the container by name; server fields are not changes', () => {
  const before = ds(['kube-apiserver', '--a=1', '--audit-log-maxage=30']);
  const after = { ...ds(['kube-apiserver', '--a=1', '--audit-log-maxage=60', '--b=2']), metadata: { ...before.metadata, resourceVersion: '2', generation: 2, annotations: { 'deprecated.daemonset.template.generation': '2' } }, status: { numberReady: 0 } };
  const changes = fieldChanges(before, after);
  assert.deepEqual(changes, [{ path: 'spec.template.spec.containers[kube-apiserver].command', removed: ['--audit-log-maxage=30'], added: ['--audit-log-maxage=60', '--b=2'] }]);
  assert.equal(fieldChangeLine(changes[0]!), 'spec.template.spec.containers[kube-apiserver].command: - --audit-log-maxage=30  + --audit-log-maxage=60  + --b=2');
});

test('a scalar change, an added and a removed field; the same object has none', () => {
  const before = ds(['x'], 'img:v1', { hostNetwork: true });
  const after = ds(['x'], 'img:v2', { priorityClassName: 'system-node-critical' });
  assert.deepEqual(fieldChanges(before, after).map(fieldChangeLine), [
    'spec.template.spec.containers[kube-apiserver].image: img:v1 → img:v2',
    'spec.template.spec.hostNetwork: true → (absent)',
    'spec.template.spec.priorityClassName: (absent) → system-node-critical',
  ]);
  assert.deepEqual(fieldChanges(before, structuredClone(before)), []);
});

test("a Secret's values are never shown, not even their length; its labels are", () => {
  const s = (v: string, label: string) => ({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 's', labels: { l: label } }, data: { key: Buffer.from(v).toString('base64') } });
  const changes = fieldChanges(s('old-secret-bytes', 'a'), { ...s('new-secret-bytes-longer', 'b'), stringData: { token: 'abcdef.0123456789abcdef' } });
  const text = JSON.stringify(changes) + changes.map(fieldChangeLine).join('\n');
  assert.deepEqual(changes.map((c) => c.path), ['data.key', 'metadata.labels.l', 'stringData.token']);
  for (const secret of ['old-secret', 'new-secret', Buffer.from('old-secret-bytes').toString('base64'), '0123456789abcdef']) assert.ok(!text.includes(secret), secret);
  assert.equal(fieldChangeLine(changes[0]!), 'data.key: (secret value) → (secret value)');
});
