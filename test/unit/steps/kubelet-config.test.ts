/** The KubeletConfiguration kubeception writes: cgroup v1 hosts get failCgroupV1: false (v1.35 kubelets refuse v1 by default). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { kubeletConfiguration, kubeletHealthzUrl, renderKubeletDropIn } from '../../../lib/steps/bootstrap/kubelet.ts';
import { kernelTunablesCheck, KUBELET_SYSCTLS, renderKubeletSysctls, tunablesFailure } from '../../../lib/steps/bootstrap/kernel-tunables.ts';
import { kubeletServingSpec } from '../../../lib/steps/bootstrap/kubelet-serving.ts';
import type { Context } from '../../../lib/context.ts';
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

test('CIS defaults: serverTLSBootstrap, protectKernelDefaults, rotateCertificates on, the read-only port off; kubelet.extraConfig turns the first three off', () => {
  const config = sampleConfig();
  const kc = kubeletConfiguration(config);
  assert.deepEqual([kc.serverTLSBootstrap, kc.protectKernelDefaults, kc.rotateCertificates, kc.readOnlyPort], [true, true, true, 0]);
  const off = { ...config, kubelet: { ...config.kubelet, extraConfig: { serverTLSBootstrap: false, protectKernelDefaults: false, rotateCertificates: false } } };
  const k2 = kubeletConfiguration(off);
  assert.deepEqual([k2.serverTLSBootstrap, k2.protectKernelDefaults, k2.rotateCertificates], [false, false, false]);
});

test("the drop-in names kubeception's certificate store as the kubelet's --cert-dir", () => {
  assert.match(renderKubeletDropIn(sampleConfig(), '/usr/bin/kubelet'), / --cert-dir=\/var\/lib\/kubelet\/pki /);
});

test("the serving certificate a control-plane node signs itself carries the Node's addresses: nodeName and advertiseAddress", () => {
  const s = kubeletServingSpec(sampleConfig());
  assert.deepEqual([s.commonName, s.organizations, s.usages, s.altNames], ['system:node:cp-1', ['system:nodes'], ['serverAuth'], { dnsNames: ['cp-1'], ipAddresses: ['10.250.0.2'] }]);
});

test('KernelTunables: a value the kubelet needs that /proc/sys cannot take is named with the fix; none when they match', async () => {
  const ctx = (values: Record<string, string>, extraConfig: Record<string, unknown> = {}) => {
    const config = sampleConfig();
    return { config: { ...config, kubelet: { ...config.kubelet, extraConfig } }, files: { read: async (p: string) => values[p.slice('/proc/sys/'.length).replace(/\//g, '.')] } } as unknown as Context;
  };
  assert.equal(await kernelTunablesCheck.run(ctx({ ...KUBELET_SYSCTLS })), undefined);
  const bad = tunablesFailure([{ key: 'kernel.panic', have: '0', want: '10', writable: false }, { key: 'vm.overcommit_memory', have: '0', want: '1', writable: true }]);
  assert.match(bad?.message ?? '', /while kernel\.panic is 0 \(it needs 10\), and \/proc\/sys is read-only here \(a container\?\): neither kubeception nor the kubelet can set it/);
  assert.doesNotMatch(bad?.message ?? '', /overcommit/, 'a writable one is set by the kubelet-config step, not refused');
  assert.match(bad?.fix ?? '', /^set kernel\.panic=10 where the kernel is owned/);
  assert.equal(tunablesFailure([{ key: 'vm.overcommit_memory', have: '0', want: '1', writable: true }]), undefined);
  assert.equal(await kernelTunablesCheck.run(ctx({ ...KUBELET_SYSCTLS }, { protectKernelDefaults: false })), undefined);
  assert.match(renderKubeletSysctls(), /^vm\.overcommit_memory = 1$/m);
});
