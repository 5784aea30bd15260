import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appliedChange } from '../../../lib/k8s/client.ts';

const ds = (resourceVersion: string, generation?: number, labels?: Record<string, string>, annotations?: Record<string, string>) => ({
  apiVersion: 'apps/v1', kind: 'DaemonSet', metadata: { name: 'kube-apiserver', namespace: 'kube-system', resourceVersion, ...(generation !== undefined && { generation }), ...(labels && { labels }), ...(annotations && { annotations }) },
});

test('appliedChange: created, or a new resourceVersion for an object without a generation', () => {
  assert.equal(appliedChange(undefined, ds('5', 1)), true);
  assert.equal(appliedChange(ds('5'), ds('6')), true);
  assert.equal(appliedChange(ds('5'), ds('5')), false);
});

test('appliedChange: with a generation, a status write between the read and the apply is not a change; a spec, label or annotation change is', () => {
  assert.equal(appliedChange(ds('5', 3, { a: 'b' }), ds('7', 3, { a: 'b' })), false);
  assert.equal(appliedChange(ds('5', 3), ds('7', 4)), true);
  assert.equal(appliedChange(ds('5', 3, { a: 'b' }), ds('7', 3, { a: 'c' })), true);
  assert.equal(appliedChange(ds('5', 3, undefined, { x: '1' }), ds('7', 3, undefined, { x: '2' })), true);
  assert.equal(appliedChange(ds('5', 3), ds('7', 3, { new: 'label' })), true);
});
