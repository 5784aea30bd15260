/** What reset treats as ours: the owned-path table against a sample config. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isOwned, OWN_CHAIN, OWN_LINK, ownedPaths } from '../../../lib/reset/owned.ts';
import { sampleConfig } from '../manifests/fixtures.ts';

test('PKI, kubeconfigs, kubeception manifests and kubelet state are ours; other files in the same dirs are not', () => {
  const c = sampleConfig();
  const owned = ownedPaths(c);
  const pki = c.certificatesDir;
  for (const p of [`${pki}/ca.key`, `${pki}/etcd/server.crt`, `${pki}/sa.pub`, '/etc/kubernetes/admin.conf', '/etc/kubernetes/bootstrap-scheduler.conf',
    `${c.distro.paths.staticPodPath}/bootstrap-kube-apiserver.yaml`, '/etc/kubernetes/recovery/volumes/secrets/apiserver.key', '/var/lib/kubelet/pods/x/volumes',
    '/etc/cni/net.d/10-flannel.conflist', '/run/flannel/subnet.env'])
    assert.ok(isOwned(p, owned), p);
  for (const p of [`${pki}/my-ca.crt`, '/etc/kubernetes/notes.txt', `${c.distro.paths.staticPodPath}/kube-vip.yaml`, '/etc/cni/net.d/10-bed.conflist', '/var/lib/kubelet/kubeadm-flags.env', '/etc/kubernetes'])
    assert.ok(!isOwned(p, owned), p);
});

test('link and chain patterns cover CNI, flannel and kube-proxy, not the host NIC or foreign chains', () => {
  for (const l of ['cni0', 'flannel.1', 'veth1a2b3c4d', 'kube-ipvs0']) assert.match(l, OWN_LINK);
  for (const l of ['eth0', 'lo', 'docker0', 'br0']) assert.doesNotMatch(l, OWN_LINK);
  for (const c of ['KUBE-SERVICES', 'CNI-abc', 'FLANNEL-POSTRTG']) assert.match(c, OWN_CHAIN);
  for (const c of ['DOCKER', 'INPUT', 'LIBVIRT_INP']) assert.doesNotMatch(c, OWN_CHAIN);
});
