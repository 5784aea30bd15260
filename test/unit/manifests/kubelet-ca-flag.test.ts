/** CIS 1.2.5: both apiservers verify kubelet serving certificates against the cluster CA, unless `serverTLSBootstrap` is off. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { apiServerFlags } from '../../../manifests/flags.ts';
import { sampleConfig } from './fixtures.ts';

const at = (f: string) => `/pki/${f}`;

test('both apiservers verify kubelet serving certificates against the cluster CA (CIS 1.2.5), unless serverTLSBootstrap is turned off', () => {
  for (const i of ['bootstrap', 'self-hosted'] as const) assert.ok(apiServerFlags(sampleConfig(), at, 6443, i).includes('--kubelet-certificate-authority=/pki/ca.crt'), i);
  const base = sampleConfig();
  const off = { ...base, kubelet: { ...base.kubelet, extraConfig: { serverTLSBootstrap: false } } };
  for (const i of ['bootstrap', 'self-hosted'] as const) assert.ok(!apiServerFlags(off, at, 6443, i).some((f) => f.startsWith('--kubelet-certificate-authority')), i);
});
