/** The KubeletConfiguration kubeception writes: cgroup v1 hosts get failCgroupV1: false (v1.35 kubelets refuse v1 by default). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { kubeletConfiguration } from '../../../lib/steps/kubelet.ts';
import { sampleConfig } from '../pki/fixtures.ts';

test('failCgroupV1: false only on a cgroup v1 host; kubelet.extraConfig still wins', () => {
  const config = sampleConfig();
  assert.equal(kubeletConfiguration(config).failCgroupV1, undefined);
  assert.equal(kubeletConfiguration(config, { cgroupV1: false }).failCgroupV1, undefined);
  assert.equal(kubeletConfiguration(config, { cgroupV1: true }).failCgroupV1, false);
  const strict = { ...config, kubelet: { ...config.kubelet, extraConfig: { failCgroupV1: true } } };
  assert.equal(kubeletConfiguration(strict, { cgroupV1: true }).failCgroupV1, true);
});
