/**
 * `apiServer.auditLog`, `apiServer.secretsEncryption`, `apiServer.podSecurity` in the config: the
 * defaults (each on; the CIS benchmark's audit values), each turned off, and every refusal a
 * ConfigError naming the field.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { resolveConfig, type HostFacts } from '../../../lib/config/validate.ts';
import { parseConfig, parseDistro } from '../../../lib/config/schema.ts';
import { parseToml } from '../../../lib/config/toml.ts';
import { ConfigError } from '../../../lib/errors.ts';

const debian = parseDistro(parseToml(readFileSync(new URL('../../../distros/debian/debian.toml', import.meta.url), 'utf8'), 'debian.toml'), 'debian', 'debian.toml');
const facts: HostFacts = { hostname: 'node-a', addresses: [{ address: '10.250.0.2', cidr: '10.250.0.2/16' }] };
const resolve = (apiServer: unknown) => resolveConfig(parseConfig({ apiServer }, 'cfg.ts'), debian, facts, 'cfg.ts').apiServer;

test('defaults: audit log in /var/log/kubernetes/audit (30 days, 10 files, 100 MB), Secrets encrypted, PSA enforce baseline / warn, audit restricted, kube-system exempt', () => {
  const a = resolve(undefined);
  assert.deepEqual(a.auditLog, { disabled: false, dir: '/var/log/kubernetes/audit', maxAgeDays: 30, maxBackups: 10, maxSizeMB: 100 });
  assert.deepEqual(a.secretsEncryption, { disabled: false });
  assert.deepEqual(a.podSecurity, { disabled: false, enforce: 'baseline', warn: 'restricted', audit: 'restricted', exemptNamespaces: ['kube-system'] });
});

test('each can be turned off; limits, levels and extra exempt namespaces are taken', () => {
  const a = resolve({ auditLog: { disabled: true }, secretsEncryption: { disabled: true }, podSecurity: { disabled: true } });
  assert.deepEqual([a.auditLog.disabled, a.secretsEncryption.disabled, a.podSecurity.disabled], [true, true, true]);
  const b = resolve({ auditLog: { dir: '/srv/audit/', maxAgeDays: 7, maxBackups: 2, maxSizeMB: 20 }, podSecurity: { enforce: 'restricted', warn: 'restricted', audit: 'baseline', exemptNamespaces: ['monitoring', 'kube-system'] } });
  assert.deepEqual(b.auditLog, { disabled: false, dir: '/srv/audit', maxAgeDays: 7, maxBackups: 2, maxSizeMB: 20 });
  assert.deepEqual(b.podSecurity, { disabled: false, enforce: 'restricted', warn: 'restricted', audit: 'baseline', exemptNamespaces: ['kube-system', 'monitoring'] });
});

const REFUSED: [string, unknown, RegExp, RegExp][] = [
  ['relative audit dir', { auditLog: { dir: 'audit' } }, /apiServer\.auditLog\.dir/, /absolute/],
  ['audit dir /var', { auditLog: { dir: '/var' } }, /apiServer\.auditLog\.dir/, /system directory/],
  ['audit dir inside certificatesDir', { auditLog: { dir: '/etc/kubernetes/pki/audit' } }, /apiServer\.auditLog\.dir/, /certificatesDir/],
  ['maxAgeDays 0', { auditLog: { maxAgeDays: 0 } }, /apiServer\.auditLog\.maxAgeDays/, /1 to 3650/],
  ['maxBackups 1.5', { auditLog: { maxBackups: 1.5 } }, /apiServer\.auditLog\.maxBackups/, /whole number/],
  ['an unknown level', { podSecurity: { enforce: 'strict' } }, /apiServer\.podSecurity\.enforce/, /baseline/],
  ['a bad namespace', { podSecurity: { exemptNamespaces: ['Kube_Flannel'] } }, /apiServer\.podSecurity\.exemptNamespaces\[0\]/, /DNS-1123 label/],
  ['a typo', { secretsEncryption: { disable: true } }, /apiServer\.secretsEncryption\.disable/, /unknown field/],
];
for (const [name, value, what, why] of REFUSED)
  test(`refused: ${name}`, () => {
    assert.throws(() => resolve(value), (e: unknown) => e instanceof ConfigError && e.code === 'config-invalid' && what.test(e.what) && why.test(`${e.why} ${e.fix}`));
  });
