/**
 * RealFiles' owner and symlink semantics on real files, as root, with the real user `nobody` as the
 * owner-to-be (and as the attacker who owns the parent directory):
 * - mkdir with an owner refuses a symlink and never chowns its target; creates 0700/owner; chowns an
 *   existing directory of another owner; without an owner a symlink to a directory is that directory;
 * - write without an owner follows a symlinked parent (an operator's layout); with an owner it
 *   refuses a symlinked parent, and a parent swapped for a symlink mid-way never receives the file;
 * - a symlink at the target path is replaced, its target untouched.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmod, chown, lstat, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lookupUser, RealFiles } from '../../../lib/host/files.ts';
import type { HostStateError } from '../../../lib/errors.ts';

const nobody = await lookupUser('nobody');
const files = new RealFiles();

async function sandbox() {
  const base = await mkdtemp(join(tmpdir(), 'files-'));
  await chmod(base, 0o755);
  const victim = join(base, 'victim');
  await mkdir(victim, { mode: 0o755 });
  await chmod(victim, 0o755);
  return { base, victim, done: () => rm(base, { recursive: true, force: true }) };
}
const owner = async (p: string) => {
  const st = await lstat(p);
  return `${st.uid}:${st.gid} ${(st.mode & 0o7777).toString(8)}`;
};

test('mkdir with an owner: a symlink is refused and its target keeps its owner and mode', async () => {
  const s = await sandbox();
  try {
    await symlink(s.victim, join(s.base, 'data'));
    await assert.rejects(files.mkdir(join(s.base, 'data'), 0o700, 'nobody'), (e: HostStateError) => e.code === 'path-symlink' && e.what === join(s.base, 'data'));
    assert.equal(await owner(s.victim), '0:0 755');
  } finally {
    await s.done();
  }
});

test('mkdir with an owner creates the directory (and parents) with the mode and owner, chowns an existing one, and is idempotent', async () => {
  const s = await sandbox();
  try {
    const dir = join(s.base, 'a', 'data');
    assert.equal(await files.mkdir(dir, 0o700, 'nobody'), true);
    assert.equal(await owner(dir), `${nobody.uid}:${nobody.gid} 700`);
    assert.equal((await lstat(join(s.base, 'a'))).uid, 0, 'parents stay root\'s');
    assert.equal(await files.mkdir(dir, 0o700, 'nobody'), false);
    const existing = join(s.base, 'existing');
    await mkdir(existing, { mode: 0o750 });
    assert.equal(await files.mkdir(existing, 0o700, 'nobody'), true);
    assert.equal(await owner(existing), `${nobody.uid}:${nobody.gid} 750`, 'owner changed, mode of an existing directory kept');
  } finally {
    await s.done();
  }
});

test('mkdir without an owner: a symlink to a directory counts as that directory (nothing changed)', async () => {
  const s = await sandbox();
  try {
    await symlink(s.victim, join(s.base, 'kubelet'));
    assert.equal(await files.mkdir(join(s.base, 'kubelet'), 0o700), false);
    assert.equal(await owner(s.victim), '0:0 755');
    assert.ok((await lstat(join(s.base, 'kubelet'))).isSymbolicLink());
  } finally {
    await s.done();
  }
});

test('write without an owner follows a symlinked parent; with an owner the symlinked parent is refused and nothing lands in its target', async () => {
  const s = await sandbox();
  try {
    await symlink(s.victim, join(s.base, 'pki'));
    assert.equal(await files.write(join(s.base, 'pki', 'ca.crt'), 'cert\n', { mode: 0o644 }), true);
    assert.equal(await readFile(join(s.victim, 'ca.crt'), 'utf8'), 'cert\n', 'an operator\'s symlinked directory is used');
    await assert.rejects(files.write(join(s.base, 'pki', 'marker'), 'x', { mode: 0o600, owner: 'nobody' }), (e: HostStateError) => e.code === 'path-symlink');
    assert.deepEqual(await readdir(s.victim), ['ca.crt']);
  } finally {
    await s.done();
  }
});

test('write with an owner: a symlink at the path is replaced by the file; content, mode and owner set; unchanged is a no-op', async () => {
  const s = await sandbox();
  try {
    const dir = join(s.base, 'data');
    await files.mkdir(dir, 0o700, 'nobody');
    await writeFile(join(s.victim, 'passwd'), 'root:x:0:0\n');
    await symlink(join(s.victim, 'passwd'), join(dir, 'marker'));
    assert.equal(await files.write(join(dir, 'marker'), '{}\n', { mode: 0o600, owner: 'nobody' }), true);
    assert.equal(await owner(join(dir, 'marker')), `${nobody.uid}:${nobody.gid} 600`);
    assert.equal(await readFile(join(s.victim, 'passwd'), 'utf8'), 'root:x:0:0\n');
    assert.equal(await owner(join(s.victim, 'passwd')), '0:0 644');
    assert.equal(await files.write(join(dir, 'marker'), '{}\n', { mode: 0o600, owner: 'nobody' }), false);
  } finally {
    await s.done();
  }
});

test('write with an owner while nobody swaps the parent (its own) for a symlink to a root directory: the file never lands there', async () => {
  const s = await sandbox();
  const home = join(s.base, 'home'); // the etcd user's home, as Debian's /var/lib/etcd
  await mkdir(join(home, 'default'), { recursive: true });
  await chown(home, nobody.uid, nobody.gid);
  await chown(join(home, 'default'), nobody.uid, nobody.gid);
  const stop = join(s.base, 'stop');
  const swapper = `
    const fs = require('fs'); const d = ${JSON.stringify(join(home, 'default'))}; const end = Date.now() + 20000;
    while (Date.now() < end && !fs.existsSync(${JSON.stringify(stop)})) {
      try { fs.renameSync(d, d + '.real'); fs.symlinkSync(${JSON.stringify(s.victim)}, d); fs.unlinkSync(d); fs.renameSync(d + '.real', d); } catch {}
    }`;
  const child = spawn('setpriv', [`--reuid=${nobody.uid}`, `--regid=${nobody.gid}`, '--clear-groups', process.execPath, '-e', swapper], { stdio: 'ignore' });
  const exited = new Promise((r) => child.once('exit', r));
  try {
    await new Promise((r) => setTimeout(r, 300));
    let rounds = 0;
    let written = 0;
    // A count, not a time budget: under load (CI, other suites) 3 s held only 14 rounds.
    for (const end = Date.now() + 30_000; rounds < 30 && Date.now() < end; rounds++) {
      const ok = await files.write(join(home, 'default', '.kubeception-owner'), `${rounds}\n`, { mode: 0o600, owner: 'nobody' }).then(() => true, (e) => {
        assert.ok(['path-symlink', 'ENOENT'].includes(e.code), String(e));
        return false;
      });
      if (ok) written++;
      const landed = (await readdir(s.victim)).filter((f) => !f.startsWith('.') || f.includes('kubeception'));
      assert.deepEqual(landed, [], `after ${rounds} writes a file landed in the root directory`);
      assert.deepEqual((await readdir(s.victim)), [], `after ${rounds} writes`);
    }
    assert.ok(rounds >= 30, `${rounds} writes, ${written} done`);
    // Under load every contested write can meet a swap (seen: 30 writes, 0 done). That the refusals were
    // the race's and not a broken write path: with the swapper gone, the same write lands.
    await writeFile(stop, '');
    await exited;
    await files.write(join(home, 'default', '.kubeception-owner'), 'after\n', { mode: 0o600, owner: 'nobody' });
    assert.equal(await readFile(join(home, 'default', '.kubeception-owner'), 'utf8'), 'after\n');
    console.log(`contested writes: ${written} of ${rounds} done, the rest refused`);
  } finally {
    await writeFile(stop, '');
    await exited;
    await s.done();
  }
});
