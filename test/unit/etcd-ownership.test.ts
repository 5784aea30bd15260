/** repairDataDirOwnership on a real directory tree (as root, like the rest of the suite's host tests). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmod, chown, lstat, mkdir, mkdtemp, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repairDataDirOwnership } from '../../lib/etcd/ownership.ts';
import { lookupUser } from '../../lib/host/files.ts';

test('a root-owned member/ and a 0755 data dir are given back to the etcd user, directories 0700, files keep their mode', async () => {
  const nobody = await lookupUser('nobody');
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
  assert.deepEqual(await repairDataDirOwnership(dir, 'nobody', { dryRun: false }), { chowned: [], chmodded: [] });
});
