/**
 * An operator's own TypeScript file (a site's `kubeception.config.ts` or task file) for the compiled
 * CLI on Node: the one wrapper around esbuild at run time (the package's build script is the other
 * user, at build time). The file and what it imports by relative path are compiled into one ES
 * module in memory (nothing is written) and imported from a `data:` URL; `kubeception` and
 * `kubeception/*` stay imports of the running CLI's own modules (absolute `file:` URLs), so the
 * site shares its DSL and step library.
 *
 * Why not a loader: registering tsx's hooks puts every later import of the run — the Kubernetes
 * client, zx, dbus-next, hundreds of module files — through a module-loader thread and source-map
 * bookkeeping; on 2 cores that cost a converged `run bootstrap` about 3 s. This costs one esbuild
 * build (≈ 20–40 ms, the esbuild service included).
 *
 * Only compiling can fail here; the caller imports the URL (a throwing site module throws as it is).
 * Differences from loading the file as it is: `import.meta.url` is the site file's URL in every
 * compiled file (esbuild `define`); a CommonJS `require` resolves from the site file.
 * @throws whatever esbuild throws (a syntax error, an unresolvable import): the caller falls back to
 * tsx, whose errors name the file and line as before.
 * @see https://esbuild.github.io/api/#build
 */
import { pathToFileURL } from 'node:url';

/**
 * Compiles `file` (with what it imports by relative path) into one ES module.
 * @param file absolute path of a `.ts`/`.mts`/`.js`/`.mjs` file.
 * @param selfTargets specifier → absolute file of this package's exports (`kubeception/dsl` → …/dist/lib/engine/dsl.js).
 * @returns a `data:` URL to import.
 */
export async function compileSiteModule(file: string, selfTargets: Record<string, string>): Promise<string> {
  const esbuild = await import('esbuild');
  const url = pathToFileURL(file).href;
  const result = await esbuild.build({
    entryPoints: [file],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    logLevel: 'silent',
    define: { 'import.meta.url': JSON.stringify(url) },
    banner: { js: `import { createRequire as __kcSiteCreateRequire } from 'node:module'; const require = __kcSiteCreateRequire(${JSON.stringify(url)});` },
    plugins: [
      {
        name: 'kubeception-self',
        setup(build) {
          build.onResolve({ filter: /^kubeception(\/|$)/ }, (args) => {
            const target = selfTargets[args.path];
            return target ? { path: pathToFileURL(target).href, external: true } : undefined;
          });
        },
      },
    ],
  });
  const code = result.outputFiles?.[0]?.text;
  if (code === undefined) throw new Error(`esbuild produced no output for ${file}`);
  return `data:text/javascript;base64,${Buffer.from(code).toString('base64')}`;
}
