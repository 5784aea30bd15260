/**
 * Address math of lib/net/cidr.ts: the indexed addresses of a service subnet (the `kubernetes`
 * Service's first address, the `kube-dns` Service's tenth), for odd prefixes and IPv6, and the
 * kubelet's clusterDNS taken from the same value.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clusterDNSIP, firstServiceIP, indexedIP } from '../../../lib/net/cidr.ts';
import { kubeletConfiguration } from '../../../lib/steps/bootstrap/kubelet.ts';
import { kubeDNSService } from '../../../manifests/addons/coredns.ts';
import { sampleConfig } from '../pki/fixtures.ts';

const dnsCases: [string, string, string][] = [
  // serviceSubnet, kubernetes Service IP, kube-dns Service IP
  ['10.96.0.0/12', '10.96.0.1', '10.96.0.10'],
  ['10.96.0.64/26', '10.96.0.65', '10.96.0.74'],
  ['10.96.0.16/28', '10.96.0.17', '10.96.0.26'],
  ['172.16.255.240/28', '172.16.255.241', '172.16.255.250'],
  ['fd00:96::/108', 'fd00:96::1', 'fd00:96::a'],
  ['fd00:96::fff0/124', 'fd00:96::fff1', 'fd00:96::fffa'],
  ['2001:db8:0:1::/64', '2001:db8:0:1::1', '2001:db8:0:1::a'],
];

for (const [subnet, first, dns] of dnsCases)
  test(`service subnet ${subnet}: kubernetes ${first}, kube-dns ${dns}`, () => {
    assert.equal(firstServiceIP(subnet), first);
    assert.equal(clusterDNSIP(subnet), dns);
  });

test('indexedIP carries across bytes and refuses addresses outside the subnet', () => {
  assert.equal(indexedIP('10.0.0.0/8', 300), '10.0.1.44');
  assert.equal(indexedIP('fd00::ff00/120', 255), 'fd00::ffff');
  assert.equal(indexedIP('10.96.0.0/28', 15), '10.96.0.15');
  assert.throws(() => indexedIP('10.96.0.0/28', 16), /has 16 addresses/);
  assert.throws(() => clusterDNSIP('10.96.0.0/29'), /has 8 addresses; it has no address number 10/);
  assert.throws(() => clusterDNSIP('fd00:96::/125'), /has 8 addresses/);
  assert.throws(() => clusterDNSIP('10.96.0.1/24'), /host bits/);
});

for (const [subnet, first, dns] of dnsCases)
  test(`kubelet clusterDNS = kube-dns ClusterIP ≠ kubernetes Service IP (${subnet})`, () => {
    const config = sampleConfig({ networking: { podSubnet: subnet.includes(':') ? 'fd00:244::/48' : '10.244.0.0/16', serviceSubnet: subnet, dnsDomain: 'cluster.local' } });
    const kubelet = kubeletConfiguration(config);
    assert.deepEqual(kubelet.clusterDNS, [dns]);
    assert.equal(kubeDNSService(config).spec?.clusterIP, dns);
    assert.notEqual(dns, first);
  });
