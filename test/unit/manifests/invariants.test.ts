/**
 * Invariants across every manifest builder: deterministic plain data, IPv6 URLs bracketed,
 * namespaces, images, and the port scheme (no two listeners on one node share a port).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Container, V1PodSpec } from '@kubernetes/client-node';
import { ETCD_CLIENT_PORT, ETCD_PEER_PORT, KUBELET_PORT } from '../../../lib/constants.ts';
import type { ResolvedConfig } from '../../../lib/types.ts';
import { fromYaml } from '../../../lib/util/yaml.ts';
import { controlPlanePorts, type ManifestObject } from '../../../manifests/common.ts';
import { kubeProxyObjects } from '../../../manifests/addons/kube-proxy.ts';
import { selfHostedObjects } from '../../../manifests/self-hosted.ts';
import { bootstrapStaticPods } from '../../../manifests/static-pods.ts';
import { allStrings, flagsOf, ipv6Config, podSpecOf, sampleConfig, sampleInputs } from './fixtures.ts';

/** Everything the builders produce for one config: static pods, self-hosted objects, kube-proxy. */
function everything(config: ResolvedConfig) {
  return {
    staticPods: bootstrapStaticPods(config),
    objects: [...selfHostedObjects(config, sampleInputs(config)), ...kubeProxyObjects(config)] as ManifestObject[],
  };
}

const CLUSTER_SCOPED = new Set(['ClusterRoleBinding', 'ClusterRole', 'Namespace', 'PriorityClass']);

/**
 * TCP ports a hostNetwork container listens on, from its flags or (kube-proxy) its config, with the
 * binaries' defaults where a flag is absent.
 */
function listenPorts(container: V1Container, kubeProxyConf: { healthzBindAddress?: string; metricsBindAddress?: string }): number[] {
  const f = flagsOf(container);
  const defaults: Record<string, number> = { 'kube-apiserver': 6443, 'kube-controller-manager': 10257, 'kube-scheduler': 10259 };
  const binary = container.command![0]!.split('/').pop()!;
  if (binary === 'kube-proxy') {
    const port = (addr: string | undefined, dflt: number) => (addr ? Number(addr.split(':').pop()) : dflt);
    return [port(kubeProxyConf.healthzBindAddress, 10256), port(kubeProxyConf.metricsBindAddress, 10249)];
  }
  return [Number(f.get('secure-port') ?? defaults[binary])];
}

