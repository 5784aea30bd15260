/**
 * Host state kubeception owns is repaired, and what it cannot repair is named: on a real systemd
 * host with Debian's etcd, a data dir whose owner and mode drifted (kubespray#980: root-owned
 * `member/`, mode 0755) is given back to the etcd user (0700) before etcd starts; a permission
 * problem outside the data dir fails the run with etcd's own cause line ("permission denied"),
 * not a page of journal; a data dir swapped for a symlink is refused before any write.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { bootHost, type Host } from '../bed/bed.ts';
import { kc, stepsWith, writeConfig } from '../helpers/bed-cli.ts';

const UNTIL_ETCD = ['run', 'bootstrap', '--only', 'preflight,certs,kubeconfig,etcd', '--ignore-preflight-errors', 'FileExisting-kubelet,Service-kubelet,ImagePull', '--output', 'json'];
const DATA = '/var/lib/etcd/default';

describe('etcd data dir drift on a real systemd host', { timeout: 600_000 }, () => {
  let host: Host;
  before(async () => {
    host = await bootHost({ name: 'c13e' });
    await writeConfig(host, { distro: 'debian' });
    const r = await kc(host, UNTIL_ETCD);
    assert.equal(r.code, 0, r.stderr);
  });
  after(async () => host?.destroy());

  test('root-owned member/ and a 0755 data dir: restored recursively to etcd, 0700, and etcd starts healthy', async () => {
    await host.execOk(['systemctl', 'stop', 'etcd']);
    await host.execOk(['sh', '-c', `chown -R root:root ${DATA}/member && chmod 0755 ${DATA} ${DATA}/member`]);
    const r = await kc(host, UNTIL_ETCD);
    assert.equal(r.code, 0, `${r.stderr}\n${r.stdout.slice(-2000)}`);
    assert.ok(stepsWith(r.events, 'step-done').includes('etcd'));
    assert.ok(r.events.some((e) => e.event === 'log' && e.level === 'warn' && /data dir drifted/.test(e.message)));
    const wrong = await host.execOk(['sh', '-c', `find ${DATA} \\( ! -user etcd -o ! -group etcd \\) -print; find ${DATA} -type d ! -perm 0700 -print`]);
    assert.equal(wrong.trim(), '', `entries not etcd-owned or dirs not 0700:\n${wrong}`);
    assert.equal((await host.execOk(['systemctl', 'is-active', 'etcd'])).trim(), 'active');
  });

  test('a data dir the etcd user replaced with a symlink to a root directory is refused (exit 2, names it) and the target is untouched', async () => {
    await host.execOk(['systemctl', 'stop', 'etcd']);
    // The etcd user owns /var/lib/etcd (Debian): it can swap its data dir for a link to an empty root directory on root's PATH.
    await host.execOk(['sh', '-c', `mv ${DATA} ${DATA}.real && mkdir -p /usr/local/sbin && runuser -u etcd -- ln -s /usr/local/sbin ${DATA}`]);
    const before = await host.execOk(['sh', '-c', 'stat -c "%U:%G %a" /usr/local/sbin; ls -A /usr/local/sbin']);
    try {
      const r = await kc(host, UNTIL_ETCD);
      assert.equal(r.code, 2, `${r.stderr}
${r.stdout.slice(-2000)}`);
      assert.ok(r.stderr.includes(`etcd data dir ${DATA}: it is a symlink (to /usr/local/sbin)`), r.stderr);
      assert.equal(await host.execOk(['sh', '-c', 'stat -c "%U:%G %a" /usr/local/sbin; ls -A /usr/local/sbin']), before, 'the link target is not chowned and holds no marker');
      assert.equal(stepsWith(r.events, 'step-started').filter((s: string) => s !== 'preflight').length, 0, 'refused in preflight, before any write');
    } finally {
      await host.execOk(['sh', '-c', `rm ${DATA} && mv ${DATA}.real ${DATA}`]);
    }
  });

  test('a permission problem kubeception does not own: the run fails with the cause line, not the journal', async () => {
    await host.execOk(['systemctl', 'stop', 'etcd']);
    const was = (await host.execOk(['stat', '-c', '%U:%G %a', '/var/lib/etcd'])).trim().split(' ');
    await host.execOk(['sh', '-c', 'chown root:root /var/lib/etcd && chmod 0700 /var/lib/etcd']); // root-only parent: the etcd user cannot reach its data dir
    try {
      const r = await kc(host, UNTIL_ETCD);
      assert.equal(r.code, 1, r.stderr);
      const failed = r.events.find((e) => e.event === 'step-failed');
      assert.equal(failed?.step, 'etcd');
      assert.match(failed.message, /permission denied/i);
      assert.ok(failed.message.split('\n').length <= 3, `a short message, got:\n${failed.message}`);
    } finally {
      await host.execOk(['sh', '-c', `chown ${was[0]} /var/lib/etcd && chmod ${was[1]} /var/lib/etcd`]);
    }
  });
});
