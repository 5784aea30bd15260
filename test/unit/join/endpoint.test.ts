/** controlPlaneEndpoint in cluster-info's server and the printed join command (its secrets in the environment). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { controlPlaneUrl } from '../../../lib/k8s/endpoints.ts';
import { joinCommand } from '../../../lib/join/tokens-api.ts';
import { ipv6Config, sampleConfig } from '../manifests/fixtures.ts';
import { printedJoin } from '../../helpers/join-command.ts';

test('cluster-info server and join URL: controlPlaneEndpoint (port defaults to bindPort), else the advertise address', () => {
  assert.equal(controlPlaneUrl(sampleConfig()), 'https://10.250.0.2:6443');
  assert.equal(controlPlaneUrl(sampleConfig({ controlPlaneEndpoint: 'cp.example.com' })), 'https://cp.example.com:6443');
  assert.equal(controlPlaneUrl(sampleConfig({ controlPlaneEndpoint: 'cp.example.com:8443' })), 'https://cp.example.com:8443');
  assert.equal(controlPlaneUrl(sampleConfig({ controlPlaneEndpoint: '[fd00::10]:7443' })), 'https://[fd00::10]:7443');
  assert.equal(controlPlaneUrl(ipv6Config()), 'https://[fd00:20::2]:6443');
});

test('the printed join command passes the token and the certificate key in the environment, never on the command line', () => {
  const config = sampleConfig({ controlPlaneEndpoint: 'cp.example.com:8443' });
  const worker = joinCommand(config, 'abcdef.0123456789abcdef', 'sha256:00');
  assert.equal(worker, 'KUBECEPTION_TOKEN=abcdef.0123456789abcdef npx kubeception run join --url https://cp.example.com:30000 --ca-cert-hash sha256:00');
  const key = 'f'.repeat(64);
  const cp = joinCommand(config, 'abcdef.0123456789abcdef', 'sha256:00', { certificateKey: key });
  assert.equal(cp, `KUBECEPTION_TOKEN=abcdef.0123456789abcdef KUBECEPTION_CERTIFICATE_KEY=${key} npx kubeception run join --url https://cp.example.com:30000 --ca-cert-hash sha256:00 --control-plane`);
  // What a process list would show: the words after the environment assignments.
  for (const cmd of [worker, cp]) {
    const argv = cmd.split(' ').filter((w) => !/^[A-Z_]+=/.test(w));
    assert.ok(!argv.some((w) => w.includes('0123456789abcdef') || w.includes(key)), argv.join(' '));
    assert.ok(!argv.includes('--token') && !argv.includes('--certificate-key'));
  }
  // The e2e suites and bench/join.ts run what was printed through test/helpers/join-command.ts.
  assert.deepEqual(printedJoin(`\n  ${cp}\n`), { env: { KUBECEPTION_TOKEN: 'abcdef.0123456789abcdef', KUBECEPTION_CERTIFICATE_KEY: key }, args: ['--url', 'https://cp.example.com:30000', '--ca-cert-hash', 'sha256:00', '--control-plane'], token: 'abcdef.0123456789abcdef', certificateKey: key });
  assert.deepEqual(printedJoin(worker).env, { KUBECEPTION_TOKEN: 'abcdef.0123456789abcdef' });
  assert.throws(() => printedJoin('npx kubeception run join --url u --token abcdef.0123456789abcdef --ca-cert-hash h'), /secret on the command line/);
});
