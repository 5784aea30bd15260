/** The scheduled snapshot's unit text: the command quoted for systemd, the interval in seconds, deterministic. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { execArg, SNAPSHOT_SERVICE, snapshotUnits } from '../../../lib/etcd/snapshot-schedule.ts';
import { sampleConfig } from '../pki/fixtures.ts';

const cmd = { node: '/usr/bin/node', cli: '/opt/kubeception/bin/kubeception.js', configFile: '/root/site/kubeception.config.ts', siteDir: '/root/site' };

test('ExecStart arguments: plain ones as they are; spaces, quotes, %, $ and backslashes quoted; control characters refused', () => {
  assert.equal(execArg('/usr/bin/node'), '/usr/bin/node');
  assert.equal(execArg('/srv/my site/k.ts'), '"/srv/my site/k.ts"');
  assert.equal(execArg('/srv/100%/k.ts'), '"/srv/100%%/k.ts"');
  assert.equal(execArg('/srv/$HOME/k.ts'), '"/srv/$$HOME/k.ts"');
  assert.equal(execArg('/srv/a"b\\c'), '"/srv/a\\"b\\\\c"');
  assert.throws(() => execArg('/srv/a\nExecStartPre=/bin/sh'), /control character/);
});

test('service: oneshot `kubeception etcd snapshot save --config <site config>`, after etcd; timer: every interval in seconds, enabled by timers.target', () => {
  const { service, timer } = snapshotUnits(sampleConfig(), cmd);
  assert.match(service, /^# Written by kubeception/);
  assert.match(service, /^Type=oneshot$/m);
  assert.match(service, /^After=etcd\.service$/m);
  assert.match(service, /^WorkingDirectory=\/root\/site$/m);
  assert.match(service, /^ExecStart=\/usr\/bin\/node \/opt\/kubeception\/bin\/kubeception\.js etcd snapshot save --config \/root\/site\/kubeception\.config\.ts$/m);
  assert.match(timer, /^OnActiveSec=43200s$/m);
  assert.match(timer, /^OnUnitActiveSec=43200s$/m);
  assert.match(timer, new RegExp(`^Unit=${SNAPSHOT_SERVICE.replace('.', '\\.')}$`, 'm'));
  assert.match(timer, /^WantedBy=timers\.target$/m);
  assert.deepEqual(snapshotUnits(sampleConfig(), cmd), { service, timer }, 'the same inputs render the same bytes');
});

test('the interval and retention come from etcd.snapshots', () => {
  const c = sampleConfig();
  const { timer } = snapshotUnits({ ...c, etcd: { ...c.etcd, snapshots: { ...c.etcd.snapshots, interval: '1h30m', intervalMs: 5_400_000, retention: 9 } } }, cmd);
  assert.match(timer, /^OnUnitActiveSec=5400s$/m);
  assert.match(timer, /every 1h30m .*keeping 9/);
});
