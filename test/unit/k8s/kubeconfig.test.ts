/** Kubeconfigs that cannot be read are errors, not "no key yet" or "apiserver not ready yet". */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseKubeconfig, renderKubeconfig } from '../../../lib/k8s/kubeconfig.ts';
import { probeApiserver } from '../../../lib/k8s/apiserver.ts';
import { ensureKubeconfigs } from '../../../lib/steps/bootstrap/kubeconfig.ts';
import { DryRunFiles } from '../../../lib/host/files-dry-run.ts';
import { copyOfFreshPki, removeDir, sampleConfig } from '../pki/fixtures.ts';

test('parseKubeconfig: garbage and non-mappings report an error; a rendered one parses', () => {
  assert.ok(parseKubeconfig('{{{ not yaml', 'x').error);
  assert.ok(parseKubeconfig('- a list', 'x').error);
  const ok = parseKubeconfig(renderKubeconfig({ server: 'https://1.2.3.4:6443', caPem: 'CA', user: 'u', certPem: 'C', keyPem: 'K' }), 'x');
  assert.equal(ok.error, undefined);
  assert.equal(ok.keyPem, 'K');
});

function filesWith(entries: Record<string, string>) {
  const files = new DryRunFiles();
  return Object.assign(files, { read: async (p: string) => entries[p], exists: async (p: string) => p in entries });
}

test('probeApiserver: a missing admin.conf is "not yet", a corrupt one throws naming the file', async () => {
  const config = sampleConfig();
  assert.equal(await probeApiserver({ config, files: filesWith({}) }, 'final'), 'no admin kubeconfig yet');
  await assert.rejects(probeApiserver({ config, files: filesWith({ '/etc/kubernetes/admin.conf': ': : garbage' }) }, 'final'), (e: any) => e.code === 'kubeconfig-invalid' && e.what === '/etc/kubernetes/admin.conf');
});

test('the kubeconfig step refuses an unparsable kubeconfig instead of issuing a new key', async () => {
  const config = sampleConfig();
  const files = filesWith({ '/etc/kubernetes/pki/ca.crt': 'CA', '/etc/kubernetes/pki/ca.key': 'KEY', '/etc/kubernetes/admin.conf': 'clusters: [oops' });
  const ctx = { config, files, log: { info() {}, warn() {} }, dryRun: true } as never;
  await assert.rejects(ensureKubeconfigs(ctx), (e: any) => e.code === 'kubeconfig-unreadable' && e.what === '/etc/kubernetes/admin.conf' && /mv /.test(e.fix));
});

test('controlPlaneEndpoint: admin.conf names it; the controllers\' kubeconfigs (shared by every control-plane node) name loopback, the bootstrap ones this node', async () => {
  const pki = await copyOfFreshPki();
  try {
    const base = sampleConfig();
    const config = { ...base, certificatesDir: pki, controlPlaneEndpoint: 'cp.example.com', distro: { ...base.distro, paths: { ...base.distro.paths, secretsDir: '/nonexistent-kc-test', kubeletConfigDir: '/nonexistent-kc-test/kubelet', certificatesDir: pki } } };
    const files = new DryRunFiles();
    const ctx = { config, files, log: { info() {}, warn() {} }, dryRun: true, state: {}, sh: { exec: async () => ({ stdout: '', stderr: '', code: 0 }) } } as never;
    await ensureKubeconfigs(ctx);
    const server = async (f: string) => parseKubeconfig((await files.read(`/nonexistent-kc-test/${f}`))!, f).server;
    assert.equal(await server('admin.conf'), 'https://cp.example.com:6443');
    assert.equal(await server('controller-manager.conf'), 'https://127.0.0.1:6443');
    assert.equal(await server('scheduler.conf'), 'https://127.0.0.1:6443');
    assert.equal(await server('bootstrap-admin.conf'), 'https://10.250.0.2:6444');
  } finally {
    await removeDir(pki);
  }
});
