/** causeLine: the journal line that names why a unit failed. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { causeLine } from '../../../lib/host/cause.ts';
import { UnitError } from '../../../lib/errors.ts';

const ETCD = [
  'Starting etcd - highly-available key value store...',
  '{"level":"info","msg":"Loaded cluster information"}',
  '{"level":"info","msg":"configuring peer listeners"}',
  '{"level":"warn","msg":"check file permission: directory \\"/var/lib/etcd/default\\" exist, but the permission is \\"drwxr-xr-x\\""}',
  '{"level":"fatal","msg":"failed to open WAL","error":"open /var/lib/etcd/default/member/wal: permission denied"}',
  'etcd.service: Main process exited, code=exited, status=1/FAILURE',
  'etcd.service: Failed with result \'exit-code\'.',
  'Failed to start etcd - highly-available key value store.',
];

test('the permission-denied line wins over fatal/error lines and systemd status lines', () => {
  assert.match(causeLine(ETCD)!, /member\/wal: permission denied/);
});

test('a zap JSON line reads as msg: path: error, without the stack trace', () => {
  const line = '{"level":"fatal","msg":"failed to create snapshot directory","path":"/var/lib/etcd/default/member/snap","error":"open /var/lib/etcd/default/member/snap/.touch: permission denied","stacktrace":"go.etcd.io/etcd/etcdserver.NewServer"}';
  assert.equal(causeLine([line]), 'failed to create snapshot directory: /var/lib/etcd/default/member/snap: open /var/lib/etcd/default/member/snap/.touch: permission denied');
});

test('no telling line: undefined', () => {
  assert.equal(causeLine(['Started foo.', 'all fine']), undefined);
});

test('UnitError puts the cause line in why, not the whole journal', () => {
  const e = new UnitError('etcd.service', 'StartUnit finished with result "failed"', ETCD);
  assert.match(e.why, /result "failed": .*permission denied/);
  assert.doesNotMatch(e.why, /configuring peer listeners/);
});
