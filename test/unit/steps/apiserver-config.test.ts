/**
 * The `apiserver-config` step's files on a real directory (RealFiles): created 0600, the key kept on
 * every re-run, a join never creates one, and turning encryption off over an existing key is refused.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { HostStateError } from '../../../lib/errors.ts';
import { RealFiles } from '../../../lib/host/files.ts';
import { apiServerConfigFallback, encryptionConfigCheck, writeApiServerConfig } from '../../../lib/steps/bootstrap/apiserver-config.ts';
import { hardeningPaths } from '../../../manifests/apiserver-hardening.ts';
import { sampleConfig } from '../pki/fixtures.ts';
import type { Context } from '../../../lib/context.ts';

let dir: string;
const files = new RealFiles();
const lines: string[] = [];
const log = { info: (m: string) => lines.push(m), warn: (m: string) => lines.push(m) } as unknown as Context['log'];
const ctxFor = (sub: string, over: Parameters<typeof sampleConfig>[0] = {}) => {
  const base = sampleConfig();
  const config = sampleConfig({ ...over, certificatesDir: join(dir, sub, 'pki'), distro: { ...base.distro, paths: { ...base.distro.paths, secretsDir: join(dir, sub) } } });
  return { config, files, log };
};
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kubeception-apiconfig-'));
});
after(() => rm(dir, { recursive: true, force: true }));

test('bootstrap: the three files created 0600; a re-run writes nothing and keeps the key; a loosened mode is repaired', async () => {
  const ctx = ctxFor('a');
  const p = hardeningPaths(ctx.config);
  await mkdir(ctx.config.certificatesDir, { recursive: true });
  assert.deepEqual(await writeApiServerConfig(ctx, true), [p.auditPolicy, p.admissionConfig, p.encryptionConfig]);
  for (const f of [p.auditPolicy, p.admissionConfig, p.encryptionConfig]) assert.equal((await stat(f)).mode & 0o777, 0o600, f);
  const key = await readFile(p.encryptionConfig, 'utf8');
  assert.ok(!lines.join('\n').includes(key.match(/secret: (\S+)/)![1]!), 'the key was logged');
  assert.deepEqual(await writeApiServerConfig(ctx, true), []);
  assert.equal(await readFile(p.encryptionConfig, 'utf8'), key);
  await import('node:fs/promises').then((fs) => fs.chmod(p.encryptionConfig, 0o644));
  assert.deepEqual(await writeApiServerConfig(ctx, true), [p.encryptionConfig]);
  assert.equal(await readFile(p.encryptionConfig, 'utf8'), key);
  assert.equal(await encryptionConfigCheck.run(ctx as unknown as Context), undefined);
});

test('a control-plane join never creates a key: without the cluster\'s it is refused, naming the file', async () => {
  const ctx = ctxFor('b');
  await assert.rejects(writeApiServerConfig(ctx, false), (e: unknown) => e instanceof HostStateError && e.code === 'encryption-config-missing' && e.badInput && e.what === hardeningPaths(ctx.config).encryptionConfig);
});

test('secretsEncryption.disabled with a key on the host: refused by preflight and by the step (Secrets may be encrypted with it); without one, no file', async () => {
  const on = ctxFor('c');
  await mkdir(on.config.certificatesDir, { recursive: true });
  await writeApiServerConfig(on, true);
  const offConfig = sampleConfig({ ...on.config, apiServer: { ...on.config.apiServer, secretsEncryption: { disabled: true } } });
  const off = { ...on, config: offConfig };
  const failure = await encryptionConfigCheck.run(off as unknown as Context);
  assert.match(failure?.message ?? '', /secretsEncryption.disabled is set, but .*encryption-config.yaml exists/);
  assert.equal(encryptionConfigCheck.ignorable, false);
  await assert.rejects(writeApiServerConfig(off, true), (e: unknown) => e instanceof HostStateError && e.code === 'encryption-config-disabled');
  const fresh = { ...ctxFor('d'), config: sampleConfig({ ...ctxFor('d').config, apiServer: { ...offConfig.apiServer } }) };
  assert.deepEqual((await writeApiServerConfig(fresh, true)).map((f) => f.split('/').pop()), ['audit-policy.yaml', 'admission-config.yaml']);
});

test('a damaged key file is refused (preflight and step), never replaced', async () => {
  const ctx = ctxFor('e');
  const p = hardeningPaths(ctx.config);
  await mkdir(ctx.config.certificatesDir, { recursive: true });
  await writeFile(p.encryptionConfig, 'kind: EncryptionConfiguration\n', { mode: 0o600 });
  assert.match((await encryptionConfigCheck.run(ctx as unknown as Context))?.message ?? '', /encryption-config.yaml: it is not an EncryptionConfiguration/);
  await assert.rejects(writeApiServerConfig(ctx, true), (e: unknown) => e instanceof HostStateError && e.code === 'encryption-config-invalid');
  assert.equal(await readFile(p.encryptionConfig, 'utf8'), 'kind: EncryptionConfiguration\n');
});

test('a task file without apiserver-config: the fallback writes the missing files with a warning, and is a no-op once they are there', async () => {
  const ctx = ctxFor('f');
  await mkdir(ctx.config.certificatesDir, { recursive: true });
  lines.length = 0;
  assert.equal((await apiServerConfigFallback(ctx, true)).length, 3);
  assert.match(lines.join('\n'), /no apiserver-config step/);
  lines.length = 0;
  assert.deepEqual(await apiServerConfigFallback(ctx, true), []);
  assert.deepEqual(lines, []);
});
