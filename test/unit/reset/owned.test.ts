/** What reset treats as this cluster's: proof by record, by kubeception's marks, or by this cluster's components; the rest is foreign. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { linkIsOurs, proofOf, type OwnershipFacts } from '../../../lib/reset/ownership.ts';
import { decodeMountPath, mountIsOurs, mountPointsOf } from '../../../lib/reset/cluster-state.ts';
import { confirmReset } from '../../../lib/commands/reset.ts';
import { PassThrough } from 'node:stream';
import { sampleConfig } from '../manifests/fixtures.ts';

const c = sampleConfig();
const pki = c.certificatesDir;
const none = async () => undefined;
const ours: OwnershipFacts = { recorded: new Map([[`${pki}/ca.key`, 'file'], ['/etc/kubernetes/admin.conf', 'file'], ['/var/lib/kubelet/config.yaml', 'file']]), kubelet: true, flannel: true, networks: ['cbr0'], bridge: 'cni0', flannelConfOurs: true };
const kubeadmHost: OwnershipFacts = { kubelet: false, flannel: false, networks: [], flannelConfOurs: false };

test('recorded paths are ours; the same paths on a host with no manifest (kubeadm\'s PKI) are not', async () => {
  for (const p of [`${pki}/ca.key`, '/etc/kubernetes/admin.conf']) {
    assert.equal(await proofOf(c, ours, p, none), 'recorded', p);
    assert.equal(await proofOf(c, kubeadmHost, p, none), undefined, p);
  }
});

test('kubeception\'s names and headers are ours on any host; kubelet and CNI state only when this cluster\'s kubelet and network made it', async () => {
  for (const p of [`${pki}/kubeception-join.key`, `${c.distro.paths.staticPodPath}/bootstrap-kube-apiserver.yaml`, '/etc/kubernetes/recovery/volumes/secrets/apiserver.key', '/run/kubeception/x'])
    assert.ok(await proofOf(c, kubeadmHost, p, none), p);
  const header = async () => '# Written by kubeception.\n[Service]\n';
  assert.ok(await proofOf(c, kubeadmHost, '/etc/systemd/system/kubelet.service.d/20-kubeception.conf', header));
  assert.equal(await proofOf(c, kubeadmHost, '/etc/systemd/system/kubelet.service.d/20-kubeception.conf', async () => '[Service]\n'), undefined);
  for (const p of ['/var/lib/kubelet/pods/x', '/var/lib/kubelet/pki', '/var/lib/cni/networks/cbr0', '/var/lib/cni/results/cbr0-abc-eth0', '/run/flannel', '/etc/cni/net.d/10-flannel.conflist']) {
    assert.ok(await proofOf(c, ours, p, none), p);
    assert.equal(await proofOf(c, kubeadmHost, p, none), undefined, p);
  }
  for (const p of ['/var/lib/cni/networks/podman', '/var/lib/cni/results/podman-abc-eth0', '/etc/cni/net.d/87-podman-flannel.conflist', '/var/lib/kubelet/kubeadm-flags.env', `${pki}/my-ca.crt`])
    assert.equal(await proofOf(c, ours, p, none), undefined, p);
  assert.equal(await proofOf(c, { ...ours, flannelConfOurs: false }, '/etc/cni/net.d/10-flannel.conflist', none), undefined, 'a flannel config of other content');
});

test('links: the pod bridge and veths on it, flannel\'s devices; a veth of another runtime (no master, or docker0) is foreign', () => {
  assert.ok(linkIsOurs(ours, { ifname: 'cni0' }));
  assert.ok(linkIsOurs(ours, { ifname: 'veth1a2b3c4d', master: 'cni0' }));
  assert.ok(linkIsOurs(ours, { ifname: 'flannel.1' }));
  assert.ok(!linkIsOurs(ours, { ifname: 'veth3f2a1b9', master: 'docker0' }));
  assert.ok(!linkIsOurs(ours, { ifname: 'vethc0ffee01' }));
  assert.ok(!linkIsOurs(kubeadmHost, { ifname: 'cni0' }));
});

test('mountinfo: every octal escape decoded; only exact containerd k8s.io prefixes, pod volumes and our netns are ours', () => {
  assert.equal(decodeMountPath('/a\\040b\\011c\\012d\\134e'), '/a b\tc\nd\\e');
  const info = '36 35 98:0 / /var/lib/kubelet/pods/u/volumes/kubernetes.io~secret/a\\040b rw - tmpfs tmpfs rw\n37 35 98:0 / /srv/k8s.io/data rw - ext4 /dev/sda rw\n';
  assert.deepEqual(mountPointsOf(info), ['/var/lib/kubelet/pods/u/volumes/kubernetes.io~secret/a b', '/srv/k8s.io/data']);
  assert.ok(mountIsOurs('/var/lib/kubelet/pods/0a1b2c3d-1111-2222-3333-444455556666/volumes/x', '/var/lib/kubelet', ours, []));
  assert.ok(!mountIsOurs('/srv/k8s.io/data', '/var/lib/kubelet', ours, []), 'the old substring match took this');
  assert.ok(mountIsOurs('/run/containerd/io.containerd.runtime.v2.task/k8s.io/abc/rootfs', '/var/lib/kubelet', ours, []));
  assert.ok(mountIsOurs('/run/netns/cni-1', '/var/lib/kubelet', ours, ['cni-1']));
  assert.ok(!mountIsOurs('/run/netns/cni-2', '/var/lib/kubelet', ours, ['cni-1']));
  assert.ok(!mountIsOurs('/var/lib/kubelet/pods/u/volumes/x', '/var/lib/kubelet', kubeadmHost, []));
});

test('the reset prompt: refused (exit 2 error) on a stdin that is not a terminal; y proceeds, anything else does not', async () => {
  await assert.rejects(confirmReset(Object.assign(new PassThrough(), { isTTY: false }), () => undefined), (e: { code: string; badInput: boolean; fix: string }) => e.code === 'reset-not-confirmed' && e.badInput && /--force/.test(e.fix));
  for (const [answer, want] of [['y\n', true], ['yes\n', true], ['\n', false], ['n\n', false]] as const) {
    const tty = Object.assign(new PassThrough(), { isTTY: true });
    let asked = '';
    const r = confirmReset(tty, (s) => (asked += s));
    tty.write(answer);
    assert.equal(await r, want, answer);
    assert.match(asked, /\[reset\] Are you sure you want to proceed\? \[y\/N\]: $/);
  }
});
