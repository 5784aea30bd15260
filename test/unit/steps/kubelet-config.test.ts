/** The KubeletConfiguration kubeception writes: cgroup v1 hosts get failCgroupV1: false (v1.35 kubelets refuse v1 by default). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { kubeletConfiguration, kubeletHealthzUrl } from '../../../lib/steps/bootstrap/kubelet.ts';
import { sampleConfig } from '../pki/fixtures.ts';

test('failCgroupV1: false only on a cgroup v1 host; kubelet.extraConfig still wins', () => {
  const config = sampleConfig();
  assert.equal(kubeletConfiguration(config).failCgroupV1, undefined);
  assert.equal(kubeletConfiguration(config, { cgroupV1: false }).failCgroupV1, undefined);
  assert.equal(kubeletConfiguration(config, { cgroupV1: true }).failCgroupV1, false);
  const strict = { ...config, kubelet: { ...config.kubelet, extraConfig: { failCgroupV1: true } } };
  assert.equal(kubeletConfiguration(strict, { cgroupV1: true }).failCgroupV1, true);
});

test('the kubelet /healthz that ends its start-up watch: 127.0.0.1:10248 by default, moved or turned off by kubelet.extraConfig', () => {
  const config = sampleConfig();
  const withExtra = (extraConfig: Record<string, unknown>) => kubeletHealthzUrl({ ...config, kubelet: { ...config.kubelet, extraConfig } });
  assert.equal(kubeletHealthzUrl(config), 'http://127.0.0.1:10248/healthz');
  assert.equal(withExtra({ healthzPort: 10300 }), 'http://127.0.0.1:10300/healthz');
  assert.equal(withExtra({ healthzBindAddress: '0.0.0.0' }), 'http://127.0.0.1:10248/healthz');
  assert.equal(withExtra({ healthzBindAddress: '::' }), 'http://[::1]:10248/healthz');
  assert.equal(withExtra({ healthzBindAddress: '10.0.0.5' }), 'http://10.0.0.5:10248/healthz');
  assert.equal(withExtra({ healthzPort: 0 }), undefined);
});
