/**
 * Hardening defaults of the control-plane flags (CIS Kubernetes Benchmark 1.2.15, 1.3.2, 1.4.1):
 * `--profiling=false` on every component and instance, and `extraArgs` may turn it back on.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { apiServerFlags, controllerManagerFlags, schedulerFlags } from '../../../manifests/flags.ts';
import { sampleConfig } from './fixtures.ts';

const at = (f: string) => `/pki/${f}`;
const all = (config: ReturnType<typeof sampleConfig>) =>
  (['bootstrap', 'self-hosted'] as const).flatMap((i) => [
    ['kube-apiserver', i, apiServerFlags(config, at, 6443, i)],
    ['kube-controller-manager', i, controllerManagerFlags(config, at, '/k.conf', 10257, i)],
    ['kube-scheduler', i, schedulerFlags(config, '/k.conf', 10259, i)],
  ] as const);

test('profiling is off on every component, bootstrap and self-hosted', () => {
  for (const [c, i, flags] of all(sampleConfig())) assert.ok(flags.includes('--profiling=false'), `${c} (${i}): ${flags.join(' ')}`);
});

test('extraArgs turn profiling back on, per component', () => {
  const base = sampleConfig();
  const config = { ...base, scheduler: { ...base.scheduler, extraArgs: { profiling: 'true' } } };
  for (const [c, i, flags] of all(config)) assert.ok(flags.includes(c === 'kube-scheduler' ? '--profiling=true' : '--profiling=false'), `${c} (${i})`);
});
