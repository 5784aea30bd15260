/**
 * Makes `kubeception` and `kubeception/*` imports in an operator's task and config files resolve to
 * the kubeception that runs them, wherever the files live — a site directory with or without its own
 * node_modules — so a verbatim copy of tasks/bootstrap.ts works anywhere. Two mechanisms, because tsx
 * loads a .ts file as ESM inside a `"type": "module"` package and as CommonJS elsewhere: an ESM resolve
 * hook (bin/self-resolve.mjs, through `module.register`) and the same mapping for `require`.
 * Under Deno neither exists: there the site needs kubeception in its node_modules (what `init` sets up).
 */
import Module from 'node:module';

const SELF = /^kubeception(\/.*)?$/;
let done = false;

type ResolveFilename = (request: string, parent: unknown, ...rest: unknown[]) => string;

/** Installs both mappings once per process. Idempotent; a no-op under Deno. */
export function resolveKubeceptionToSelf(): void {
  if (done || 'Deno' in globalThis) return;
  done = true;
  const hooks = new URL('../bin/self-resolve.mjs', import.meta.url);
  Module.register?.(hooks.href, import.meta.url);
  const M = Module as unknown as { _resolveFilename: ResolveFilename; _nodeModulePaths(p: string): string[] };
  const self = new URL(import.meta.url).pathname;
  const original = M._resolveFilename;
  M._resolveFilename = function (this: unknown, request, parent, ...rest) {
    if (SELF.test(request)) return original.call(this, request, { ...(parent as object), filename: self, paths: M._nodeModulePaths(self) }, ...rest);
    return original.call(this, request, parent, ...rest);
  };
}
