/**
 * compileSiteModule: an operator's TypeScript file, with what it imports by relative path, compiled by
 * esbuild into one module; `kubeception/*` stays an import of the given file (the running CLI's
 * module, so one DSL instance); `import.meta.url` is the site file's URL. Real esbuild, real files.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { compileSiteModule } from '../../lib/site-compile.ts';

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kc-site-'));
  // Stands in for the CLI's own module: the test checks the site got this very instance.
  await writeFile(join(dir, 'self.mjs'), 'export const instance = Symbol("cli module");\n');
  await writeFile(join(dir, 'helper.ts'), 'export const port: number = 6443;\n');
  await writeFile(
    join(dir, 'kubeception.config.ts'),
    [
      "import { instance } from 'kubeception/dsl';",
      "import { port } from './helper.ts';",
      'interface Site { port: number; url: string }',
      'const site: Site = { port, url: import.meta.url };',
      'export { instance };',
      'export default site;',
    ].join('\n'),
  );
  await writeFile(join(dir, 'broken.ts'), 'export default { distro: ;\n');
});
after(() => rm(dir, { recursive: true, force: true }));

test('a TS site file and its relative import compile into one module; kubeception/* is the CLI module itself', async () => {
  const self = join(dir, 'self.mjs');
  const url = await compileSiteModule(join(dir, 'kubeception.config.ts'), { 'kubeception/dsl': self });
  assert.match(url, /^data:text\/javascript;base64,/);
  const mod = (await import(url)) as { default: { port: number; url: string }; instance: symbol };
  assert.equal(mod.default.port, 6443);
  assert.equal(mod.default.url, pathToFileURL(join(dir, 'kubeception.config.ts')).href, 'import.meta.url is the site file');
  const cli = (await import(pathToFileURL(self).href)) as { instance: symbol };
  assert.equal(mod.instance, cli.instance, 'the same module instance as the CLI imports');
});

test('a syntax error throws (the caller then loads the file through tsx, whose error names file and line)', async () => {
  await assert.rejects(compileSiteModule(join(dir, 'broken.ts'), {}), /broken\.ts/);
});

test('an unknown kubeception/* export is not made external: esbuild cannot resolve it and throws', async () => {
  await writeFile(join(dir, 'unknown.ts'), "import { x } from 'kubeception/nope';\nexport default x;\n");
  await assert.rejects(compileSiteModule(join(dir, 'unknown.ts'), { 'kubeception/dsl': join(dir, 'self.mjs') }), /kubeception\/nope/);
});
