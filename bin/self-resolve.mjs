// ESM resolve hook (registered by lib/self-resolve.ts through module.register): `kubeception` and
// `kubeception/*` resolve as if imported from inside this package, i.e. to the running kubeception.
const SELF = /^kubeception(\/.*)?$/;

export async function resolve(specifier, context, next) {
  return next(specifier, SELF.test(specifier) ? { ...context, parentURL: import.meta.url } : context);
}
