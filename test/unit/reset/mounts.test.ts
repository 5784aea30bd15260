/** Which mount points reset may unmount: only what the cluster's kubelet and containerd made (pure). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeMountPath, mountIsOurs, mountPointsOf } from '../../../lib/reset/cluster-state.ts';

const uid = '0a1b2c3d-1111-2222-3333-444455556666';
const ours = { kubelet: true } as Parameters<typeof mountIsOurs>[2];
const notOurs = { kubelet: false } as Parameters<typeof mountIsOurs>[2];

test('pod volumes and plugin mounts of our kubelet are ours; a bind mount elsewhere under its directory is not', () => {
  const cases: [string, boolean][] = [
    [`/var/lib/kubelet/pods/${uid}/volumes/kubernetes.io~projected/kube-api-access-abc`, true],
    [`/var/lib/kubelet/pods/${uid}/volume-subpaths/config/app/0`, true],
    ['/var/lib/kubelet/plugins/kubernetes.io/csi/x/globalmount', true],
    ['/var/lib/kubelet/pods/foreign-bind', false],
    ['/var/lib/kubelet/pods/backup/data', false],
    [`/var/lib/kubelet/pods/${uid}`, false],
    [`/var/lib/kubelet/pods/${uid.toUpperCase()}/volumes/x`, false],
    ['/var/lib/kubeletx/pods/x', false],
    ['/run/containerd/io.containerd.runtime.v2.task/k8s.io/abc/rootfs', true],
    ['/run/containerd/io.containerd.runtime.v2.task/moby/abc/rootfs', false],
    ['/srv/k8s.io/data', false],
  ];
  for (const [m, want] of cases) assert.equal(mountIsOurs(m, '/var/lib/kubelet', ours, []), want, m);
  assert.equal(mountIsOurs(`/var/lib/kubelet/pods/${uid}/volumes/x`, '/var/lib/kubelet', notOurs, []), false, 'not our kubelet: nothing of it');
  assert.equal(mountIsOurs('/run/netns/cni-1', '/var/lib/kubelet', ours, ['cni-1']), true);
  assert.equal(mountIsOurs('/run/netns/cni-2', '/var/lib/kubelet', ours, ['cni-1']), false);
});

test('mountinfo paths are decoded (space, tab, newline, backslash)', () => {
  assert.equal(decodeMountPath('/a\\040b\\011c\\012d\\134e'), '/a b\tc\nd\\e');
  const info = '36 35 98:0 / /mnt/with\\040space rw - ext4 /dev/x rw\n37 35 98:0 / /plain rw - ext4 /dev/x rw\n';
  assert.deepEqual(mountPointsOf(info), ['/mnt/with space', '/plain']);
});
