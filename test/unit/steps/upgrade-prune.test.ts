/**
 * Upgrade backup pruning against real directories through the real files backend: the newest
 * KEEP_BACKUPS backup directories stay (this upgrade's always), older ones go with everything in
 * them, nothing else in the directory is touched, a symlink planted as a backup is removed as a link
 * (its target survives); under dry-run nothing changes and the removals are recorded.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RealFiles } from '../../../lib/host/files.ts';
import { DryRunFiles } from '../../../lib/host/files-dry-run.ts';
import { KEEP_BACKUPS, pruneBackups } from '../../../lib/steps/upgrade/upgrade.ts';

const name = (i: number) => `2026-12-0${i}T10-00-00-000Z-v1.34.4-to-v1.35.4`;

async function backups(n: number) {
  const dir = await mkdtemp(join(tmpdir(), 'upgrade-'));
  for (let i = 1; i <= n; i++) {
    await mkdir(join(dir, name(i), 'objects'), { recursive: true, mode: 0o700 });
    await writeFile(join(dir, name(i), 'etcd-snapshot.db'), 'snapshot', { mode: 0o600 });
    await writeFile(join(dir, name(i), 'objects', 'objects.yaml'), 'ca.key: secret', { mode: 0o600 });
  }
  await writeFile(join(dir, 'journal.json'), '{}');
  await writeFile(join(dir, 'notes.txt'), 'an operator\'s');
  return dir;
}

test(`the 4th backup prunes the oldest: the newest ${KEEP_BACKUPS} stay, whole trees go, other entries stay`, async () => {
  assert.equal(KEEP_BACKUPS, 3);
  const dir = await backups(4);
  try {
    const removed = await pruneBackups(new RealFiles(), dir, join(dir, name(4)));
    assert.deepEqual(removed, [name(1)]);
    assert.deepEqual((await readdir(dir)).sort(), [name(2), name(3), name(4), 'journal.json', 'notes.txt'].sort());
    assert.equal(await readFile(join(dir, name(4), 'objects', 'objects.yaml'), 'utf8'), 'ca.key: secret');
    assert.deepEqual(await pruneBackups(new RealFiles(), dir, join(dir, name(4))), [], 'a second prune removes nothing');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('this upgrade\'s backup is kept even when it sorts first; a symlink named like a backup is removed as a link', async () => {
  const dir = await backups(5);
  const target = await mkdtemp(join(tmpdir(), 'victim-'));
  await writeFile(join(target, 'keep-me'), 'x');
  // A link older than every backup: pruned as an entry, never followed into its target.
  await symlink(target, join(dir, '2026-12-00T10-00-00-000Z-v1.33.0-to-v1.34.4'));
  try {
    const removed = await pruneBackups(new RealFiles(), dir, join(dir, name(1)));
    assert.deepEqual(removed, ['2026-12-00T10-00-00-000Z-v1.33.0-to-v1.34.4', name(2), name(3)]);
    assert.deepEqual((await readdir(dir)).filter((d) => d.startsWith('2026')).sort(), [name(1), name(4), name(5)]);
    assert.deepEqual(await readdir(target), ['keep-me'], 'the link\'s target is untouched');
  } finally {
    await rm(dir, { recursive: true, force: true });
    await rm(target, { recursive: true, force: true });
  }
});

test('under dry-run nothing is removed; the removals are recorded as tree removals and reads see them gone', async () => {
  const dir = await backups(4);
  try {
    const files = new DryRunFiles();
    assert.deepEqual(await pruneBackups(files, dir, join(dir, name(4))), [name(1)]);
    assert.equal((await readdir(dir)).length, 6, 'nothing removed');
    assert.deepEqual(files.planned, [{ op: 'remove', path: join(dir, name(1)), tree: true }]);
    assert.equal(await files.exists(join(dir, name(1), 'etcd-snapshot.db')), false);
    assert.deepEqual(await files.list(join(dir, name(1))), []);
    assert.ok(!(await files.list(dir)).includes(name(1)));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
