#!/usr/bin/env node
// Node entry point. Runs the precompiled JavaScript build (dist/, `npm run build`) when it is up to
// date with the sources — start-up then costs about as much as Node itself. Otherwise (a checkout
// whose sources changed since the build, or no build) it registers tsx so the TypeScript sources
// load as they are, transformed in memory (no disk cache, below). A site's own TypeScript config or
// task file is loaded through tsx on demand.
// Under Deno, run bin/kubeception.ts instead.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

// tsx's disk cache stays off, for the sources and for a site file loaded through tsx later
// (lib/package.ts): tsx runs the transforms it finds in $TMPDIR/tsx-<euid> whoever owns that
// directory, and any local user may have made it before root's first run (issue 24). Set first:
// tsx reads it when it loads, and a module-loader thread copies the environment when it starts.
process.env.TSX_DISABLE_CACHE = '1';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const SOURCES = ['lib', 'tasks', 'distros', 'manifests', 'bin/kubeception.ts', 'kubeception.config.ts'];

/** Newest mtime (ms) of the TypeScript sources the build compiles. */
function newestSource(path) {
  const st = statSync(path, { throwIfNoEntry: false });
  if (!st) return 0;
  if (!st.isDirectory()) return path.endsWith('.ts') ? st.mtimeMs : 0;
  let newest = 0;
  for (const name of readdirSync(path)) newest = Math.max(newest, newestSource(join(path, name)));
  return newest;
}

/** True if dist/ was built from the sources as they are now (dist/build.json records their newest mtime). */
function buildIsFresh() {
  try {
    const { sourcesMtimeMs } = JSON.parse(readFileSync(join(root, 'dist', 'build.json'), 'utf8'));
    return SOURCES.every((p) => newestSource(join(root, p)) <= sourcesMtimeMs);
  } catch {
    return false;
  }
}

let main;
if (process.env.KUBECEPTION_FROM_SOURCE !== '1' && buildIsFresh()) {
  ({ main } = await import('../dist/lib/cli.js'));
} else {
  const [{ register: registerEsm }, { register: registerCjs }] = await Promise.all([import('tsx/esm/api'), import('tsx/cjs/api')]);
  registerEsm();
  registerCjs();
  ({ main } = await import('../lib/cli.ts'));
}
process.exitCode = await main(process.argv.slice(2));
