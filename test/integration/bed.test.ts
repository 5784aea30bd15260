/**
 * The test bed itself: hosts boot a real systemd with their own D-Bus, network and cgroups, reboot with
 * their files kept, and destroyAllHosts() leaves nothing behind. Needs root (as CI runs).
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { after, describe, test } from 'node:test';
import { BED_CIDR, BRIDGE_IP, bootHost, destroyAllHosts, type Host, REPO_ROOT } from '../bed/bed.ts';
import { run, runOk } from '../bed/proc.ts';

const ok = (host: Host, argv: string[]) => host.execOk(argv, { timeoutMs: 60_000 });

/** Everything the bed could leave on the machine, as one comparable object. */
async function traces() {
  const cgroupDirs: string[] = [];
  const walk = (dir: string, depth: number) => {
    if (depth > 4) return;
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (!e.isDirectory()) continue;
      if (e.name === 'kubeception-bed') cgroupDirs.push(`${dir}/${e.name}`);
      else walk(`${dir}/${e.name}`, depth + 1);
    }
  };
  walk('/sys/fs/cgroup', 0);
  return {
    mounts: readFileSync('/proc/mounts', 'utf8').split('\n').filter((l) => /kubeception-bed|kc-bed|\/run\/netns\/kc-/.test(l)),
    netns: (await runOk(['ip', 'netns', 'list'])).split('\n').filter((l) => l.startsWith('kc-')),
    routes: (await runOk(['ip', '-4', 'route', 'show', 'table', 'all'])).split('\n').filter((l) => l.includes('10.250.')),
    cgroupDirs,
    stateDir: existsSync('/run/kubeception-bed'),
  };
}

const CLEAN = { mounts: [], netns: [], routes: [], cgroupDirs: [], stateDir: false };

describe('test bed', { timeout: 300_000 }, () => {
  after(() => destroyAllHosts());

  test('starts from a clean machine', async () => {
    await destroyAllHosts();
    assert.deepEqual(await traces(), CLEAN);
  });

  test('one host: systemd, D-Bus, hostname, etcd unit, network, reboot', async (t) => {
    const host = await bootHost({ name: 'bed-a', hostname: 'Node-A' });
    assert.deepEqual(host.failedUnits, [], 'no unit failed at boot');

    await t.test('PID 1 is systemd', async () => {
      assert.equal((await ok(host, ['cat', '/proc/1/comm'])).trim(), 'systemd');
      assert.match(await ok(host, ['readlink', '/proc/1/exe']), /\/lib\/systemd\/systemd$/m);
    });

    await t.test('systemd answers over the host system bus, inside and from the machine', async () => {
      assert.equal((await ok(host, ['systemctl', 'is-system-running'])).trim(), 'running');
      const prop = ['org.freedesktop.systemd1', '/org/freedesktop/systemd1', 'org.freedesktop.systemd1.Manager', 'SystemState'];
      assert.equal((await ok(host, ['busctl', '--system', 'get-property', ...prop])).trim(), 's "running"');
      const outside = await runOk(['busctl', `--address=${host.busAddress}`, 'get-property', ...prop]);
      assert.equal(outside.trim(), 's "running"');
    });

    await t.test('hostname, /etc/hosts and the repo are in place', async () => {
      assert.equal((await ok(host, ['hostname'])).trim(), 'Node-A');
      assert.equal((await host.readFile('/etc/hostname')).trim(), 'Node-A');
      assert.match(await host.readFile('/etc/hosts'), new RegExp(`^${host.ip.replaceAll('.', '\\.')}\\tNode-A bed-a$`, 'm'));
      assert.ok(await host.exists(`${REPO_ROOT}/package.json`));
      assert.match(await ok(host, ['node', '--version']), /^v\d+/);
    });

    await t.test('the stock etcd unit is present, not started at boot, and starts', async () => {
      assert.equal((await host.exec(['systemctl', 'is-enabled', 'etcd.service'])).stdout.trim(), 'disabled');
      assert.equal((await host.exec(['systemctl', 'is-active', 'etcd.service'])).stdout.trim(), 'inactive');
      assert.equal(await host.exists('/var/lib/etcd/default/member'), false, 'no foreign etcd data');
      await ok(host, ['systemctl', 'start', 'etcd.service']);
      assert.equal((await ok(host, ['systemctl', 'is-active', 'etcd.service'])).trim(), 'active');
      const health = await host.exec(['etcdctl', '--endpoints=http://127.0.0.1:2379', 'endpoint', 'health']);
      assert.match(health.stdout + health.stderr, /is healthy/);
      await ok(host, ['systemctl', 'stop', 'etcd.service']);
      await ok(host, ['sh', '-c', 'rm -rf /var/lib/etcd/default']);
      assert.equal(await host.exists('/var/lib/etcd/default'), false);
    });

    await t.test('network: the bridge answers inside; the machine has only a blackhole route', async () => {
      await ok(host, ['ping', '-c', '1', '-W', '2', BRIDGE_IP]);
      const route = await runOk(['ip', '-4', 'route', 'show', BED_CIDR]);
      assert.match(route.trim(), new RegExp(`^blackhole ${BED_CIDR.replace('.', '\\.')}`));
      const get = await run(['ip', '-4', 'route', 'get', host.ip]);
      assert.notEqual(get.code, 0, `the machine must not route to ${host.ip}: ${get.stdout}`);
    });

    await t.test('stop + start keeps the files and kills the processes', async () => {
      await host.writeFile('/root/survives', 'yes\n');
      await ok(host, ['systemd-run', '--unit=bed-sleeper', 'sleep', '3600']);
      assert.equal((await ok(host, ['systemctl', 'is-active', 'bed-sleeper'])).trim(), 'active');
      const oldPid = host.pid;
      await host.stop();
      assert.equal(host.running, false);
      assert.equal(existsSync(`/proc/${oldPid}`), false);
      await host.start();
      assert.notEqual(host.pid, oldPid);
      assert.equal(await host.readFile('/root/survives'), 'yes\n');
      assert.equal((await host.exec(['systemctl', 'is-active', 'bed-sleeper'])).stdout.trim(), 'inactive');
      assert.equal((await ok(host, ['hostname'])).trim(), 'Node-A');
    });

    await host.destroy();
  });

  test('two hosts at once reach each other', async () => {
    const [a, b] = await Promise.all([bootHost({ name: 'bed-b' }), bootHost({ name: 'bed-c', ip: '10.250.0.99' })]);
    assert.equal(b.ip, '10.250.0.99');
    assert.notEqual(a.ip, b.ip);
    await ok(a, ['ping', '-c', '1', '-W', '2', b.ip]);
    await ok(b, ['ping', '-c', '1', '-W', '2', a.ip]);
    assert.notEqual((await ok(a, ['cat', '/etc/machine-id'])).trim(), (await ok(b, ['cat', '/etc/machine-id'])).trim());
  });

  test('destroyAllHosts leaves nothing behind', async () => {
    await destroyAllHosts();
    assert.deepEqual(await traces(), CLEAN);
  });
});
