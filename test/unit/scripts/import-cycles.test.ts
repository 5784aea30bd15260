/** scripts/import-cycles.mjs (run by `npm run lint`): a cycle through any kind of import fails it. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const SCRIPT = join(import.meta.dirname, '..', '..', '..', 'scripts', 'import-cycles.mjs');

function check(files: Record<string, string>) {
  const dir = mkdtempSync(join(tmpdir(), 'kc-cycles-'));
  try {
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
    return spawnSync(process.execPath, [SCRIPT, dir], { encoding: 'utf8' });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('no cycle: exit 0', () => {
  const r = check({ 'a.ts': "import { b } from './b.ts';\nexport const a = b;\n", 'b.ts': 'export const b = 1;\n' });
  assert.equal(r.status, 0, r.stderr);
});

for (const [kind, edge] of [
  ['import', "import { a } from './a.ts';\nexport const b = a;\n"],
  ['import type', "import type { A } from './a.ts';\nexport type B = A;\n"],
  ['an import() type', "export type B = import('./a.ts').A;\n"],
  ['a dynamic import()', "export const b = () => import('./a.ts');\n"],
  ['export … from', "export { a } from './a.ts';\n"],
] as const) {
  test(`a cycle through ${kind} fails, naming the files and lines`, () => {
    const r = check({ 'a.ts': "import type { B } from './b.ts';\nexport type A = B | 1;\nexport const a = 1;\n", 'b.ts': edge });
    assert.equal(r.status, 1);
    assert.match(r.stderr, /import cycle: 2 module\(s\) depend on each other: .*a\.ts, .*b\.ts/);
    assert.match(r.stderr, /a\.ts:1 → .*b\.ts:1 → .*a\.ts/);
  });
}
