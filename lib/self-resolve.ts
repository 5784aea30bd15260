/**
 * Makes `kubeception` and `kubeception/*` imports in an operator's task and config files resolve to
 * the kubeception that runs them, wherever the files live — a site directory with or without its own
 * node_modules — so a verbatim copy of tasks/bootstrap.ts works anywhere, and shares the running
 * CLI's modules (one DSL, one step library; the compiled build when the CLI runs from it). Two
 * mechanisms, because tsx loads a .ts file as ESM inside a `"type": "module"` package and as CommonJS
 * elsewhere: an ESM resolve hook (bin/self-resolve.mjs, through `module.register`) and the same
 * mapping for `require`. Under Deno neither exists: there the site needs kubeception in its
 * node_modules (what `init` sets up).
 */
import Module from 'node:module';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { compiledTwin, PACKAGE_DIR } from './package-dir.ts';

let done = false;

/** Specifier → absolute file for each of the package's exports (`kubeception/steps` → …/lib/steps/index.ts or its compiled twin). */
export function exportTargets(): Record<string, string> {
  const pkg = JSON.parse(readFileSync(join(PACKAGE_DIR, 'package.json'), 'utf8')) as { exports: Record<string, unknown> };
  const out: Record<string, string> = {};
  for (const [key, target] of Object.entries(pkg.exports)) {
    if (typeof target !== 'string' || !target.endsWith('.ts')) continue;
    const src = join(PACKAGE_DIR, target);
    out[key === '.' ? 'kubeception' : `kubeception/${key.slice(2)}`] = compiledTwin(src) ?? src;
  }
  return out;
}

type ResolveFilename = (request: string, parent: unknown, ...rest: unknown[]) => string;

/** Installs both mappings once per process. Idempotent; a no-op under Deno. */
export function resolveKubeceptionToSelf(): void {
  if (done || 'Deno' in globalThis) return;
  done = true;
  const map = exportTargets();
  Module.register?.(pathToFileURL(join(PACKAGE_DIR, 'bin', 'self-resolve.mjs')).href, { parentURL: import.meta.url, data: { map } });
  const M = Module as unknown as { _resolveFilename: ResolveFilename };
  const original = M._resolveFilename;
  M._resolveFilename = function (this: unknown, request, parent, ...rest) {
    return map[request] ?? original.call(this, request, parent, ...rest);
  };
}
