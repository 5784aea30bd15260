/**
 * The public step library: every module under lib/steps/ (and its folders) is re-exported by kubeception/steps, every
 * name the shipped task files and distro overrides import exists there, and those files import only
 * what a site file can (kubeception/dsl, kubeception/steps, kubeception), so a verbatim copy works.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as steps from 'kubeception/steps';
import * as dsl from 'kubeception/dsl';
import { kubeceptionImports } from '../../../lib/task-load-error.ts';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const shipped = [
  ...readdirSync(join(ROOT, 'tasks')).map((f) => join(ROOT, 'tasks', f)),
  ...readdirSync(join(ROOT, 'distros')).map((d) => join(ROOT, 'distros', d, 'overrides.ts')).filter((f) => { try { return !!readFileSync(f); } catch { return false; } }),
];

test('every lib/steps module is in the barrel', () => {
  const barrel = readFileSync(join(ROOT, 'lib', 'steps', 'index.ts'), 'utf8');
  const modules = readdirSync(join(ROOT, 'lib', 'steps'), { recursive: true }).map(String).filter((f) => f.endsWith('.ts') && f !== 'index.ts');
  assert.ok(modules.some((f) => f.includes('/')), 'the step library is grouped in folders');
  for (const f of modules) assert.match(barrel, new RegExp(`export \\* from '\\./${f.replaceAll('.', '\\.')}';`), f);
});

test('shipped task files import only kubeception/* (relative imports only for types), and every name exists', () => {
  const mods: Record<string, Record<string, unknown>> = { 'kubeception/steps': steps, 'kubeception/dsl': dsl };
  for (const file of shipped) {
    const src = readFileSync(file, 'utf8');
    for (const m of src.matchAll(/^import\s+(type\s+)?[^;]*?from\s+'([^']+)'/gms))
      assert.ok(m[2]!.startsWith('kubeception') || m[1], `${file}: imports ${m[2]} (a site copy could not)`);
    const names = kubeceptionImports(src);
    assert.ok(names.length > 0, file);
    for (const n of names) assert.notEqual(mods[n.from]?.[n.name], undefined, `${file}:${n.line}: ${n.name} from ${n.from}`);
  }
});
