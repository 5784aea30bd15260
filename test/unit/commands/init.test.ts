/** `kubeception init [DIR]`: the site files, verbatim task copies, the dependency, and never overwriting. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cli } from '../../helpers/cli.ts';

const ROOT = join(import.meta.dirname, '..', '..', '..');

test('init DIR writes config, verbatim tasks and a package.json depending on kubeception', async () => {
  const cwd = mkdtempSync(join(tmpdir(), 'kc-init-'));
  const r = await cli(['init', 'My Site', '--kubeception', 'dist/kubeception-0.1.0.tgz'], cwd);
  assert.equal(r.code, 0, r.stderr);
  const dir = join(cwd, 'My Site');
  for (const t of ['bootstrap', 'join']) assert.equal(readFileSync(join(dir, 'tasks', `${t}.ts`), 'utf8'), readFileSync(join(ROOT, 'tasks', `${t}.ts`), 'utf8'));
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  assert.deepEqual({ name: pkg.name, type: pkg.type, deps: pkg.dependencies }, { name: 'my-site', type: 'module', deps: { kubeception: `file:${join(cwd, 'dist/kubeception-0.1.0.tgz')}` } });
  const config = readFileSync(join(dir, 'kubeception.config.ts'), 'utf8');
  assert.match(config, /import \{ defineConfig \} from 'kubeception';/);
  assert.equal(statSync(join(dir, 'kubeception.config.ts')).mode & 0o777, 0o644);
  assert.match(r.stdout, /npx kubeception plan bootstrap/);
  // The site works as written: plan from it uses its own task file.
  const plan = await cli(['plan', 'bootstrap', '--order-only'], dir);
  assert.equal(plan.code, 0, plan.stderr);
  assert.match(plan.stdout, new RegExp(`task file: ${join(dir, 'tasks', 'bootstrap.ts')}`));
});

test('init without --kubeception depends on this version; it never overwrites (exit 2, nothing written)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kc-init-'));
  writeFileSync(join(dir, 'kubeception.config.ts'), 'mine\n');
  const r = await cli(['init'], dir);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /error init-exists: .*kubeception\.config\.ts/);
  assert.equal(readFileSync(join(dir, 'kubeception.config.ts'), 'utf8'), 'mine\n');
  assert.throws(() => statSync(join(dir, 'package.json')));
  const fresh = mkdtempSync(join(tmpdir(), 'kc-init-'));
  assert.equal((await cli(['init', '.'], fresh)).code, 0);
  const version = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version;
  assert.equal(JSON.parse(readFileSync(join(fresh, 'package.json'), 'utf8')).dependencies.kubeception, version);
});

test('init in a directory where the tarball is already installed keeps its package.json', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kc-init-'));
  const pkg = '{ "dependencies": { "kubeception": "file:kubeception-0.1.0.tgz" } }\n';
  writeFileSync(join(dir, 'package.json'), pkg);
  const r = await cli(['init'], dir);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(readFileSync(join(dir, 'package.json'), 'utf8'), pkg);
  assert.doesNotMatch(r.stdout, /npm install/);
  assert.ok(statSync(join(dir, 'tasks', 'join.ts')).isFile());
});
