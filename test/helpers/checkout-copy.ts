/**
 * A throw-away copy of this checkout's sources in a temporary directory, its `node_modules` a
 * symlink to the checkout's: for tests that change source mtimes, rebuild `dist/` or run the CLI
 * from its sources. The checkout itself is never written (a crash half-way leaves nothing behind in it).
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

/** Absolute path of this checkout. */
export const CHECKOUT = fileURLToPath(new URL('../..', import.meta.url));

/** What a copy holds: everything the CLI and its build read. */
const COPIED = ['bin', 'lib', 'tasks', 'distros', 'manifests', 'scripts', 'package.json', 'kubeception.config.ts', 'tsconfig.json'];

/** A copy of the checkout. `dir` is root-owned 0755 when made as root. */
export interface CheckoutCopy {
  dir: string;
  /** Runs `scripts/build.mjs` in the copy (dist/ of the copy, from its sources as they are now). */
  build(): void;
  remove(): void;
}

/** Copies the checkout's sources to a new temporary directory. @param build build dist/ at once. */
export function copyCheckout(opts: { build?: boolean } = {}): CheckoutCopy {
  const dir = mkdtempSync(join(tmpdir(), 'kubeception-copy-'));
  chmodSync(dir, 0o755);
  for (const p of COPIED) cpSync(join(CHECKOUT, p), join(dir, p), { recursive: true });
  symlinkSync(join(CHECKOUT, 'node_modules'), join(dir, 'node_modules'));
  const copy: CheckoutCopy = {
    dir,
    build: () => void execFileSync(process.execPath, [join(dir, 'scripts/build.mjs'), '--force'], { stdio: 'inherit' }),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
  if (opts.build) copy.build();
  return copy;
}
