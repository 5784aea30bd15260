#!/usr/bin/env node
// `npm run build`: compiles the TypeScript sources to dist/ with esbuild — the one file that
// imports it. Entry points keep their paths (lib/cli.ts → dist/lib/cli.js, tasks/bootstrap.ts →
// dist/tasks/bootstrap.js, …) so a package file's compiled twin is found by path; modules shared
// between them go to dist/chunks/ once (one DSL instance). The libraries are bundled in too (zod,
// yaml, toml, citty, the Kubernetes client, zx, listr2, the ASN.1 libraries: thousands of module files
// between them; one chunk each loads in about half the time), those a command needs only sometimes
// in chunks of their own, loaded on first use. Not bundled: dbus-next (optional requires), tsx and
// esbuild (loaders and a native binary). Records the newest source mtime in
// dist/build.json; bin/kubeception.js uses dist/ only while no source is newer.
// Types are checked by `npm run typecheck`, not here.
import { readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const SOURCES = ['lib', 'tasks', 'distros', 'manifests', 'bin/kubeception.ts', 'kubeception.config.ts'];

function newestSource(path) {
  const st = statSync(path, { throwIfNoEntry: false });
  if (!st) return 0;
  if (!st.isDirectory()) return path.endsWith('.ts') ? st.mtimeMs : 0;
  return Math.max(0, ...readdirSync(path).map((name) => newestSource(join(path, name))));
}

const files = (dir, re) => readdirSync(join(root, dir), { recursive: true }).filter((f) => re.test(f)).map((f) => join(dir, f));
const entryPoints = [
  'lib/cli.ts',
  // The public modules (package.json `exports`): a site's task file imports them, compiled, through
  // lib/self-resolve.ts — sharing the CLI's chunks, so one DSL and one step library.
  'lib/index.ts',
  'lib/engine/dsl.ts',
  'lib/steps/index.ts',
  'lib/config/load.ts',
  ...files('tasks', /\.ts$/),
  ...files('distros', /overrides\.ts$/),
  'kubeception.config.ts',
].map((f) => join(root, f));

let build;
try {
  ({ build } = await import('esbuild'));
} catch {
  // `npm ci --omit=dev` (no esbuild): no build; bin/kubeception.js runs the sources through tsx.
  console.warn('kubeception build: esbuild is not installed (a production-only install); the CLI will run from the TypeScript sources');
  process.exit(0);
}

const sourcesMtimeMs = Math.max(...SOURCES.map((p) => newestSource(join(root, p))));
// Already current: leave dist/ alone (a CLI may be running from it; rebuilding would pull it away).
if (!process.argv.includes('--force')) {
  try {
    if (JSON.parse(readFileSync(join(root, 'dist', 'build.json'), 'utf8')).sourcesMtimeMs === sourcesMtimeMs) process.exit(0);
  } catch {}
}
rmSync(join(root, 'dist'), { recursive: true, force: true });
await build({
  absWorkingDir: root,
  entryPoints,
  outbase: root,
  outdir: join(root, 'dist'),
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  // dbus-next: lazily from lib/host/systemd.ts; tsx and esbuild: lib/package.ts, lib/site-compile.ts.
  external: ['dbus-next', 'tsx', 'tsx/*', 'esbuild'],
  chunkNames: 'chunks/[name]-[hash]',
  // Bundled CommonJS modules require Node built-ins: give the ESM output a `require`.
  banner: { js: "import { createRequire as __kcCreateRequire } from 'node:module'; const require = __kcCreateRequire(import.meta.url);" },
  logLevel: 'warning',
});
writeFileSync(join(root, 'dist', 'build.json'), `${JSON.stringify({ sourcesMtimeMs })}\n`);
