/**
 * reconcilePki on an existing PKI that is out of date or damaged: what is re-issued, what is
 * refused, and that keys and CAs stay byte-identical. Each test works on a copy of one fresh tree.
 */
import assert from 'node:assert/strict';
import { chmod, copyFile, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { RealFiles } from '../../../lib/host/files.ts';
import { PkiError } from '../../../lib/pki/errors.ts';
import { reconcilePki, type PkiReport } from '../../../lib/pki/reconcile.ts';
import { copyOfFreshPki, freshPki, openssl, removeDir, sampleConfig, shell, snapshot, type ConfigOverrides } from './fixtures.ts';

const dirs: string[] = [];
after(async () => Promise.all([...dirs, (await freshPki()).dir].map(removeDir)));

async function work(): Promise<string> {
  const dir = await copyOfFreshPki();
  dirs.push(dir);
  return dir;
}
const run = (dir: string, over: ConfigOverrides = {}, now?: Date) =>
  reconcilePki(sampleConfig({ certificatesDir: dir, ...over }), new RealFiles(), now ? { now } : {});
const actions = (r: PkiReport) => Object.fromEntries(r.entries.map((e) => [e.name, e.action]));
const reasonOf = (r: PkiReport, name: string) => r.entries.find((e) => e.name === name)?.reason ?? '';
const rel = (dir: string, r: PkiReport) => r.written.map((p) => p.slice(dir.length + 1)).sort();
const keysOf = (snap: Map<string, { bytes: string }>) => [...snap].filter(([n]) => n.endsWith('.key')).map(([n, f]) => [n, f.bytes]);

/** Asserts `fn` rejects with PkiError `code` (bad input) and the tree is untouched. */
async function refuses(dir: string, code: string, fn: () => Promise<unknown>): Promise<PkiError> {
  const before = await snapshot(dir);
  let err: unknown;
  await fn().catch((e: unknown) => { err = e; });
  assert.ok(err instanceof PkiError && err.code === code, `expected ${code}, got ${String(err)}`);
  assert.ok(err.badInput);
  assert.deepEqual(await snapshot(dir), before, 'the tree changed');
  return err;
}

describe('reconcilePki re-issues leaves', () => {
  it('apiserver cert lacking a newly configured extra SAN: only apiserver.crt rewritten, CA and key byte-identical', async () => {
    const dir = await work();
    const before = await snapshot(dir);
    const r = await run(dir, { apiServer: { extraSANs: ['api.example.com', '192.0.2.10', 'fd00:20::9'], extraArgs: {} } });
    assert.equal(actions(r).apiserver, 'reissued');
    assert.equal(reasonOf(r, 'apiserver'), 'SANs missing: DNS:api.example.com, IP:192.0.2.10, IP:fd00:20::9');
    assert.deepEqual(rel(dir, r), ['apiserver.crt']);
    const after = await snapshot(dir);
    for (const f of ['ca.crt', 'ca.key', 'apiserver.key']) assert.deepEqual(after.get(f), before.get(f), f);
    const text = await openssl('x509', '-in', join(dir, 'apiserver.crt'), '-noout', '-text');
    assert.match(text, /DNS:api\.example\.com.*IP Address:192\.0\.2\.10, IP Address:FD00:20:0:0:0:0:0:9/);
    assert.match(await openssl('verify', '-CAfile', join(dir, 'ca.crt'), join(dir, 'apiserver.crt')), /OK/);
  });

  it('a node rename re-issues apiserver, etcd/server and etcd/peer only', async () => {
    const dir = await work();
    const r = await run(dir, { nodeName: 'cp-renamed' });
    assert.deepEqual(rel(dir, r), ['apiserver.crt', 'etcd/peer.crt', 'etcd/server.crt']);
    assert.match(reasonOf(r, 'etcd/server'), /^CN is "cp-1", want "cp-renamed"; SANs missing: DNS:cp-renamed; unexpected SANs: DNS:cp-1$/);
  });

  it('leaves expiring within 30 days are re-issued for their existing keys; CAs kept', async () => {
    const dir = await work();
    const before = await snapshot(dir);
    const inElevenMonths = new Date(Date.now() + 340 * 86_400_000);
    const r = await run(dir, {}, inElevenMonths);
    for (const e of r.entries) {
      if (['ca', 'front-proxy-ca', 'etcd/ca', 'sa'].includes(e.name)) assert.equal(e.action, 'kept', e.name);
      else assert.match(`${e.action}: ${e.reason}`, /^reissued: expires in 2[45] days \(.*\), within the 30-day renewal window$/, e.name);
    }
    assert.deepEqual(keysOf(await snapshot(dir)), keysOf(before));
    assert.deepEqual(actions(await run(dir, {}, inElevenMonths)).apiserver, 'kept');
  });

  it('a missing CA certificate is re-created from its existing key; its leaves still chain and are kept', async () => {
    const dir = await work();
    const before = await snapshot(dir);
    await rm(join(dir, 'ca.crt'));
    const r = await run(dir);
    assert.deepEqual([actions(r).ca, reasonOf(r, 'ca')], ['created', 'no certificate; self-signed with the existing RSA-2048 key']);
    // Same key and subject: the old signatures verify against the new certificate.
    assert.equal(actions(r).apiserver, 'kept');
    assert.deepEqual(rel(dir, r), ['ca.crt']);
    assert.deepEqual(keysOf(await snapshot(dir)), keysOf(before));
    assert.notEqual((await snapshot(dir)).get('ca.crt')?.bytes, before.get('ca.crt')?.bytes);
    assert.match(await openssl('verify', '-CAfile', join(dir, 'ca.crt'), join(dir, 'apiserver.crt')), /OK/);
  });

  it('leaves of a CA replaced by hand (new key) are re-issued: not signed by the current CA', async () => {
    const dir = await work();
    const other = await work();
    await copyFile(join(other, 'etcd/ca.crt'), join(dir, 'ca.crt'));
    await copyFile(join(other, 'etcd/ca.key'), join(dir, 'ca.key'));
    const r = await run(dir);
    assert.equal(reasonOf(r, 'apiserver-kubelet-client'), 'not signed by the current ca CA');
    assert.deepEqual(rel(dir, r), ['apiserver-kubelet-client.crt', 'apiserver.crt']);
    assert.match(await openssl('verify', '-CAfile', join(dir, 'ca.crt'), join(dir, 'apiserver.crt')), /OK/);
  });

  it('a leaf with a missing key gets a new key (0600) and certificate', async () => {
    const dir = await work();
    await rm(join(dir, 'front-proxy-client.key'));
    const r = await run(dir);
    assert.deepEqual([actions(r)['front-proxy-client'], reasonOf(r, 'front-proxy-client')], ['reissued', 'key missing; issued for a new key']);
    assert.deepEqual(rel(dir, r), ['front-proxy-client.crt', 'front-proxy-client.key']);
    assert.equal((await stat(join(dir, 'front-proxy-client.key'))).mode & 0o777, 0o600);
    assert.equal(await openssl('x509', '-in', join(dir, 'front-proxy-client.crt'), '-noout', '-pubkey'),
      await openssl('pkey', '-in', join(dir, 'front-proxy-client.key'), '-pubout'));
  });

  it('a leaf whose key was swapped is re-issued for the key on disk, which is kept', async () => {
    const dir = await work();
    await copyFile(join(dir, 'apiserver-etcd-client.key'), join(dir, 'etcd/healthcheck-client.key'));
    const before = await snapshot(dir);
    const r = await run(dir);
    assert.equal(reasonOf(r, 'etcd/healthcheck-client'), 'does not match its key');
    assert.deepEqual(rel(dir, r), ['etcd/healthcheck-client.crt']);
    assert.deepEqual(keysOf(await snapshot(dir)), keysOf(before));
  });

  it('an unreadable leaf certificate is re-issued', async () => {
    const dir = await work();
    await writeFile(join(dir, 'apiserver.crt'), 'not a certificate\n');
    const r = await run(dir);
    assert.match(`${actions(r).apiserver}: ${reasonOf(r, 'apiserver')}`, /^reissued: certificate unreadable/);
  });

  it('a key with a loose mode is rewritten byte-identical with 0600, and the reason says so', async () => {
    const dir = await work();
    const key = join(dir, 'apiserver.key');
    const before = (await snapshot(dir)).get('apiserver.key');
    await chmod(key, 0o644);
    const r = await run(dir);
    assert.equal(actions(r).apiserver, 'kept');
    assert.match(reasonOf(r, 'apiserver'), /rewrote .*apiserver\.key with the expected mode/);
    assert.deepEqual((await snapshot(dir)).get('apiserver.key'), before);
  });

  it("an sa.pub holding sa.key's public key and another one (a key rotation under way) is kept as it is", async () => {
    const dir = await work();
    const otherPub = await shell('openssl ecparam -name prime256v1 -genkey -noout | openssl pkey -pubout');
    await writeFile(join(dir, 'sa.pub'), otherPub + (await readFile(join(dir, 'sa.pub'), 'utf8')));
    const before = await snapshot(dir);
    const r = await run(dir);
    assert.equal(actions(r).sa, 'kept');
    assert.deepEqual(await snapshot(dir), before);
  });

  it('a missing sa.pub is re-derived from sa.key', async () => {
    const dir = await work();
    const before = await snapshot(dir);
    await rm(join(dir, 'sa.pub'));
    const r = await run(dir);
    assert.equal(actions(r).sa, 'kept');
    assert.deepEqual(await snapshot(dir), before);
  });
});

describe('reconcilePki refuses and changes nothing', () => {
  it('CA certificate present but its key missing (even with other leaves to create)', async () => {
    const dir = await work();
    await Promise.all(['ca.key', 'apiserver.crt', 'etcd/server.crt'].map((f) => rm(join(dir, f))));
    const err = await refuses(dir, 'pki-ca-key-missing', () => run(dir));
    assert.equal(err.what, join(dir, 'ca.key'));
    assert.match(err.fix, /restore .*ca\.key from a backup/);
  });

  it("CA key that is not the certificate's key", async () => {
    const dir = await work();
    await copyFile(join(dir, 'front-proxy-ca.key'), join(dir, 'etcd/ca.key'));
    await refuses(dir, 'pki-ca-key-mismatch', () => run(dir));
  });

  it('a leaf certificate sitting at a CA path', async () => {
    const dir = await work();
    await copyFile(join(dir, 'front-proxy-client.crt'), join(dir, 'front-proxy-ca.crt'));
    await copyFile(join(dir, 'front-proxy-client.key'), join(dir, 'front-proxy-ca.key'));
    await refuses(dir, 'pki-not-a-ca', () => run(dir));
  });

  it('an unreadable leaf key (a key is never replaced)', async () => {
    const dir = await work();
    await writeFile(join(dir, 'etcd/peer.key'), 'garbage\n', { mode: 0o600 });
    const err = await refuses(dir, 'pki-bad-key', () => run(dir));
    assert.equal(err.what, join(dir, 'etcd/peer.key'));
  });

  it("an sa.pub of other keys only, not sa.key's", async () => {
    const dir = await work();
    await writeFile(join(dir, 'sa.pub'), await shell('openssl ecparam -name prime256v1 -genkey -noout | openssl pkey -pubout'));
    await refuses(dir, 'pki-sa-mismatch', () => run(dir));
  });

  it('sa.pub without sa.key', async () => {
    const dir = await work();
    await rm(join(dir, 'sa.key'));
    await refuses(dir, 'pki-sa-mismatch', () => run(dir));
  });

  it('an invalid extra SAN', async () => {
    const dir = await work();
    await refuses(dir, 'pki-invalid-san', () => run(dir, { apiServer: { extraSANs: ['under_score'], extraArgs: {} } }));
  });
});
