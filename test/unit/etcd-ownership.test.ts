/**
 * repairDataDirOwnership and checkDataDirPath on real directory trees, as root (like the rest of the
 * suite's host tests), with the real non-root user `nobody` as the etcd user and as the attacker who
 * owns what is inside the data dir: a symlinked data dir is refused, a directory swapped for a
 * symlink while the walk runs never leads it out of the tree, a planted hard link is not given away.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmod, chown, link, lstat, mkdir, mkdtemp, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkDataDirPath, repairDataDirOwnership } from '../../lib/etcd/ownership.ts';
import { HostStateError } from '../../lib/errors.ts';
import { lookupUser } from '../../lib/host/files.ts';

const nobody = await lookupUser('nobody');

/** A root-owned 0755 base with `data` (the data dir, nobody's) and `victim` (root's) in it. */
async function layout() {
  const base = await mkdtemp(join(tmpdir(), 'etcd-data-'));
  await chmod(base, 0o755);
  const data = join(base, 'data');
  const victim = join(base, 'victim');
  await mkdir(join(victim, 'sub'), { recursive: true, mode: 0o755 });
  await writeFile(join(victim, 'secret'), 'root only', { mode: 0o644 });
  await mkdir(join(data, 'member', 'wal'), { recursive: true, mode: 0o700 });
  await writeFile(join(data, 'member', 'wal', '0.wal'), 'x', { mode: 0o600 });
  for (const p of [data, join(data, 'member'), join(data, 'member', 'wal')]) await chown(p, nobody.uid, nobody.gid);
  return { base, data, victim };
}

/** True while `victim` and everything in it is still root's with its mode. */
async function victimIntact(victim: string): Promise<string | undefined> {
  for (const [p, mode] of [[victim, 0o755], [join(victim, 'sub'), 0o755], [join(victim, 'secret'), 0o644]] as const) {
    const st = await lstat(p);
    if (st.uid !== 0 || (st.mode & 0o777) !== mode) return `${p} is now ${st.uid}:${st.gid} ${(st.mode & 0o777).toString(8)}`;
  }
  return undefined;
}

test('a root-owned member/ and a 0755 data dir are given back to the etcd user, directories 0700, files keep their mode', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'etcd-data-'));
  await mkdir(join(dir, 'member', 'wal'), { recursive: true });
  await writeFile(join(dir, 'member', 'wal', '0.wal'), 'x', { mode: 0o600 });
  await symlink('/etc/passwd', join(dir, 'link'));
  await chown(dir, nobody.uid, nobody.gid);
  await chmod(dir, 0o755);
  const dry = await repairDataDirOwnership(dir, 'nobody', { dryRun: true });
  assert.deepEqual(dry.chmodded.sort(), [dir, join(dir, 'member'), join(dir, 'member', 'wal')].sort());
  assert.ok(dry.chowned.includes(join(dir, 'member', 'wal', '0.wal')) && dry.chowned.includes(join(dir, 'link')));
  assert.equal((await lstat(dir)).mode & 0o777, 0o755, 'dry-run changes nothing');
  await repairDataDirOwnership(dir, 'nobody', { dryRun: false });
  for (const p of [dir, join(dir, 'member'), join(dir, 'member', 'wal')]) {
    const st = await lstat(p);
    assert.deepEqual([st.uid, st.mode & 0o777], [nobody.uid, 0o700], p);
  }
  assert.equal((await lstat(join(dir, 'member', 'wal', '0.wal'))).mode & 0o777, 0o600);
  assert.equal((await lstat('/etc/passwd')).uid, 0, 'the symlink target is not touched');
  assert.deepEqual(await repairDataDirOwnership(dir, 'nobody', { dryRun: false }), { chowned: [], chmodded: [], skipped: [] });
  await rm(dir, { recursive: true, force: true });
});

