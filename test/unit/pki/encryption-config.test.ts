/** The EncryptionConfiguration kubeception generates and reads (lib/pki/encryption-config.ts). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { HostStateError } from '../../../lib/errors.ts';
import { generateEncryptionConfig, nextRotationPhase, parseEncryptionConfig, renderEncryptionConfig, rotated, storedPrefix, writeProvider } from '../../../lib/pki/encryption-config.ts';
import { fromYaml } from '../../../lib/util/yaml.ts';

test('generated: secretbox with one 32-byte key (a new one each time), then identity; the apiserver\'s document shape', () => {
  const [a, b] = [generateEncryptionConfig(), generateEncryptionConfig()];
  // biome-ignore lint/suspicious/noExplicitAny: walking the parsed document
  const doc = fromYaml(renderEncryptionConfig(a), 'x') as any;
  assert.equal(doc.apiVersion, 'apiserver.config.k8s.io/v1');
  assert.equal(doc.kind, 'EncryptionConfiguration');
  assert.deepEqual(doc.resources[0].resources, ['secrets']);
  assert.deepEqual(doc.resources[0].providers.map((p: object) => Object.keys(p)[0]), ['secretbox', 'identity']);
  const key = doc.resources[0].providers[0].secretbox.keys[0];
  assert.equal(key.name, 'key-1');
  assert.equal(Buffer.from(key.secret, 'base64').length, 32);
  assert.notEqual(key.secret, (b.providers[0] as { keys: { secret: string }[] }).keys[0]!.secret);
  assert.deepEqual(doc.resources[0].providers[1], { identity: {} });
});

test('render → parse gives the same providers; what writes, and the etcd prefix it leaves', () => {
  const c = generateEncryptionConfig();
  assert.deepEqual(parseEncryptionConfig(renderEncryptionConfig(c), '/f'), c);
  assert.equal(writeProvider(c), 'secretbox/key-1');
  assert.equal(storedPrefix('secretbox/key-1'), 'k8s:enc:secretbox:v1:key-1:');
  assert.equal(writeProvider({ providers: [{ kind: 'identity' }, ...c.providers] }), 'identity');
  assert.equal(storedPrefix('identity'), undefined);
});

const BAD: [string, string, RegExp][] = [
  ['not YAML', 'a: [', /not valid YAML/],
  ['another kind', 'kind: Pod\n', /not an EncryptionConfiguration/],
  ['no providers for secrets', 'kind: EncryptionConfiguration\nresources:\n  - resources: [configmaps]\n    providers: [{identity: {}}]\n', /no providers for secrets/],
  ['a key provider without keys', 'kind: EncryptionConfiguration\nresources:\n  - resources: [secrets]\n    providers: [{secretbox: {keys: []}}]\n', /has no keys/],
  ['a short secretbox key', `kind: EncryptionConfiguration\nresources:\n  - resources: [secrets]\n    providers: [{secretbox: {keys: [{name: k, secret: ${Buffer.alloc(16).toString('base64')}}]}}]\n`, /not a named 32-byte key/],
];
for (const [name, text, why] of BAD)
  test(`refused: ${name} (encryption-config-invalid, exit 2, naming the file, never its text)`, () => {
    assert.throws(() => parseEncryptionConfig(text, '/etc/kubernetes/pki/encryption-config.yaml'), (e: unknown) => e instanceof HostStateError && e.code === 'encryption-config-invalid' && e.badInput && e.what === '/etc/kubernetes/pki/encryption-config.yaml' && why.test(e.why));
  });

test('an operator\'s file with aescbc and kms providers is read as it is', () => {
  const text = `kind: EncryptionConfiguration\nresources:\n  - resources: [secrets, configmaps]\n    providers:\n      - aescbc: {keys: [{name: old, secret: ${Buffer.alloc(32, 1).toString('base64')}}]}\n      - kms: {name: vault, endpoint: unix:///run/kms.sock}\n      - identity: {}\n`;
  const c = parseEncryptionConfig(text, '/f');
  assert.deepEqual(c.providers.map((p) => p.kind), ['aescbc', 'kms', 'identity']);
  assert.equal(writeProvider(c), 'aescbc/old');
});

test('rotation: add → promote → rewrite → drop, resumed from any file and record; nothing left once done', () => {
  const start = generateEncryptionConfig();
  const r = (c: typeof start, w: string | undefined, starting = false) => nextRotationPhase(c, w, '/f', starting);
  const names = (c: typeof start) => (c.providers[0] as { keys: { name: string }[] }).keys.map((k) => k.name);
  assert.equal(r(start, 'secretbox/key-1', true), 'add');
  assert.equal(r(start, 'secretbox/key-1'), undefined, 'one key, every Secret written with it: done');
  const added = rotated(start, 'add');
  assert.deepEqual(names(added), ['key-1', 'key-2']);
  assert.equal(writeProvider(added), 'secretbox/key-1', 'added second: still writes with the old key');
  assert.equal(r(added, 'secretbox/key-1'), 'promote');
  const promoted = rotated(added, 'promote');
  assert.deepEqual(names(promoted), ['key-2', 'key-1']);
  assert.equal(r(promoted, 'secretbox/key-1'), 'rewrite');
  assert.equal(r(promoted, 'secretbox/key-2'), 'drop');
  const dropped = rotated(promoted, 'drop');
  assert.deepEqual(names(dropped), ['key-2']);
  assert.equal(dropped.providers.at(-1)!.kind, 'identity');
  assert.equal(r(dropped, 'secretbox/key-2', true), 'add');
  assert.deepEqual(names(rotated(dropped, 'add')), ['key-2', 'key-3']);
});

test('rotation refused: Secrets not yet rewritten with the only key, identity first, a hand-made pair of keys', () => {
  const c = generateEncryptionConfig();
  const refused = (f: () => unknown, code: string) => assert.throws(f, (e: unknown) => e instanceof HostStateError && e.code === code && e.badInput);
  refused(() => nextRotationPhase(c, undefined, '/f', true), 'encryption-rotate-pending');
  refused(() => nextRotationPhase({ providers: [{ kind: 'identity' }, ...c.providers] }, 'identity', '/f', true), 'encryption-rotate-unsupported');
  const mine = { providers: [{ kind: 'secretbox' as const, keys: [{ name: 'old', secret: 'a' }, { name: 'new', secret: 'b' }] }] };
  refused(() => nextRotationPhase(mine, 'secretbox/old', '/f', true), 'encryption-rotate-unsupported');
});
