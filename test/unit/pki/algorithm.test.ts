/**
 * `encryptionAlgorithm` on a real temp dir, openssl as the checker: a full ECDSA PKI, and an RSA
 * cluster whose config changed to ECDSA (kubeadm's rule: existing CAs and keys are kept, new keys
 * use the configured algorithm).
 */
import assert from 'node:assert/strict';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { RealFiles } from '../../../lib/host/files.ts';
import { certSpecs, type FileLeafSpec } from '../../../lib/pki/certs.ts';
import { PkiError } from '../../../lib/pki/errors.ts';
import { reconcilePki } from '../../../lib/pki/reconcile.ts';
import type { EncryptionAlgorithm } from '../../../lib/types.ts';
import { copyOfFreshPki, openssl, removeDir, sampleConfig, snapshot, tempDir } from './fixtures.ts';

const cleanup: string[] = [];
after(() => Promise.all(cleanup.map(removeDir)));

async function dir(): Promise<string> {
  const d = await tempDir();
  cleanup.push(d);
  return d;
}

for (const [alg, curve] of [['ECDSA-P256', 'P-256'], ['ECDSA-P384', 'P-384']] as const) {
  describe(`reconcilePki with encryptionAlgorithm ${alg}`, () => {
    it('creates every key on the curve (SEC 1 PEM, 0600) and leaves openssl verifies; a second run writes nothing', async () => {
      const d = await dir();
      const config = sampleConfig({ certificatesDir: d, encryptionAlgorithm: alg });
      const first = await reconcilePki(config, new RealFiles());
      assert.equal(first.written.length, 22);
      for (const [name, { bytes, mode }] of await snapshot(d)) {
        if (!name.endsWith('.key')) continue;
        assert.equal(mode, 0o600, name);
        assert.match(bytes, /^-----BEGIN EC PRIVATE KEY-----\n/, name);
        assert.match(await openssl('pkey', '-in', join(d, name), '-noout', '-text'), new RegExp(`NIST CURVE: ${curve}`), name);
      }
      for (const leaf of certSpecs(config).filter((s): s is FileLeafSpec => s.kind === 'leaf'))
        assert.match(await openssl('verify', '-CAfile', join(d, `${leaf.caName}.crt`), leaf.certPath), /: OK\n$/, leaf.name);
      const second = await reconcilePki(config, new RealFiles());
      assert.deepEqual(second.written, []);
      assert.ok(second.entries.every((e) => e.action === 'kept' && !/keeps its/.test(e.reason)), JSON.stringify(second.entries));
    });
  });
}

describe('an RSA-2048 cluster whose encryptionAlgorithm changes to ECDSA-P256', () => {
  it('keeps every CA, key and certificate byte-identical and says which keys stay RSA', async () => {
    const d = await copyOfFreshPki();
    cleanup.push(d);
    const before = await snapshot(d);
    const r = await reconcilePki(sampleConfig({ certificatesDir: d, encryptionAlgorithm: 'ECDSA-P256' }), new RealFiles());
    assert.deepEqual(r.written, []);
    assert.deepEqual(await snapshot(d), before);
    for (const e of r.entries) {
      assert.equal(e.action, 'kept', e.name);
      assert.match(e.reason, /keeps its RSA-2048 key \(encryptionAlgorithm ECDSA-P256 applies to new keys/, e.name);
    }
  });

  it('gives a leaf whose key was removed a new ECDSA-P256 key, signed by the kept RSA CA', async () => {
    const d = await copyOfFreshPki();
    cleanup.push(d);
    await rm(join(d, 'apiserver.key'));
    const caBefore = await readFile(join(d, 'ca.key'), 'latin1');
    const r = await reconcilePki(sampleConfig({ certificatesDir: d, encryptionAlgorithm: 'ECDSA-P256' }), new RealFiles());
    assert.deepEqual(r.written.map((p) => p.slice(d.length + 1)).sort(), ['apiserver.crt', 'apiserver.key']);
    assert.match(await readFile(join(d, 'apiserver.key'), 'latin1'), /^-----BEGIN EC PRIVATE KEY-----\n/);
    assert.equal(await readFile(join(d, 'ca.key'), 'latin1'), caBefore);
    assert.match(await openssl('verify', '-CAfile', join(d, 'ca.crt'), join(d, 'apiserver.crt')), /: OK\n$/);
    assert.match(await openssl('x509', '-in', join(d, 'apiserver.crt'), '-noout', '-text'), /Signature Algorithm: sha256WithRSAEncryption[\s\S]*NIST CURVE: P-256/);
  });
});

describe('reconcilePki bad input', () => {
  it('refuses an algorithm kubeadm does not offer before touching the host', async () => {
    const d = await dir();
    await assert.rejects(reconcilePki(sampleConfig({ certificatesDir: d, encryptionAlgorithm: 'DSA' as EncryptionAlgorithm }), new RealFiles()),
      (e: unknown) => e instanceof PkiError && e.code === 'pki-unsupported-algorithm' && e.badInput);
    assert.deepEqual(await snapshot(d), new Map());
  });
});
