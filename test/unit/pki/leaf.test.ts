/** reconcileLeaf for the kubeconfig client identities (certificates embedded in kubeconfig files). */
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { certSpecs, kubeconfigClientSpecs, type LeafSpec } from '../../../lib/pki/certs.ts';
import { PkiError } from '../../../lib/pki/errors.ts';
import { parseCert } from '../../../lib/pki/x509.ts';
import { reconcileLeaf, type CaMaterial, type LeafResult } from '../../../lib/pki/reconcile.ts';
import { freshPki, openssl, removeDir, sampleConfig } from './fixtures.ts';

describe('reconcileLeaf', () => {
  let dir: string;
  let ca: CaMaterial;
  let frontProxyCa: CaMaterial;
  let kubelet: LeafSpec;
  let first: LeafResult;
  const config = sampleConfig();
  const read = (f: string) => readFile(join(dir, f), 'utf8');

  /** `openssl verify` of a PEM certificate against a CA file of the fresh tree. */
  async function verify(certPem: string, caFile: string): Promise<string> {
    await writeFile(join(dir, 'under-test.crt'), certPem);
    return openssl('verify', '-CAfile', join(dir, caFile), join(dir, 'under-test.crt'));
  }

  before(async () => {
    ({ dir } = await freshPki());
    ca = { certPem: await read('ca.crt'), keyPem: await read('ca.key') };
    frontProxyCa = { certPem: await read('front-proxy-ca.crt'), keyPem: await read('front-proxy-ca.key') };
    kubelet = kubeconfigClientSpecs(config).find((s) => s.name === 'kubelet')!;
    first = await reconcileLeaf(kubelet, {}, ca, config);
  });
  after(async () => removeDir((await freshPki()).dir));

  it('creates the kubelet identity: CN system:node:<nodeName>, O system:nodes, client auth, signed by ca', async () => {
    assert.deepEqual([first.action, first.reason], ['created', 'no certificate or key']);
    assert.match(first.keyPem, /^-----BEGIN RSA PRIVATE KEY-----/);
    const info = await parseCert(first.certPem, 'kubelet');
    assert.deepEqual([info.commonName, info.organizations, info.usages], ['system:node:cp-1', ['system:nodes'], ['clientAuth']]);
    assert.match(await verify(first.certPem, 'ca.crt'), /OK/);
  });

  it('keeps a valid identity, returning the same PEM text', async () => {
    const again = await reconcileLeaf(kubelet, first, ca, config);
    assert.equal(again.action, 'kept');
    assert.equal(again.certPem, first.certPem);
    assert.equal(again.keyPem, first.keyPem);
  });

  it('re-issues an identity signed by a different CA, keeping the key', async () => {
    const foreign = await reconcileLeaf(kubelet, { keyPem: first.keyPem }, frontProxyCa, config);
    await assert.rejects(verify(foreign.certPem, 'ca.crt')); // the precondition: it really does not chain to ca
    const r = await reconcileLeaf(kubelet, foreign, ca, config);
    assert.deepEqual([r.action, r.reason], ['reissued', 'not signed by the current ca CA']);
    assert.equal(r.keyPem, first.keyPem);
    assert.match(await verify(r.certPem, 'ca.crt'), /OK/);
  });

  it('re-issues when the identity changes (node rename), naming the difference', async () => {
    const renamed = sampleConfig({ nodeName: 'cp-2' });
    const spec = kubeconfigClientSpecs(renamed).find((s) => s.name === 'kubelet')!;
    const r = await reconcileLeaf(spec, first, ca, renamed);
    assert.deepEqual([r.action, r.reason], ['reissued', 'CN is "system:node:cp-1", want "system:node:cp-2"']);
  });

  it('re-issues when the groups or usages change', async () => {
    const r = await reconcileLeaf({ ...kubelet, organizations: ['system:nodes', 'extra'], usages: ['clientAuth', 'serverAuth'] }, first, ca, config);
    assert.equal(r.reason, 'O is [system:nodes], want [system:nodes, extra]; extended key usages are [clientAuth], want [clientAuth, serverAuth]');
  });

  it('issues an IPv6 apiserver certificate from the table spec (openssl shows the SANs)', async () => {
    const v6 = sampleConfig({
      localAPIEndpoint: { advertiseAddress: 'fd00:20::2', bindPort: 6443 },
      networking: { podSubnet: 'fd00:244::/56', serviceSubnet: 'fd00:96::/108', dnsDomain: 'cluster.local' },
    });
    const spec = certSpecs(v6).find((s) => s.name === 'apiserver') as LeafSpec;
    const r = await reconcileLeaf(spec, {}, ca, v6);
    await writeFile(join(dir, 'v6.crt'), r.certPem);
    const text = await openssl('x509', '-in', join(dir, 'v6.crt'), '-noout', '-text');
    assert.match(text, /IP Address:FD00:96:0:0:0:0:0:1, IP Address:FD00:20:0:0:0:0:0:2, IP Address:127\.0\.0\.1/);
    assert.match(text, /DNS:kubernetes\.default\.svc\.cluster\.local/);
    assert.match(await verify(r.certPem, 'ca.crt'), /OK/);
  });

  it('refuses a CA whose key is not its certificate', async () => {
    await assert.rejects(reconcileLeaf(kubelet, first, { certPem: ca.certPem, keyPem: frontProxyCa.keyPem }, config),
      (e: unknown) => e instanceof PkiError && e.code === 'pki-ca-key-mismatch');
  });
});