test('a symlinked data dir is refused (HostStateError naming it) and its target is not touched', async () => {
  const { base, data, victim } = await layout();
  const linked = join(base, 'linked');
  await symlink(victim, linked);
  try {
    const err = await checkDataDirPath(linked, 'nobody');
    assert.ok(err instanceof HostStateError && err.code === 'etcd-data-dir-symlink' && err.badInput, String(err));
    assert.match(err.what, new RegExp(linked));
    await assert.rejects(repairDataDirOwnership(linked, 'nobody', { dryRun: false }), (e: HostStateError) => e.code === 'etcd-data-dir-symlink');
    assert.equal(await victimIntact(victim), undefined);
    assert.equal(await checkDataDirPath(data, 'nobody'), undefined, 'the real dir passes, its parent root-owned');
  } finally {
    await rm(base, { recursive: true, force: true });
  }
});

test('an ancestor above the parent that the etcd user may write is refused; the parent itself may be its own (Debian\'s /var/lib/etcd)', async () => {
  const { base } = await layout();
  try {
    const home = join(base, 'home');
    await mkdir(join(home, 'cluster'), { recursive: true });
    await chown(home, nobody.uid, nobody.gid);
    assert.equal(await checkDataDirPath(join(home, 'default'), 'nobody'), undefined, 'parent owned by etcd: fine');
    const deep = await checkDataDirPath(join(home, 'cluster', 'default'), 'nobody');
    assert.equal(deep?.code, 'etcd-data-dir-parent');
    assert.match(deep!.why, new RegExp(`ancestor ${home} is writable`));
    await chown(home, 0, 0);
    await chmod(home, 0o777);
    assert.equal((await checkDataDirPath(join(home, 'cluster', 'default'), 'nobody'))?.code, 'etcd-data-dir-parent', 'world-writable');
    await chmod(home, 0o1777);
    assert.equal(await checkDataDirPath(join(home, 'cluster', 'default'), 'nobody'), undefined, 'sticky, and the child is root\'s: cannot be swapped');
  } finally {
    await rm(base, { recursive: true, force: true });
  }
});

test('a hard link to a file of another owner inside the data dir is not given away', async () => {
  const { base, data, victim } = await layout();
  try {
    await link(join(victim, 'secret'), join(data, 'member', 'planted'));
    const r = await repairDataDirOwnership(data, 'nobody', { dryRun: false });
    assert.deepEqual(r.skipped, [join(data, 'member', 'planted')]);
    assert.equal(await victimIntact(victim), undefined);
  } finally {
    await rm(base, { recursive: true, force: true });
  }
});

test('nobody swapping member/wal for a symlink to a root directory during the walks: the walk never leaves the tree', async () => {
  const { base, data, victim } = await layout();
  const stop = join(base, 'stop');
  // The attacker: as nobody, swaps wal ↔ a symlink to victim as fast as it can, for at most 20 s.
  const swapper = `
    const fs = require('fs'); const m = ${JSON.stringify(join(data, 'member'))}; const end = Date.now() + 20000;
    while (Date.now() < end && !fs.existsSync(${JSON.stringify(stop)})) {
      try { fs.renameSync(m + '/wal', m + '/wal.real'); fs.symlinkSync(${JSON.stringify(victim)}, m + '/wal'); fs.unlinkSync(m + '/wal'); fs.renameSync(m + '/wal.real', m + '/wal'); } catch {}
    }`;
  const child = spawn('setpriv', [`--reuid=${nobody.uid}`, `--regid=${nobody.gid}`, '--clear-groups', process.execPath, '-e', swapper], { stdio: 'ignore' });
  const exited = new Promise((r) => child.once('exit', r));
  try {
    await new Promise((r) => setTimeout(r, 300)); // let it start
    let rounds = 0;
    let broken: string | undefined;
    for (const end = Date.now() + 4_000; Date.now() < end && !broken; rounds++) {
      // Work for every walk: the data dir drifted to 0755 (never swapped: its parent is root's).
      await chmod(data, 0o755);
      await repairDataDirOwnership(data, 'nobody', { dryRun: false }).catch((e) => assert.ok(e.code === 'ENOENT', String(e)));
      broken = await victimIntact(victim);
    }
    assert.equal(broken, undefined, `after ${rounds} walks`);
    assert.ok(rounds > 20, `only ${rounds} walks ran`);
    assert.ok((await stat(join(data, 'member'))).uid === nobody.uid, 'the walk still repaired the real tree');
  } finally {
    await writeFile(stop, '');
    await exited;
    await rm(base, { recursive: true, force: true });
  }
});
