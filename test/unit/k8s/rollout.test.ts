/**
 * finishSurge: the DaemonSet controller's last surge step, done for it when it stalls. A pure unit:
 * the cluster is a fake holding a pod list and recording deletes. crashLoopingPod: which pod fails a roll fast.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { crashLoopingPod, finishSurge } from '../../../lib/k8s/rollout.ts';
import type { Cluster } from '../../../lib/k8s/client.ts';

const ago = (s: number) => new Date(Date.now() - s * 1000).toISOString();
const pod = (name: string, node: string, gen: string, readyFor?: number, terminating = false) => ({
  metadata: { name, labels: { 'pod-template-generation': gen }, ...(terminating && { deletionTimestamp: ago(1) }) },
  spec: { nodeName: node },
  status: { conditions: [{ type: 'Ready', status: readyFor === undefined ? 'False' : 'True', lastTransitionTime: ago(readyFor ?? 0) }] },
});
function fake(pods: object[]) {
  const deleted: string[] = [];
  const api = { list: async () => pods, delete: async (ref: { metadata: { name: string } }) => {
    deleted.push(ref.metadata.name);
    return true;
  } } as unknown as Cluster;
  return { api, deleted };
}
const ds = { metadata: { name: 'kube-apiserver', generation: 2 }, spec: { minReadySeconds: 30 } };
const ctx = { signal: new AbortController().signal, log: { warn() {} } };

test('the old pod goes once the new generation has been Ready for minReadySeconds on its node', async () => {
  const f = fake([pod('old-a', 'a', '1', 600), pod('new-a', 'a', '2', 45), pod('old-b', 'b', '1', 600), pod('new-b', 'b', '2', 10)]);
  assert.equal(await finishSurge(ctx, f.api, 'kube-apiserver', ds), true);
  assert.deepEqual(f.deleted, ['old-a'], 'node b: the new pod is not ready long enough yet');
});

test('nothing is deleted while no new pod is ready, or when only the new pod is left', async () => {
  for (const pods of [[pod('old', 'a', '1', 600), pod('new', 'a', '2')], [pod('new', 'a', '2', 600)], [pod('old', 'a', '1', 600), pod('new', 'a', '2', 600, true)]]) {
    const f = fake(pods);
    assert.equal(await finishSurge(ctx, f.api, 'kube-apiserver', ds), false);
    assert.deepEqual(f.deleted, []);
  }
});

test('a roll fails fast only on a pod it created that restarted twice and waits in CrashLoopBackOff', () => {
  const since = Date.now() - 60_000;
  const p = (name: string, createdAgo: number, restarts: number, waiting?: string, terminating = false) => ({
    metadata: { name, creationTimestamp: new Date(Date.now() - createdAgo * 1000), ...(terminating && { deletionTimestamp: new Date() }) },
    status: { containerStatuses: [{ restartCount: restarts, state: waiting ? { waiting: { reason: waiting } } : { running: {} } }] },
  });
  assert.equal(crashLoopingPod([p('old', 3600, 5, 'CrashLoopBackOff'), p('new', 30, 1, 'CrashLoopBackOff'), p('pulling', 30, 0, 'ImagePullBackOff'), p('running', 30, 3)], since), undefined);
  assert.equal(crashLoopingPod([p('going', 30, 4, 'CrashLoopBackOff', true)], since), undefined, 'a terminating pod is on its way out');
  assert.equal(crashLoopingPod([p('old', 3600, 5, 'CrashLoopBackOff'), p('new', 30, 2, 'CrashLoopBackOff')], since)?.metadata?.name, 'new');
});
