/**
 * `alreadyJoined` (join's skip condition) on real files in a temp dir: a kubelet client certificate
 * from this cluster's CA counts; one from another CA, or an expired one, does not (the kubelet cannot
 * start with it, so a re-run must request a new one rather than skip).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RealFiles } from '../../../lib/host/files.ts';
import { alreadyJoined } from '../../../lib/steps/join/join.ts';
import { renderKubeconfig } from '../../../lib/k8s/kubeconfig.ts';
import type { RunContext as Context } from '../../../lib/run-options.ts';
import { sampleConfig } from '../pki/fixtures.ts';

let dir: string;
let ctx: Context;
const ossl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });

/** A client certificate + key (one PEM, as the kubelet's store keeps it) for system:node:w1, signed by the CA in dir `ca`, valid `days` days (`0`: it expires the second it is issued). */
function leaf(ca: string, days: string): string {
  ossl('req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', 'l.key', '-subj', '/O=system:nodes/CN=system:node:w1', '-out', 'l.csr');
  ossl('x509', '-req', '-in', 'l.csr', '-CA', `${ca}/ca.crt`, '-CAkey', `${ca}/ca.key`, '-set_serial', '9', '-days', days, '-out', 'l.crt');
  return execFileSync('cat', ['l.crt', 'l.key'], { cwd: dir }).toString();
}

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'joined-'));
  for (const ca of ['pki', 'other']) {
    execFileSync('mkdir', ['-p', join(dir, ca)]);
    ossl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', `${ca}/ca.key`, '-subj', `/CN=${ca}`, '-days', '2', '-out', `${ca}/ca.crt`);
  }
  const config = sampleConfig({ certificatesDir: join(dir, 'pki') });
  config.distro.paths.kubeletConfigDir = join(dir, 'kubelet');
  execFileSync('mkdir', ['-p', join(dir, 'kubelet', 'pki')]);
  ctx = { files: new RealFiles(), config } as unknown as Context;
});
after(() => rmSync(dir, { recursive: true, force: true }));

function install(pem: string) {
  const certFile = join(dir, 'kubelet', 'pki', 'kubelet-client-current.pem');
  writeFileSync(certFile, pem);
  writeFileSync(join(dir, 'kubelet', 'kubeconfig'), renderKubeconfig({ server: 'https://10.250.9.9:6443', caPem: '', user: 'system:node:w1', certFile }));
}

test('no kubelet kubeconfig: not joined', async () => {
  assert.equal(await alreadyJoined(ctx), false);
});

test('a valid certificate from this cluster CA: joined', async () => {
  install(leaf(join(dir, 'pki'), '1'));
  assert.match(String(await alreadyJoined(ctx)), /already joined/);
});

test('a certificate from another CA: not joined', async () => {
  install(leaf(join(dir, 'other'), '1'));
  assert.equal(await alreadyJoined(ctx), false);
});

test('an expired certificate from this cluster CA: not joined (a re-run requests a new one)', async () => {
  install(leaf(join(dir, 'pki'), '0'));
  await new Promise((r) => setTimeout(r, 1_100)); // -days 0: valid until the second it was issued
  assert.equal(await alreadyJoined(ctx), false);
});
