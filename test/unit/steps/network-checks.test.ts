/**
 * The DNS and pod-network preflight checks (lib/steps/preflight/network-checks.ts) against a fake file system
 * (pure unit: the checks only read files).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { nameservers, networkChecks } from '../../../lib/steps/preflight/network-checks.ts';
import type { Context } from '../../../lib/context.ts';
import type { ResolvedConfig } from '../../../lib/types.ts';
import { sampleConfig } from '../pki/fixtures.ts';

/** Runs every check against `files` (path → content; a directory lists the names under it). */
async function failures(files: Record<string, string>, over: Partial<ResolvedConfig> = {}) {
  const ctx = {
    config: sampleConfig(over),
    files: {
      read: async (p: string) => files[p],
      exists: async (p: string) => p in files,
      list: async (dir: string) => Object.keys(files).filter((p) => p.startsWith(`${dir}/`)).map((p) => p.slice(dir.length + 1)).sort(),
    },
  } as unknown as Context;
  const out: Record<string, { message: string; fix: string }> = {};
  for (const c of networkChecks) {
    const r = await c.run(ctx);
    if (r) out[c.id] = r;
  }
  return out;
}

const good = { '/etc/resolv.conf': 'search example.com\nnameserver 10.255.255.53\n' };

test('a host with upstream resolvers and no other CNI config passes', async () => {
  assert.deepEqual(await failures(good), {});
  assert.deepEqual(await failures({ ...good, '/etc/cni/net.d/10-flannel.conflist': '{}', '/etc/cni/net.d/99-loopback.conf': '{}' }), {});
});

test('ResolvConf: a loopback stub is a forwarding loop; the fix names systemd-resolved\'s file when it exists', async () => {
  const f = await failures({ ...good, '/etc/resolv.conf': 'nameserver 127.0.0.53\noptions edns0\n', '/run/systemd/resolve/resolv.conf': 'nameserver 192.0.2.1\n' });
  assert.match(f.ResolvConf!.message, /127\.0\.0\.53.*forwarding loop/);
  assert.match(f.ResolvConf!.fix, /kubelet\.extraConfig\.resolvConf to '\/run\/systemd\/resolve\/resolv\.conf'/);
  assert.match((await failures({ ...good, '/etc/resolv.conf': 'nameserver ::1\n' })).ResolvConf!.message, /::1/);
  assert.match((await failures({ ...good, '/etc/resolv.conf': '# empty\n' })).ResolvConf!.message, /no nameserver/);
  assert.match((await failures({})).ResolvConf!.message, /does not exist/);
});

test('ResolvConf reads the kubelet\'s resolvConf, and is off with dns.disabled', async () => {
  const stub = { ...good, '/etc/resolv.conf': 'nameserver 127.0.0.53\n', '/run/systemd/resolve/resolv.conf': 'nameserver 192.0.2.1\n' };
  const kubelet = { ...sampleConfig().kubelet, extraConfig: { resolvConf: '/run/systemd/resolve/resolv.conf' } };
  assert.equal((await failures(stub, { kubelet })).ResolvConf, undefined);
  assert.equal((await failures(stub, { dns: { disabled: true, image: 'x:1' } })).ResolvConf, undefined);
});

test('CNIConfigOrder: a config sorting before 10-flannel.conflist is named, unless networking.plugin is none', async () => {
  const files = { ...good, '/etc/cni/net.d/10-bed.conflist': '{}', '/etc/cni/net.d/05-old.conf': '{}', '/etc/cni/net.d/README': 'x' };
  const f = await failures(files);
  assert.match(f.CNIConfigOrder!.message, /05-old\.conf, \/etc\/cni\/net\.d\/10-bed\.conflist sort before flannel's 10-flannel\.conflist/);
  assert.match(f.CNIConfigOrder!.fix, /networking\.plugin: 'none'/);
  const none = { ...sampleConfig().podNetwork, plugin: 'none' as const };
  assert.deepEqual(await failures(files, { podNetwork: none }), {});
});

test('nameservers() parses resolv.conf lines', () => {
  assert.deepEqual(nameservers('# c\nnameserver 1.1.1.1\n  nameserver   fd00::53\nsearch x\nnameserver\n'), ['1.1.1.1', 'fd00::53']);
});
