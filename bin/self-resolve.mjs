// Makes `kubeception` and `kubeception/*` imports in an operator's task and config files resolve to
// the kubeception that runs them, wherever the files live (a site directory with or without its own
// node_modules): an ESM resolve hook (module.register) and the same mapping for CommonJS `require`,
// which tsx uses for .ts files outside a `"type": "module"` package. Loaded by bin/kubeception.js.
import Module, { register } from 'node:module';
import { isMainThread } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';

const SELF = /^kubeception(\/.*)?$/;

/** ESM resolve hook: resolve kubeception specifiers as if imported from inside this package. */
export async function resolve(specifier, context, next) {
  return next(specifier, SELF.test(specifier) ? { ...context, parentURL: import.meta.url } : context);
}

if (isMainThread) {
  register(import.meta.url, import.meta.url);
  const self = fileURLToPath(import.meta.url);
  const original = Module._resolveFilename;
  Module._resolveFilename = function (request, parent, ...rest) {
    if (SELF.test(request)) return original.call(this, request, { ...parent, filename: self, paths: Module._nodeModulePaths(self) }, ...rest);
    return original.call(this, request, parent, ...rest);
  };
}
