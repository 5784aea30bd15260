/**
 * Importing the kubeception package's TypeScript modules (where it lives: lib/package-dir.ts) in every way the CLI
 * runs: from the precompiled JavaScript build (`dist/`, what `bin/kubeception.js` uses when it is
 * up to date), from the sources through tsx (a checkout whose build is stale), or natively (Deno).
 *
 * A package file (`tasks/bootstrap.ts`, `distros/kubic/overrides.ts`, the package's
 * `kubeception.config.ts`) is imported as its compiled twin under `dist/` when this module is
 * itself compiled. Any other file — a site's own config or task file — is compiled in memory by
 * esbuild when this module is compiled and runs on Node (lib/site-compile.ts: no loader hooks); a
 * file esbuild cannot compile, and every file when running from the sources, goes through tsx,
 * registered on first use, with its disk cache off.
 */
import process from 'node:process';
import { pathToFileURL } from 'node:url';

export { COMPILED, compiledTwin, PACKAGE_DIR } from './package-dir.ts';
import { COMPILED, compiledTwin } from './package-dir.ts';

let tsLoader: Promise<void> | undefined;

// tsx's disk cache off, for every later tsx in this process: tsx runs the transforms it finds in
// `$TMPDIR/tsx-<euid>` whoever owns that directory, and any local user may have created it before
// root's first run (issue 24). Set when this module loads, before any `module.register` starts the
// module-loader thread, which copies the environment then (bin/kubeception.js sets it first too).
process.env.TSX_DISABLE_CACHE = '1';

/** Registers tsx's ESM hooks once (Node without a TypeScript loader only). */
function ensureTsLoader(): Promise<void> {
  tsLoader ??= (async () => {
    // Variables, so the build leaves them alone. Both hooks, as bin/kubeception.js registers them:
    // a .ts file outside a `"type": "module"` package is loaded as CommonJS.
    const [esm, cjs] = ['tsx/esm/api', 'tsx/cjs/api'];
    const [e, c] = (await Promise.all([import(esm), import(cjs)])) as { register: () => unknown }[];
    e!.register();
    c!.register();
  })();
  return tsLoader;
}

/** The compiled site module's `data:` URL, or undefined if esbuild cannot compile it (or is not installed). */
async function siteModuleUrl(file: string): Promise<string | undefined> {
  try {
    const [{ compileSiteModule }, { exportTargets }] = await Promise.all([import('./site-compile.ts'), import('./self-resolve.ts')]);
    return await compileSiteModule(file, exportTargets());
  } catch {
    return undefined;
  }
}

/**
 * Imports a module by absolute path: a package file's compiled twin when compiled; a TypeScript
 * file through tsx when nothing else can load it (compiled Node); otherwise as it is.
 * @throws whatever the import throws (syntax errors, missing modules).
 */
export async function importModule(file: string): Promise<unknown> {
  const twin = compiledTwin(file);
  if (twin) return import(pathToFileURL(twin).href);
  // Compiled, on Node: compile a site's file with esbuild instead of registering loader hooks that
  // every later import of the run would pass through (see lib/site-compile.ts). A file esbuild
  // cannot compile goes the tsx way below, whose errors name the file and line.
  if (COMPILED && /\.(ts|mts|js|mjs)$/.test(file) && !('Deno' in globalThis)) {
    const url = await siteModuleUrl(file);
    if (url) return import(url);
  }
  // A site's file (or a source file) imports `kubeception/…`: map that to this package first. The
  // compiled twins import relative paths, so the shipped task files start without the resolve hook
  // (a module-loader thread on Node 20).
  (await import('./self-resolve.ts')).resolveKubeceptionToSelf();
  const viaTsx = COMPILED && /\.(ts|mts|cts)$/.test(file) && !('Deno' in globalThis) && !(process.features as { typescript?: unknown }).typescript;
  if (!viaTsx) return import(pathToFileURL(file).href);
  await ensureTsLoader();
  const mod = (await import(pathToFileURL(file).href)) as { default?: unknown };
  // A .ts file outside a `"type": "module"` package comes through tsx as CommonJS: its ES exports
  // are one level down, under `default` (what the sources see when tsx loads them as well).
  const inner = mod.default as { __esModule?: unknown } | undefined;
  return inner && typeof inner === 'object' && inner.__esModule === true ? inner : mod;
}
