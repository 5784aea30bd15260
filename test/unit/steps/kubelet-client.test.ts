/**
 * The kubelet client certificate file (lib/steps/bootstrap/kubelet-client.ts): PEM split; and writeKubeletClient
 * with real files, the real sh wrapper and a real symlink in a temporary kubelet directory — a new
 * pair is written as the kubelet's store does (a stamped file 0600 in pki/ 0700, the
 * kubelet-client-current.pem symlink to it, the kubelet marked for a restart); the same pair with
 * other line endings is not rewritten; a changed pair gets a new file and the symlink moves.
 */
import assert from 'node:assert/strict';
import { lstatSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { kubeletClientCurrent, splitPem, writeKubeletClient } from '../../../lib/steps/bootstrap/kubelet-client.ts';
import { RealFiles } from '../../../lib/host/files.ts';
import { RealShell } from '../../../lib/host/sh.ts';
import { sampleConfig } from '../pki/fixtures.ts';
import type { RunContext as Context } from '../../../lib/run-options.ts';

test('splitPem finds the certificate and key in either order, CRLF or LF', () => {
  const cert = '-----BEGIN CERTIFICATE-----\r\nAAA\r\n-----END CERTIFICATE-----\r\n';
  const key = '-----BEGIN RSA PRIVATE KEY-----\nBBB\n-----END RSA PRIVATE KEY-----\n';
  const r = splitPem(`${key}${cert}`);
  assert.match(r.certPem!, /^-----BEGIN CERTIFICATE-----[\s\S]*AAA[\s\S]*-----END CERTIFICATE-----\n$/);
  assert.equal(r.keyPem, key);
  assert.deepEqual(splitPem('nothing'), {});
});

const dir = mkdtempSync(join(tmpdir(), 'kc-kubelet-client-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const config = sampleConfig();
const ctxFor = () => ({ config: { ...config, distro: { ...config.distro, paths: { ...config.distro.paths, kubeletConfigDir: dir } } }, files: new RealFiles(), sh: new RealShell(), state: {} }) as unknown as Context;
const pem = (kind: string, body: string) => `-----BEGIN ${kind}-----\n${body}\n-----END ${kind}-----\n`;
const pki = join(dir, 'pki');
const current = join(pki, 'kubelet-client-current.pem');

test('writeKubeletClient: a new pair, the same pair in CRLF (kept), a changed pair (new file, symlink moved)', async () => {
  const [cert1, key1] = [pem('CERTIFICATE', 'MIIBcert1AAAA\nMIIBcert1BBBB'), pem('EC PRIVATE KEY', 'MHcCkey1AAAA')];
  const first = ctxFor();
  assert.equal(kubeletClientCurrent(first.config), current);
  assert.equal(await writeKubeletClient(first, cert1, key1, new Date('2026-12-01T10:00:00Z')), true);
  const file1 = join(pki, 'kubelet-client-2026-12-01-10-00-00.pem');
  assert.equal(readlinkSync(current), file1);
  assert.equal(readFileSync(file1, 'utf8'), `${cert1}${key1}`);
  assert.equal(statSync(file1).mode & 0o777, 0o600);
  assert.equal(statSync(pki).mode & 0o777, 0o700);
  assert.equal(first.state.kubeletRestart, true);

  // The store file as another writer left it: CRLF line endings. Same blocks: nothing is written.
  writeFileSync(file1, `${cert1}${key1}`.replace(/\n/g, '\r\n'), { mode: 0o600 });
  const same = ctxFor();
  assert.equal(await writeKubeletClient(same, cert1, key1, new Date('2026-12-01T11:00:00Z')), false);
  assert.deepEqual(readdirSync(pki).sort(), ['kubelet-client-2026-12-01-10-00-00.pem', 'kubelet-client-current.pem']);
  assert.equal(readlinkSync(current), file1);
  assert.equal(same.state.kubeletRestart, undefined, 'no restart for an unchanged pair');

  // A renewed certificate for the same key: a new store file, the symlink moved to it.
  const cert2 = pem('CERTIFICATE', 'MIIBcert2CCCC');
  const changed = ctxFor();
  assert.equal(await writeKubeletClient(changed, cert2, key1, new Date('2026-12-01T12:00:00Z')), true);
  const file2 = join(pki, 'kubelet-client-2026-12-01-12-00-00.pem');
  assert.ok(lstatSync(current).isSymbolicLink());
  assert.equal(readlinkSync(current), file2);
  assert.equal(readFileSync(current, 'utf8'), `${cert2}${key1}`);
  assert.equal(readFileSync(file1, 'utf8').includes('cert1'), true, 'the previous file stays (the kubelet rotates its store the same way)');
  assert.equal(changed.state.kubeletRestart, true);
});
