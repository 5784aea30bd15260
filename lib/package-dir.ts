/**
 * Where the kubeception package lives, and the compiled twin of a package file (lib/package.ts
 * imports modules with them; lib/self-resolve.ts maps `kubeception/*` to them). A leaf module.
 */
import { existsSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
/** True when this module runs from the compiled build (a `.js` file under `<package>/dist/<dir>/`). */
export const COMPILED = import.meta.url.endsWith('.js');
/** Absolute path of the kubeception package (the directory holding lib/, tasks/, distros/, dist/). */
export const PACKAGE_DIR = COMPILED ? join(here, '..', '..') : join(here, '..');

/** The compiled twin of a package source file, if this is the compiled build and the twin exists. */
export function compiledTwin(file: string): string | undefined {
  if (!COMPILED || !/\.(ts|mts)$/.test(file)) return undefined;
  const rel = relative(PACKAGE_DIR, file);
  if (rel.startsWith('..') || rel.startsWith(`dist${sep}`) || rel.split(sep).includes('node_modules')) return undefined;
  const twin = join(PACKAGE_DIR, 'dist', rel.replace(/\.m?ts$/, '.js'));
  return existsSync(twin) ? twin : undefined;
}
