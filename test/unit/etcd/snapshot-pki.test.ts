/**
 * The snapshot key file and the sealed PKI part: created 0600 on first use; a key file readable by
 * others, a symlink, or not a key is refused (exit 2) without reading or changing it; the PKI part
 * opens only with its key and in its own bundle.
 */
import assert from 'node:assert/strict';
import { chmod, mkdir, mkdtemp, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { openPki, sealPki, snapshotKey } from '../../../lib/etcd/snapshot-pki.ts';
import { HostStateError, SnapshotError } from '../../../lib/errors.ts';
import { RealFiles } from '../../../lib/host/files.ts';
import { SHARED_FILES } from '../../../lib/join/certificate-key.ts';
import { sampleConfig } from '../pki/fixtures.ts';

let dir: string;
const files = new RealFiles();
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kubeception-snapkey-'));
});
after(() => rm(dir, { recursive: true, force: true }));

test('absent key: created (64 hex digits, 0600, directory 0700) only when asked; read back the same', async () => {
  const keyFile = join(dir, 'new', 'snapshot.key');
  await assert.rejects(snapshotKey(files, keyFile, false), (e: unknown) => e instanceof SnapshotError && e.code === 'snapshot-key-missing' && e.badInput && e.what === keyFile);
  const made = await snapshotKey(files, keyFile, true);
  assert.equal(made.created, true);
  assert.equal(made.key.length, 32);
  assert.equal((await stat(keyFile)).mode & 0o777, 0o600);
  assert.equal((await stat(dirname(keyFile))).mode & 0o777, 0o700);
  assert.match(await readFile(keyFile, 'utf8'), /^[0-9a-f]{64}\n$/);
  const again = await snapshotKey(files, keyFile, true);
  assert.equal(again.created, false);
  assert.ok(again.key.equals(made.key));
});

const REFUSED: [string, (f: string) => Promise<void>, RegExp][] = [
  ['mode 0644', async (f) => { await writeFile(f, `${'a'.repeat(64)}\n`); await chmod(f, 0o644); }, /mode is 0644/],
  ['mode 0640', async (f) => { await writeFile(f, `${'a'.repeat(64)}\n`); await chmod(f, 0o640); }, /mode is 0640/],
  ['a symlink', async (f) => { await writeFile(`${f}.real`, `${'a'.repeat(64)}\n`, { mode: 0o600 }); await symlink(`${f}.real`, f); }, /symlink/],
  ['not a key', async (f) => { await writeFile(f, 'hunter2\n', { mode: 0o600 }); }, /64 hex digits/],
  ['a directory', async (f) => { await mkdir(f); }, /not a regular file/],
];
for (const [name, make, why] of REFUSED)
  test(`key file refused: ${name} (HostStateError snapshot-key-file, exit 2, the file unchanged)`, async () => {
    const f = join(dir, `bad-${name.replace(/\W/g, '')}`);
    await make(f);
    const before = await stat(f).then((s) => `${s.mode} ${s.size} ${s.mtimeMs}`);
    await assert.rejects(snapshotKey(files, f, true), (e: unknown) => e instanceof HostStateError && e.code === 'snapshot-key-file' && e.badInput && e.what === f && why.test(e.why) && !e.why.includes('hunter2'));
    assert.equal(await stat(f).then((s) => `${s.mode} ${s.size} ${s.mtimeMs}`), before);
  });

test('PKI part: the shared files sealed; opens with its key in its bundle only', async () => {
  const certificatesDir = join(dir, 'pki');
  for (const [rel] of SHARED_FILES) {
    await mkdir(dirname(join(certificatesDir, rel)), { recursive: true });
    await writeFile(join(certificatesDir, rel), `-----BEGIN ${rel}-----\n`);
  }
  const config = sampleConfig({ certificatesDir });
  const key = Buffer.alloc(32, 7);
  const name = 'etcd-snapshot-cp-1-20261203T141502Z';
  const { sealed, files: inside } = await sealPki(config, files, key, name);
  assert.deepEqual(inside, SHARED_FILES.map(([rel]) => rel));
  assert.ok(!sealed.toString('latin1').includes('BEGIN'), 'no plaintext in the part');
  const opened = openPki(key, sealed, name, '/s/pki.enc', '/k');
  assert.equal(opened['etcd/ca.key']!.toString(), '-----BEGIN etcd/ca.key-----\n');
  const refused = (k: Buffer, bytes: Buffer, n: string) => assert.throws(() => openPki(k, bytes, n, '/s/pki.enc', '/k'), (e: unknown) => e instanceof SnapshotError && e.code === 'snapshot-pki' && e.badInput && e.what === '/s/pki.enc');
  refused(Buffer.alloc(32, 8), sealed, name);
  refused(key, sealed, 'etcd-snapshot-cp-1-20261203T141503Z');
  refused(key, sealed.subarray(0, sealed.length - 1), name);
  refused(key, Buffer.alloc(10), name);
});

test('PKI part: the encryption config (the encryption-at-rest key) is sealed with the shared files when the node has one', async () => {
  const certificatesDir = join(dir, 'pki-enc');
  for (const [rel] of SHARED_FILES) {
    await mkdir(dirname(join(certificatesDir, rel)), { recursive: true });
    await writeFile(join(certificatesDir, rel), `-----BEGIN ${rel}-----\n`);
  }
  await writeFile(join(certificatesDir, 'encryption-config.yaml'), 'secret: c2VjcmV0\n', { mode: 0o600 });
  const key = Buffer.alloc(32, 9);
  const { sealed, files: inside } = await sealPki(sampleConfig({ certificatesDir }), files, key, 'n');
  assert.deepEqual(inside, [...SHARED_FILES.map(([rel]) => rel), 'encryption-config.yaml']);
  assert.ok(!sealed.toString('latin1').includes('c2VjcmV0'), 'no plaintext in the part');
  assert.equal(openPki(key, sealed, 'n', '/s/pki.enc', '/k')['encryption-config.yaml']!.toString(), 'secret: c2VjcmV0\n');
});

test('PKI part: a missing shared file is refused before anything is sealed (pki-missing, exit 2)', async () => {
  const config = sampleConfig({ certificatesDir: join(dir, 'empty') });
  await assert.rejects(sealPki(config, files, Buffer.alloc(32), 'n'), (e: unknown) => e instanceof HostStateError && e.code === 'pki-missing' && e.what === join(dir, 'empty', 'ca.crt'));
});
