/**
 * `etcd.snapshots` in the config: the defaults (k3s's 12 h / 5), and every refusal a ConfigError
 * naming the field — next to each, the nearest accepted value.
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
const resolve = (snapshots: unknown) => resolveConfig(parseConfig({ etcd: { snapshots } }, 'cfg.ts'), debian, facts, 'cfg.ts').etcd.snapshots;

test('defaults: /var/lib/kubeception/snapshots, keep 5, every 12h, on; the key outside the snapshot directory', () => {
  assert.deepEqual(resolve(undefined), { dir: '/var/lib/kubeception/snapshots', retention: 5, interval: '12h', intervalMs: 43_200_000, disabled: false, keyFile: '/etc/kubeception/snapshot.key' });
});

test('accepted: a dedicated directory, retention 1 and 1000, interval 1m and 8760h, disabled', () => {
  assert.equal(resolve({ dir: '/srv/etcd-snapshots/' }).dir, '/srv/etcd-snapshots');
  assert.equal(resolve({ retention: 1 }).retention, 1);
  assert.equal(resolve({ retention: 1000 }).retention, 1000);
  assert.equal(resolve({ interval: '1m' }).intervalMs, 60_000);
  assert.equal(resolve({ interval: '8760h' }).intervalMs, 8760 * 3_600_000);
  assert.equal(resolve({ disabled: true }).disabled, true);
  assert.equal(resolve({ keyFile: '/root/snapshot.key' }).keyFile, '/root/snapshot.key');
});

const REFUSED: [string, unknown, RegExp, RegExp][] = [
  ['relative dir', { dir: 'snapshots' }, /etcd\.snapshots\.dir/, /absolute/],
  ['dir /tmp/x', { dir: '/tmp/snaps' }, /etcd\.snapshots\.dir/, /inside \/tmp/],
  ['dir /var/lib', { dir: '/var/lib' }, /etcd\.snapshots\.dir/, /system directory/],
  ['dir inside certificatesDir', { dir: '/etc/kubernetes/pki/snapshots' }, /etcd\.snapshots\.dir/, /certificatesDir/],
  ['dir inside etcd.dataDir', { dir: '/var/lib/etcd/default/snap' }, /etcd\.snapshots\.dir/, /etcd\.dataDir/],
  ['dir holding etcd.dataDir', { dir: '/var/lib/etcd' }, /etcd\.snapshots\.dir/, /holds etcd\.dataDir/],
  ['retention 0', { retention: 0 }, /etcd\.snapshots\.retention/, /1 to 1000/],
  ['retention 2.5', { retention: 2.5 }, /etcd\.snapshots\.retention/, /1 to 1000/],
  ['retention 1001', { retention: 1001 }, /etcd\.snapshots\.retention/, /1 to 1000/],
  ['interval 12', { interval: '12' }, /etcd\.snapshots\.interval/, /not a positive duration/],
  ['interval 30s', { interval: '30s' }, /etcd\.snapshots\.interval/, /outside 1m to 8760h/],
  ['interval 8761h', { interval: '8761h' }, /etcd\.snapshots\.interval/, /outside/],
  ['keyFile relative', { keyFile: 'snapshot.key' }, /etcd\.snapshots\.keyFile/, /absolute/],
  ['keyFile a directory name', { keyFile: '/etc/kubeception/' }, /etcd\.snapshots\.keyFile/, /absolute file path/],
  ['keyFile inside the snapshot dir', { keyFile: '/var/lib/kubeception/snapshots/key' }, /etcd\.snapshots\.keyFile/, /inside the snapshot directory/],
  ['keyFile inside etcd.dataDir', { keyFile: '/var/lib/etcd/default/key' }, /etcd\.snapshots\.keyFile/, /etcd user/],
];
for (const [name, snapshots, field, why] of REFUSED)
  test(`refused: ${name}`, () => {
    assert.throws(() => resolve(snapshots), (e: unknown) => {
      assert.ok(e instanceof ConfigError, `expected ConfigError, got ${e}`);
      assert.match(e.what, field);
      assert.match(e.why, why);
      assert.ok(e.fix.length > 10);
      return true;
    });
  });

test('an unknown field is refused with "did you mean"', () => {
  assert.throws(() => resolve({ retension: 3 }), (e: unknown) => e instanceof ConfigError && /etcd\.snapshots\.retension/.test(e.what) && /retention/.test(e.why));
});
