/** The runtime's cgroup driver from its own config, and the kubelet's matched to it (or refused). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cgroupDriverMismatch, kubeletCgroupDriver, runtimeCgroupDriver } from '../../../lib/host/cgroup-driver.ts';
import { sampleConfig } from '../pki/fixtures.ts';

const files = (entries: Record<string, string>) => ({
  read: async (p: string) => entries[p],
  list: async (d: string) => Object.keys(entries).filter((p) => p.startsWith(`${d}/`)).map((p) => p.slice(d.length + 1)),
}) as never;
const v2 = (systemd?: boolean) => `version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]\n${systemd === undefined ? '' : `SystemdCgroup = ${systemd}\n`}`;
const containerd = (text?: string, driver?: 'systemd' | 'cgroupfs') => ({
  config: sampleConfig({ kubelet: { cgroupDriver: driver ?? 'systemd', cgroupDriverSet: driver !== undefined, criSocket: 'unix:///run/containerd/containerd.sock', extraConfig: {} } }),
  files: files(text === undefined ? {} : { '/etc/containerd/config.toml': text }),
});

test('containerd: SystemdCgroup true → systemd; false, unset or no config.toml → cgroupfs', async () => {
  assert.equal((await runtimeCgroupDriver(containerd(v2(true))))?.driver, 'systemd');
  assert.equal((await runtimeCgroupDriver(containerd(v2(false))))?.driver, 'cgroupfs');
  assert.equal((await runtimeCgroupDriver(containerd(v2())))?.driver, 'cgroupfs');
  assert.equal((await runtimeCgroupDriver(containerd()))?.driver, 'cgroupfs');
  assert.equal((await runtimeCgroupDriver(containerd('[plugins.cri.containerd.runtimes.runc.options]\nSystemdCgroup = true\n')))?.driver, 'systemd', 'config version 1');
});

test('containerd 2 (config version 3): SystemdCgroup of io.containerd.cri.v1.runtime, as the bed writes it; the version 2 table is not read there', async () => {
  const { containerdConfig } = await import('../../bed/kubelet.ts');
  assert.equal((await runtimeCgroupDriver(containerd(containerdConfig('bed'))))?.driver, 'systemd');
  assert.equal((await runtimeCgroupDriver(containerd(containerdConfig('debian'))))?.driver, 'systemd');
  const v3 = (systemd: boolean) => `version = 3\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]\nSystemdCgroup = ${systemd}\n`;
  assert.equal((await runtimeCgroupDriver(containerd(v3(true))))?.driver, 'systemd');
  assert.equal((await runtimeCgroupDriver(containerd(v3(false))))?.driver, 'cgroupfs');
  assert.equal((await runtimeCgroupDriver(containerd(`version = 3\n${v2(true).replace('version = 2\n', '')}`)))?.driver, 'cgroupfs', 'a version 2 table in a version 3 file is ignored by containerd 2');
});

test('CRI-O: cgroup_manager, drop-ins win; unset → systemd', async () => {
  const crio = (entries: Record<string, string>) => ({ config: sampleConfig({ kubelet: { cgroupDriver: 'systemd', criSocket: 'unix:///var/run/crio/crio.sock', extraConfig: {} } }), files: files(entries) });
  assert.equal((await runtimeCgroupDriver(crio({})))?.driver, 'systemd');
  assert.equal((await runtimeCgroupDriver(crio({ '/etc/crio/crio.conf': '[crio.runtime]\ncgroup_manager = "cgroupfs"\n' })))?.driver, 'cgroupfs');
  assert.equal((await runtimeCgroupDriver(crio({ '/etc/crio/crio.conf': '[crio.runtime]\ncgroup_manager = "cgroupfs"\n', '/etc/crio/crio.conf.d/10-x.conf': '[crio.runtime]\ncgroup_manager = "systemd"\n' })))?.driver, 'systemd');
});

test('kubelet: follows the runtime unless the config sets it; a set, different driver fails preflight naming both', async () => {
  assert.equal(await kubeletCgroupDriver(containerd(v2(false))), 'cgroupfs');
  assert.equal(await kubeletCgroupDriver(containerd(v2(true))), 'systemd');
  assert.equal(await cgroupDriverMismatch(containerd(v2(false))), undefined, 'not set: matched, no failure');
  assert.equal(await cgroupDriverMismatch(containerd(v2(true), 'systemd')), undefined);
  const m = await cgroupDriverMismatch(containerd(v2(false), 'systemd'));
  assert.match(m!.message, /"systemd" in the config, but containerd uses "cgroupfs" \(\/etc\/containerd\/config\.toml: SystemdCgroup = false/);
  assert.match(m!.fix, /kubelet\.cgroupDriver: 'cgroupfs'.*SystemdCgroup = true in \/etc\/containerd\/config\.toml/);
});

test('an unparsable runtime config is a host-state error naming the file', async () => {
  await assert.rejects(runtimeCgroupDriver(containerd('[[[')), (e: any) => e.code === 'runtime-config-invalid' && e.what === '/etc/containerd/config.toml');
});
