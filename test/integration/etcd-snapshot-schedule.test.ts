/**
 * Scheduled etcd snapshots on a real systemd host: bootstrap's `etcd-snapshot-schedule` writes the
 * timer and oneshot service, systemd has the timer enabled and active with the configured interval,
 * the service takes a snapshot when started, a re-run changes nothing, a new interval restarts the
 * timer, `etcd.snapshots.disabled` removes it, and `reset` removes the units but keeps the snapshots.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { bootHost, type Host } from '../bed/bed.ts';
import { kc, writeConfig } from '../helpers/bed-cli.ts';

const UNITS = '/etc/systemd/system';
const TIMER = 'kubeception-etcd-snapshot.timer';
const SERVICE = 'kubeception-etcd-snapshot.service';
const DIR = '/var/lib/kubeception/snapshots';
const ONLY = ['run', 'bootstrap', '--only', 'preflight,certs,kubeconfig,etcd,etcd-snapshot-schedule', '--ignore-preflight-errors', 'FileExisting-kubelet,Service-kubelet,ImagePull', '--output', 'json'];
const state = async (host: Host) => (await host.exec(['systemctl', 'is-active', TIMER])).stdout.trim();
const timers = async (host: Host) => (await host.execOk(['systemctl', 'show', TIMER, '-p', 'TimersMonotonic', '--value'])).trim();

describe('scheduled etcd snapshots on a real systemd host', { timeout: 600_000 }, () => {
  let host: Host;
  const bootstrap = async (snapshots: object) => {
    await writeConfig(host, { distro: 'debian', etcd: { snapshots } });
    const r = await kc(host, ONLY);
    assert.equal(r.code, 0, r.stderr + r.stdout.slice(-2000));
    return r.events.find((e) => e.event === 'step-done' && e.step === 'etcd-snapshot-schedule');
  };
  before(async () => {
    host = await bootHost({ name: 'snap-timer' });
  });
  after(async () => host?.destroy());

  test('first run: the unit files written, the timer enabled and active every 12h (the default)', async () => {
    const done = await bootstrap({});
    assert.equal(done?.changed, true);
    for (const u of [TIMER, SERVICE]) {
      assert.equal((await host.execOk(['stat', '-c', '%a', `${UNITS}/${u}`])).trim(), '644');
      assert.match(await host.readFile(`${UNITS}/${u}`), /^# Written by kubeception/);
    }
    assert.equal((await host.execOk(['systemctl', 'is-enabled', TIMER])).trim(), 'enabled');
    assert.equal(await state(host), 'active');
    assert.match(await timers(host), /OnActiveUSec=12h/);
    assert.match(await timers(host), /OnUnitActiveUSec=12h/);
  });

  test('the service takes a snapshot (kubeception etcd snapshot save with the site config)', async () => {
    const t0 = Date.now();
    await host.execOk(['systemctl', 'start', SERVICE], { timeoutMs: 120_000 });
    console.log(`[etcd-snapshot-schedule] the service's save took ${Date.now() - t0} ms`);
    assert.equal((await host.execOk(['systemctl', 'show', SERVICE, '-p', 'Result', '--value'])).trim(), 'success');
    const names = (await host.execOk(['ls', DIR])).trim().split('\n');
    assert.equal(names.length, 1);
    assert.match(names[0]!, /^etcd-snapshot-snap-timer-\d{8}T\d{6}Z$/);
    assert.match(await host.journal(SERVICE), /saved \/var\/lib\/kubeception\/snapshots\/etcd-snapshot-snap-timer-/);
  });

  test('a re-run converges (nothing changed); a new interval rewrites and restarts the timer', async () => {
    assert.equal((await bootstrap({})).changed, false);
    const done = await bootstrap({ interval: '6h' });
    assert.equal(done.changed, true);
    assert.match(done.detail, /kubeception-etcd-snapshot\.timer restarted/);
    assert.equal(await state(host), 'active');
    assert.match(await timers(host), /OnUnitActiveUSec=6h/);
  });

  test('etcd.snapshots.disabled: the timer stopped and disabled, both files gone; the snapshot kept', async () => {
    const done = await bootstrap({ disabled: true });
    assert.equal(done.changed, true);
    assert.notEqual(await state(host), 'active');
    for (const u of [TIMER, SERVICE]) assert.equal(await host.exists(`${UNITS}/${u}`), false, u);
    assert.equal((await bootstrap({ disabled: true })).changed, false);
    assert.equal((await host.execOk(['ls', DIR])).trim().split('\n').length, 1);
  });

  test('reset removes the timer and service, keeps the snapshots and their key', async () => {
    await bootstrap({});
    assert.equal(await state(host), 'active');
    const r = await kc(host, ['reset', '--force', '--output', 'json'], { timeoutMs: 300_000 });
    assert.equal(r.code, 0, r.stderr + r.stdout.slice(-3000));
    // reset's JSON ends with its summary, which carries the run's events.
    const events = r.events.flatMap((e) => (Array.isArray(e.events) ? e.events : [e]));
    assert.match(events.find((e) => e.event === 'step-done' && e.step === 'stop-etcd')?.detail ?? '', /kubeception-etcd-snapshot\.timer stopped, kubeception-etcd-snapshot\.timer disabled/);
    assert.notEqual(await state(host), 'active');
    for (const u of [TIMER, SERVICE]) assert.equal(await host.exists(`${UNITS}/${u}`), false, u);
    assert.equal((await host.execOk(['ls', DIR])).trim().split('\n').length, 1, 'the snapshot is kept');
    assert.equal(await host.exists('/etc/kubeception/snapshot.key'), true, 'the key is kept');
  });
});
