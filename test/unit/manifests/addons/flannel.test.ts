/** The flannel addon's objects (manifests/addons/flannel.ts): the network, the backend, the CNI config, host paths. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1ConfigMap, V1DaemonSet } from '@kubernetes/client-node';
import { CNI_BIN_DIR, CNI_CONF_DIR, FLANNEL_CONFIG_DIGEST, FLANNEL_CONFLIST, flannelObjects } from '../../../../manifests/addons/flannel.ts';
import { find, ipv6Config, sampleConfig } from '../fixtures.ts';

const netConf = (objects: ReturnType<typeof flannelObjects>) => JSON.parse((find(objects as never, 'ConfigMap', 'kube-flannel-cfg') as V1ConfigMap).data!['net-conf.json']!);

describe('flannelObjects', () => {
  const config = sampleConfig();
  const objects = flannelObjects(config);
  const ds = find(objects as never, 'DaemonSet', 'kube-flannel-ds') as V1DaemonSet;
  const pod = ds.spec!.template.spec!;

  it('Network is podSubnet (the range node podCIDRs come from), vxlan by default, host-gw on request', () => {
    assert.deepEqual(netConf(objects), { Network: '10.244.0.0/16', EnableNFTables: false, Backend: { Type: 'vxlan' } });
    const hostGw = sampleConfig({ podNetwork: { plugin: 'flannel', flannel: { ...config.podNetwork.flannel, backend: 'host-gw' } } });
    assert.deepEqual(netConf(flannelObjects(hostGw)).Backend, { Type: 'host-gw' });
    assert.deepEqual(netConf(flannelObjects(ipv6Config())), { EnableIPv4: false, EnableIPv6: true, IPv6Network: 'fd00:244::/56', EnableNFTables: false, Backend: { Type: 'vxlan' } });
  });

  it('the pod template carries a digest of the ConfigMap: a new backend rolls flanneld (it reads its config only at start), the same config does not', () => {
    const digest = (o: ReturnType<typeof flannelObjects>) => (find(o as never, 'DaemonSet', 'kube-flannel-ds') as V1DaemonSet).spec!.template.metadata!.annotations![FLANNEL_CONFIG_DIGEST];
    assert.match(digest(objects)!, /^[0-9a-f]{64}$/);
    assert.equal(digest(flannelObjects(sampleConfig())), digest(objects));
    const hostGw = sampleConfig({ podNetwork: { plugin: 'flannel', flannel: { ...config.podNetwork.flannel, backend: 'host-gw' } } });
    assert.notEqual(digest(flannelObjects(hostGw)), digest(objects));
    assert.notEqual(digest(flannelObjects(ipv6Config())), digest(objects));
  });

  it('the CNI config delegates to bridge through the flannel plugin, then portmap', () => {
    const cni = JSON.parse((find(objects as never, 'ConfigMap', 'kube-flannel-cfg') as V1ConfigMap).data!['cni-conf.json']!);
    assert.deepEqual(cni.plugins.map((p: { type: string }) => p.type), ['flannel', 'portmap']);
  });

  it('installs its plugin and config on the host, runs flanneld with the kube subnet manager', () => {
    const [plugin, conf] = pod.initContainers!;
    assert.deepEqual(plugin!.args, ['-f', '/flannel', `${CNI_BIN_DIR}/flannel`]);
    assert.equal(plugin!.image, config.podNetwork.flannel.cniPluginImage);
    assert.deepEqual(conf!.args, ['-f', '/etc/kube-flannel/cni-conf.json', `${CNI_CONF_DIR}/${FLANNEL_CONFLIST}`]);
    const c = pod.containers[0]!;
    assert.deepEqual(c.args, ['--ip-masq', '--kube-subnet-mgr']);
    assert.equal(c.image, config.podNetwork.flannel.image);
    assert.deepEqual(c.securityContext, { privileged: false, capabilities: { add: ['NET_ADMIN', 'NET_RAW'] } });
    assert.equal(pod.hostNetwork, true);
    assert.equal(pod.priorityClassName, 'system-node-critical');
    assert.deepEqual(pod.volumes!.filter((v) => v.hostPath).map((v) => v.hostPath!.path).sort(), ['/etc/cni/net.d', '/opt/cni/bin', '/run/flannel', '/run/xtables.lock']);
  });

  it('can read and patch Nodes (podCIDR, NetworkUnavailable), nothing more', () => {
    const role = find(objects as never, 'ClusterRole', 'flannel') as unknown as { rules: { resources: string[]; verbs: string[] }[] };
    assert.deepEqual(role.rules.map((r) => `${r.resources}:${r.verbs}`), ['pods:get', 'nodes:get,list,watch', 'nodes/status:patch']);
  });
});