describe('manifest invariants', () => {
  for (const [family, config] of [['IPv4', sampleConfig()], ['IPv6', ipv6Config()]] as const) {
    it(`${family}: the same config gives deep-equal output (no timestamps, no randomness)`, () => {
      assert.deepEqual(everything(config), everything(config));
    });

    it(`${family}: output is plain JSON data (round-trips unchanged; no undefined, no class instances)`, () => {
      const all = everything(config);
      assert.deepEqual(JSON.parse(JSON.stringify(all)), all);
    });

    it(`${family}: no two calls share a nested object (editing one manifest cannot change another)`, () => {
      const seen = new Set<object>();
      const walk = (v: unknown) => {
        if (!v || typeof v !== 'object') return;
        assert.ok(!seen.has(v), `shared object ${JSON.stringify(v).slice(0, 80)}`);
        seen.add(v);
        for (const x of Object.values(v)) walk(x);
      };
      walk(everything(config));
    });

    it(`${family}: every namespaced object is in kube-system, cluster-scoped ones have no namespace`, () => {
      const { staticPods, objects } = everything(config);
      for (const o of [...staticPods.map((p) => p.pod), ...objects]) {
        const expected = CLUSTER_SCOPED.has(o.kind!) ? undefined : 'kube-system';
        assert.equal(o.metadata!.namespace, expected, `${o.kind}/${o.metadata!.name}`);
      }
    });
  }

  it('IPv6: every URL brackets fd00:20::2, in flags, kubeconfigs (Secrets, ConfigMap) and configs', () => {
    const strings = allStrings(everything(ipv6Config()));
    const urls = strings.flatMap((s) => s.match(/https?:\/\/[^\s"',]+/g) ?? []);
    assert.ok(urls.some((u) => u.startsWith('https://[fd00:20::2]:6443')), 'the final apiserver URL appears');
    for (const u of urls) assert.doesNotMatch(u, /^https?:\/\/[0-9a-f]*:[0-9a-f:]*:/i, `unbracketed IPv6 in ${u}`);
    assert.ok(!strings.some((s) => s.includes('fd00:20::2:')), 'no fd00:20::2:<port>');
  });

  it('images come from imageRepository at kubernetesVersion', () => {
    const config = sampleConfig({ imageRepository: 'registry.example.com:5000/k8s', kubernetesVersion: 'v1.34.9' });
    const { staticPods, objects } = everything(config);
    const specs = [...staticPods.map((p) => p.pod.spec!), ...objects.map(podSpecOf).filter((s): s is V1PodSpec => !!s)];
    const images = specs.flatMap((s) => s.containers.map((c) => c.image!));
    assert.equal(images.length, 7);
    for (const i of images) assert.match(i, /^registry\.example\.com:5000\/k8s\/kube-(apiserver|controller-manager|scheduler|proxy):v1\.34\.9$/);
    for (const s of specs) for (const c of s.containers) assert.equal(c.imagePullPolicy, 'IfNotPresent');
  });

  for (const [label, config] of [
    ['defaults', sampleConfig()],
    ['custom ports', sampleConfig({ localAPIEndpoint: { advertiseAddress: '10.250.0.2', bindPort: 443 }, bootstrapAPIEndpoint: { bindPort: 8443 } })],
    ['IPv6', ipv6Config()],
  ] as const) {
    it(`${label}: no two listeners of one node share a port (bootstrap ∪ self-hosted ∪ kube-proxy ∪ etcd ∪ kubelet)`, () => {
      const { staticPods, objects } = everything(config);
      const cm = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'kube-proxy') as { data: Record<string, string> };
      const proxyConf = fromYaml(cm.data['config.conf']!, 'config.conf') as Record<string, string>;
      const groups: [string, V1PodSpec[]][] = [
        ['bootstrap', staticPods.map((p) => p.pod.spec!)],
        ['self-hosted', objects.map(podSpecOf).filter((s): s is V1PodSpec => !!s)],
      ];
      const owners = new Map<number, string>([
        [ETCD_CLIENT_PORT, 'etcd'], [ETCD_PEER_PORT, 'etcd'], [2381, 'etcd metrics'], [KUBELET_PORT, 'kubelet'], [10248, 'kubelet healthz'],
      ]);
      for (const [group, specs] of groups)
        for (const spec of specs) {
          assert.equal(spec.hostNetwork, true);
          for (const c of spec.containers)
            for (const port of listenPorts(c, proxyConf)) {
              const who = `${group} ${c.name}`;
              assert.ok(!owners.has(port), `port ${port}: ${who} and ${owners.get(port)}`);
              owners.set(port, who);
            }
        }
      // etcd and kubelet: 5; bootstrap and self-hosted control planes: 3 + 3; kube-proxy: healthz and metrics.
      assert.equal(owners.size, 5 + 6 + 2);
    });
  }

  it('the bootstrap apiserver port differs from the final one, and the scheme says so', () => {
    const ports = controlPlanePorts(sampleConfig());
    assert.deepEqual(ports, {
      bootstrap: { apiServer: 6444, controllerManager: 10357, scheduler: 10359 },
      selfHosted: { apiServer: 6443, controllerManager: 10257, scheduler: 10259 },
    });
    const api = (objs: string[] | undefined) => objs?.find((a) => a.startsWith('--secure-port='));
    const { staticPods, objects } = everything(sampleConfig());
    const final = podSpecOf(objects.find((o) => o.kind === 'DaemonSet' && o.metadata.name === 'kube-apiserver')!)!.containers[0]!.command;
    assert.deepEqual([api(staticPods[0]!.pod.spec!.containers[0]!.command), api(final)], ['--secure-port=6444', '--secure-port=6443']);
  });
});
