#!/usr/bin/env node
// `npm run build`: compiles the TypeScript sources to dist/ with tsc (tsconfig.build.json: same
// tree, `.ts` imports rewritten to `.js`) and records the newest source mtime in dist/build.json,
// which bin/kubeception.js compares with the sources to decide whether the build is current.
import { execFileSync } from 'node:child_process';
import { readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
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

const sourcesMtimeMs = Math.max(...SOURCES.map((p) => newestSource(join(root, p))));
rmSync(join(root, 'dist'), { recursive: true, force: true });
execFileSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
writeFileSync(join(root, 'dist', 'build.json'), `${JSON.stringify({ sourcesMtimeMs, builtAt: new Date().toISOString() })}\n`);
