// ESM resolve hook, registered by lib/self-resolve.ts through module.register with `data.map`:
// `kubeception` and `kubeception/<subpath>` (the package's exports) resolve to the running
// kubeception's own files — its compiled build when that is in use, else its sources.
import { pathToFileURL } from 'node:url';

let map = {};

export async function initialize(data) {
  map = data?.map ?? {};
}

export async function resolve(specifier, context, next) {
  const target = map[specifier];
  // Through the rest of the chain (tsx), so a .ts target is loaded as TypeScript.
  return next(target ? pathToFileURL(target).href : specifier, context);
}
