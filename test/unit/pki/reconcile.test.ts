/** reconcilePki on a temp dir: a fresh PKI, a no-op second run, openssl as the checker, dry-run. */
import assert from 'node:assert/strict';
import { chown, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { RealFiles, type HostFiles, type WriteOptions } from '../../../lib/host/files.ts';
import { DryRunFiles } from '../../../lib/host/files-dry-run.ts';
import { certSpecs, type FileLeafSpec } from '../../../lib/pki/certs.ts';
import { reconcilePki } from '../../../lib/pki/reconcile.ts';
import { copyOfFreshPki, freshPki, openssl, removeDir, sampleConfig, shell, snapshot, tempDir } from './fixtures.ts';

const ALL = [
  'ca', 'apiserver', 'apiserver-kubelet-client', 'front-proxy-ca', 'front-proxy-client',
  'etcd/ca', 'etcd/server', 'etcd/peer', 'etcd/healthcheck-client', 'apiserver-etcd-client', 'sa',
];
const cleanup: string[] = [];
after(async () => {
  await Promise.all([...cleanup, (await freshPki()).dir].map(removeDir));
});

describe('reconcilePki on an empty certificatesDir', () => {
  it('creates every certificate and key, in table order', async () => {
    const { report } = await freshPki();
    assert.deepEqual(report.entries.map((e) => [e.name, e.action]), ALL.map((n) => [n, 'created']));
    assert.equal(report.written.length, 22);
  });

  it('writes keys 0600 and certificates and sa.pub 0644, kubeadm file names', async () => {
    const { dir } = await freshPki();
    const files = await snapshot(dir);
    const expected = [...ALL.flatMap((n) => (n === 'sa' ? ['sa.key', 'sa.pub'] : [`${n}.crt`, `${n}.key`]))].sort();
    assert.deepEqual([...files.keys()].sort(), expected);
    for (const [name, { mode }] of files) assert.equal(mode, name.endsWith('.key') ? 0o600 : 0o644, name);
  });

  it('issues leaves that `openssl verify -CAfile <their CA>` accepts — and not with another CA', async () => {
    const { dir } = await freshPki();
    const leaves = certSpecs(sampleConfig({ certificatesDir: dir })).filter((s): s is FileLeafSpec => s.kind === 'leaf');
    assert.equal(leaves.length, 7);
    for (const leaf of leaves) {
      const caFile = join(dir, `${leaf.caName}.crt`);
      assert.match(await openssl('verify', '-CAfile', caFile, leaf.certPath), /: OK\n$/, leaf.name);
      const wrongCa = join(dir, leaf.caName === 'ca' ? 'etcd/ca.crt' : 'ca.crt');
      await assert.rejects(openssl('verify', '-CAfile', wrongCa, leaf.certPath), leaf.name);
    }
  });

  it('puts the configured SANs into apiserver.crt (openssl x509 -text)', async () => {
    const { dir } = await freshPki();
    const text = await openssl('x509', '-in', join(dir, 'apiserver.crt'), '-noout', '-text');
    for (const san of [
      'DNS:cp-1', 'DNS:kubernetes', 'DNS:kubernetes.default', 'DNS:kubernetes.default.svc', 'DNS:kubernetes.default.svc.cluster.local',
      'DNS:localhost', 'IP Address:10.96.0.1', 'IP Address:10.250.0.2', 'IP Address:127.0.0.1',
    ]) assert.ok(text.includes(san), `${san} missing from:\n${text}`);
    const etcd = await openssl('x509', '-in', join(dir, 'etcd/server.crt'), '-noout', '-text');
    assert.match(etcd, /DNS:cp-1, DNS:localhost, IP Address:10\.250\.0\.2, IP Address:127\.0\.0\.1, IP Address:0:0:0:0:0:0:0:1\n/);
    assert.match(etcd, /Subject: CN = cp-1\n/);
  });

  it('matches every key to its certificate (openssl: same public key)', async () => {
    const { dir } = await freshPki();
    for (const s of certSpecs(sampleConfig({ certificatesDir: dir }))) {
      const fromCert = await openssl('x509', '-in', s.certPath, '-noout', '-pubkey');
      const fromKey = await openssl('pkey', '-in', s.keyPath, '-pubout');
      assert.equal(fromCert, fromKey, s.name);
    }
    assert.equal(await openssl('pkey', '-in', join(dir, 'sa.key'), '-pubout'), await openssl('pkey', '-pubin', '-in', join(dir, 'sa.pub')));
  });
});

describe('reconcilePki, second run', () => {
  it('keeps everything, writes nothing, leaves every byte and mode as it was', async () => {
    const { dir } = await freshPki();
    const before = await snapshot(dir);
    const report = await reconcilePki(sampleConfig({ certificatesDir: dir }), new RealFiles());
    assert.deepEqual(report.entries.map((e) => [e.name, e.action]), ALL.map((n) => [n, 'kept']));
    assert.match(report.entries[1]!.reason, /^valid until \d{4}-\d\d-\d\d$/);
    assert.deepEqual(report.written, []);
    assert.deepEqual(await snapshot(dir), before);
  });
});

describe('reconcilePki file ownership (CIS 1.1.19: the PKI is root:root)', () => {
  it('asks for no owner on any file: every file is written by (and left to) root', async () => {
    const dir = await tempDir();
    cleanup.push(dir);
    const real = new RealFiles();
    const owners = new Map<string, string | undefined>();
    const spy: HostFiles = Object.assign(Object.create(real) as HostFiles, {
      write(path: string, data: string | Uint8Array, opts: WriteOptions) {
        owners.set(path.slice(dir.length + 1), opts.owner);
        return real.write(path, data, opts);
      },
    });
    await reconcilePki(sampleConfig({ certificatesDir: dir }), spy);
    assert.equal(owners.size, 22);
    assert.deepEqual([...owners].filter(([, o]) => o !== undefined), []);
  });

  it('gives etcd keys an earlier version chowned to the etcd user back to root, bytes kept (root only: uses `nobody`)', async (t) => {
    if (process.getuid?.() !== 0) return t.skip('chown to another user needs root');
    const nobody = Number((await shell('id -u nobody')).trim());
    const dir = await copyOfFreshPki();
    cleanup.push(dir);
    const keys = ['etcd/peer.key', 'etcd/server.key'];
    const before = await Promise.all(keys.map((f) => readFile(join(dir, f))));
    for (const f of keys) await chown(join(dir, f), nobody, nobody);
    const report = await reconcilePki(sampleConfig({ certificatesDir: dir }), new RealFiles());
    assert.deepEqual(report.written.map((p) => p.slice(dir.length + 1)).sort(), keys);
    for (const [i, f] of keys.entries()) {
      const st = await stat(join(dir, f));
      assert.deepEqual([st.uid, st.gid, st.mode & 0o7777], [0, 0, 0o600], f);
      assert.deepEqual(await readFile(join(dir, f)), before[i], `${f} bytes kept`);
    }
    assert.deepEqual((await reconcilePki(sampleConfig({ certificatesDir: dir }), new RealFiles())).written, [], 'converged');
  });
});

describe('reconcilePki under dry-run', () => {
  it('reports what it would create and writes nothing', async () => {
    const dir = await tempDir();
    cleanup.push(dir);
    const files = new DryRunFiles();
    const report = await reconcilePki(sampleConfig({ certificatesDir: join(dir, 'pki') }), files);
    assert.deepEqual(report.entries.map((e) => e.action), ALL.map(() => 'created'));
    assert.equal(files.planned.filter((p) => p.op === 'write').length, 22);
    assert.deepEqual(await snapshot(dir), new Map());
  });
});
