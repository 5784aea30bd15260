/**
 * The control-plane kubelet's serving certificate (lib/steps/bootstrap/kubelet-serving.ts) against real
 * files in a temp dir: signed by the cluster CA into the kubelet's store, kept on a re-run, re-issued
 * when the Node's addresses change; nothing without the CA key or with serverTLSBootstrap off.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { lstatSync, readlinkSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { RealFiles } from '../../../lib/host/files.ts';
import { ensureKubeletServingCert, kubeletServingCurrent } from '../../../lib/steps/bootstrap/kubelet-serving.ts';
import type { Context } from '../../../lib/context.ts';
import type { KubeletState } from '../../../lib/steps/contexts.ts';
import { copyOfFreshPki, openssl, removeDir, sampleConfig, tempDir } from '../pki/fixtures.ts';

const dirs: string[] = [];
after(() => Promise.all(dirs.map(removeDir)));

async function setup(over: Parameters<typeof sampleConfig>[0] = {}) {
  const pki = await copyOfFreshPki();
  const kubelet = await tempDir();
  dirs.push(pki, kubelet);
  const base = sampleConfig({ certificatesDir: pki, ...over });
  const config = { ...base, distro: { ...base.distro, paths: { ...base.distro.paths, kubeletConfigDir: kubelet } } };
  const state: KubeletState = { kubeletRestart: false, kubeletPrevious: undefined };
  const ctx = {
    config, state, files: new RealFiles(), log: { info: () => undefined, warn: () => undefined },
    sh: { exec: async (argv: string[]) => ({ code: 0, stdout: execFileSync(argv[0]!, argv.slice(1)).toString(), stderr: '' }) },
  } as unknown as Context<object, KubeletState>;
  return { ctx, pki, kubelet, state };
}

test("a control-plane node's serving certificate: the cluster CA's, for nodeName and advertiseAddress, 0600 in the kubelet's store; kept on a re-run", async () => {
  const { ctx, pki, kubelet, state } = await setup();
  assert.deepEqual(await ensureKubeletServingCert(ctx), ['serving certificate created']);
  assert.equal(state.kubeletRestart, true);
  const current = kubeletServingCurrent(ctx.config);
  assert.equal(current, join(kubelet, 'pki', 'kubelet-server-current.pem'));
  assert.ok(lstatSync(current).isSymbolicLink());
  assert.match(readlinkSync(current), /\/pki\/kubelet-server-\d{4}-\d\d-\d\d-\d\d-\d\d-\d\d\.pem$/);
  assert.equal(statSync(current).mode & 0o777, 0o600);
  assert.match(await openssl('verify', '-CAfile', join(pki, 'ca.crt'), current), /: OK/);
  const text = await openssl('x509', '-in', current, '-noout', '-subject', '-ext', 'subjectAltName,extendedKeyUsage');
  assert.match(text, /subject=O = system:nodes, CN = system:node:cp-1/);
  assert.match(text, /DNS:cp-1, IP Address:10\.250\.0\.2/);
  assert.match(text, /TLS Web Server Authentication/);
  assert.doesNotMatch(text, /Client Authentication/);
  assert.deepEqual(await ensureKubeletServingCert(ctx), [], 'kept');
});

test('re-issued when the address changes; nothing without the CA key or with serverTLSBootstrap off', async () => {
  const { ctx } = await setup();
  await ensureKubeletServingCert(ctx);
  const moved = { ...ctx, config: { ...ctx.config, localAPIEndpoint: { ...ctx.config.localAPIEndpoint, advertiseAddress: '10.250.0.9' } } } as typeof ctx;
  assert.deepEqual(await ensureKubeletServingCert(moved), ['serving certificate reissued']);
  assert.match(await openssl('x509', '-in', kubeletServingCurrent(ctx.config), '-noout', '-ext', 'subjectAltName'), /IP Address:10\.250\.0\.9/);
  const w = await setup();
  const offFresh = { ...w.ctx, config: { ...w.ctx.config, kubelet: { ...w.ctx.config.kubelet, extraConfig: { serverTLSBootstrap: false } } } } as typeof ctx;
  assert.deepEqual(await ensureKubeletServingCert(offFresh), []);
  execFileSync('rm', [join(w.pki, 'ca.key')]);
  assert.deepEqual(await ensureKubeletServingCert(w.ctx), [], 'a worker (no CA key) asks by CSR');
  assert.equal(await w.ctx.files.exists(kubeletServingCurrent(w.ctx.config)), false);
});
