/** controlPlaneEndpoint in cluster-info's server and the printed join command. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { controlPlaneUrl } from '../../../lib/k8s/endpoints.ts';
import { joinCommand } from '../../../lib/join/tokens-api.ts';
import { ipv6Config, sampleConfig } from '../manifests/fixtures.ts';

test('cluster-info server and join URL: controlPlaneEndpoint (port defaults to bindPort), else the advertise address', () => {
  assert.equal(controlPlaneUrl(sampleConfig()), 'https://10.250.0.2:6443');
  assert.equal(controlPlaneUrl(sampleConfig({ controlPlaneEndpoint: 'cp.example.com' })), 'https://cp.example.com:6443');
  assert.equal(controlPlaneUrl(sampleConfig({ controlPlaneEndpoint: 'cp.example.com:8443' })), 'https://cp.example.com:8443');
  assert.equal(controlPlaneUrl(sampleConfig({ controlPlaneEndpoint: '[fd00::10]:7443' })), 'https://[fd00::10]:7443');
  assert.equal(controlPlaneUrl(ipv6Config()), 'https://[fd00:20::2]:6443');
  const cmd = joinCommand(sampleConfig({ controlPlaneEndpoint: 'cp.example.com:8443' }), 'abcdef.0123456789abcdef', 'sha256:00');
  assert.equal(cmd, 'npx kubeception run join --url https://cp.example.com:30000 --token abcdef.0123456789abcdef --ca-cert-hash sha256:00');
});
