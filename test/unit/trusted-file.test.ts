/**
 * Files kubeception runs code from (lib/trusted-file.ts; issue 24, F4), with real files and
 * directories in a temporary directory and real owners and modes (chown to `nobody`: as root only).
 */
import assert from 'node:assert/strict';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import process from 'node:process';
import { after, describe, test } from 'node:test';
import { assertTrustedFile, trustedOwners } from '../../lib/trusted-file.ts';
import { HostStateError } from '../../lib/errors.ts';

const AS_ROOT = process.getuid?.() === 0;
const skip = AS_ROOT ? false : process.env.CI || process.env.KUBECEPTION_BED_READY ? false : 'needs root (chown)';
const NOBODY = 65534;

describe('assertTrustedFile', { skip }, () => {
  const base = mkdtempSync(join(tmpdir(), 'kc-trust-'));
  chmodSync(base, 0o755);
  after(() => rmSync(base, { recursive: true, force: true }));
  let n = 0;
  /** A new site dir (0755, root) holding kubeception.config.ts (0644, root). */
  const site = () => {
    const dir = join(base, `s${n++}`);
    mkdirSync(dir, { mode: 0o755 });
    writeFileSync(join(dir, 'kubeception.config.ts'), 'export default {};\n', { mode: 0o644 });
    return { dir, file: join(dir, 'kubeception.config.ts') };
  };
  const refused = async (file: string, unsafePath: string, why: RegExp, fix: RegExp, owners?: number[]) => {
    await assert.rejects(assertTrustedFile(file, 'config file', 'pass --config FILE elsewhere', owners), (e: unknown) => {
      assert.ok(e instanceof HostStateError, String(e));
      assert.equal(e.code, 'untrusted-file');
      assert.equal(e.badInput, true, 'exit 2');
      assert.match(e.what, new RegExp(`^config file ${file}`));
      assert.ok(e.why.includes(`${unsafePath} is`), `names ${unsafePath}: ${e.why}`);
      assert.match(e.why, why);
      assert.match(e.fix, fix);
      return true;
    });
  };

  test('root-owned, not group- or world-writable, under root-owned sticky /tmp: accepted', async () => {
    const { file } = site();
    await assertTrustedFile(file, 'config file', 'x');
  });

  test('a world-writable file, a group-writable file: refused with chmod go-w', async () => {
    const a = site();
    chmodSync(a.file, 0o666);
    await refused(a.file, a.file, /writable by group and others \(mode 0666\)/, /^chmod go-w /);
    const b = site();
    chmodSync(b.file, 0o664);
    await refused(b.file, b.file, /writable by its group/, /chmod go-w/);
  });

  test('a world-writable directory on the path (no sticky bit): refused, naming the directory', async () => {
    const { dir, file } = site();
    chmodSync(dir, 0o777);
    await refused(file, dir, /writable by group and others \(mode 0777\)/, /chmod go-w/);
  });

  test('a sticky world-writable directory: accepted when root owns it, refused when another user does', async () => {
    const { dir, file } = site();
    chmodSync(dir, 0o1777);
    await assertTrustedFile(file, 'config file', 'x');
    chownSync(dir, NOBODY, NOBODY);
    await refused(file, dir, /owned by uid 65534 \(nobody\)/, /^chown root /);
  });

  test("a file owned by another user: refused, unless that user is the invoking one", async () => {
    const { file } = site();
    chownSync(file, NOBODY, NOBODY);
    await refused(file, file, /owned by uid 65534 \(nobody\), not by root/, /chown root/);
    await assertTrustedFile(file, 'config file', 'x', [0, NOBODY]);
  });

  test('a symlink into an unsafe directory: refused for the real path', async () => {
    const bad = site();
    chmodSync(bad.dir, 0o777);
    const { dir } = site();
    const link = join(dir, 'linked.ts');
    symlinkSync(bad.file, link);
    await refused(link, bad.dir, /writable by group and others/, /chmod go-w/);
  });

  test('under sudo (euid 0), the invoking SUDO_UID is trusted too; a malformed SUDO_UID is not', () => {
    assert.deepEqual(trustedOwners({ SUDO_UID: '1000' }), [0, 1000]);
    assert.deepEqual(trustedOwners({ SUDO_UID: '1000; x' }), [0]);
    assert.deepEqual(trustedOwners({}), [0]);
  });
});
