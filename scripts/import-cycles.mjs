#!/usr/bin/env node
// `npm run lint` (after Biome): fails on an import cycle between the project's own modules. Counts
// every edge — `import`, `import type`, `export … from`, `import()` calls and `import('…').T` type
// expressions — so a type-only cycle fails too (Biome's noImportCycles does not follow the last
// kind). The one file that imports typescript's parser.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const ROOTS = process.argv.length > 2 ? process.argv.slice(2) : ['bin', 'lib', 'tasks', 'distros', 'manifests', 'test', 'bench', 'scripts', 'kubeception.config.ts'];
const SOURCE = /\.(ts|mts|mjs|js)$/;

function sources(path) {
  const st = statSync(path, { throwIfNoEntry: false });
  if (!st) return [];
  if (!st.isDirectory()) return SOURCE.test(path) && !path.endsWith('.d.ts') ? [path] : [];
  return readdirSync(path).filter((n) => n !== 'node_modules').flatMap((n) => sources(join(path, n)));
}

/** The relative module specifiers of one file, each with its line. */
function specifiers(file) {
  const sf = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const out = [];
  const add = (lit) => {
    if (lit && ts.isStringLiteralLike(lit) && lit.text.startsWith('.')) out.push({ spec: lit.text, line: sf.getLineAndCharacterOfPosition(lit.getStart()).line + 1 });
  };
  const visit = (node) => {
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) add(node.moduleSpecifier);
    else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) add(node.argument.literal);
    else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) add(node.arguments[0]);
    else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) add(node.moduleReference.expression);
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

const files = ROOTS.flatMap((r) => sources(resolve(root, r)));
const known = new Set(files);
/** file → [{ to, line }] */
const graph = new Map();
for (const file of files) {
  const edges = [];
  for (const { spec, line } of specifiers(file)) {
    const base = resolve(dirname(file), spec);
    const to = [base, base.replace(/\.js$/, '.ts'), `${base}.ts`, join(base, 'index.ts')].find((c) => known.has(c));
    if (to) edges.push({ to, line });
  }
  graph.set(file, edges);
}

// Tarjan's strongly connected components: every component of more than one file (or a file that
// imports itself) is a cycle.
let index = 0;
const idx = new Map();
const low = new Map();
const stack = [];
const onStack = new Set();
const components = [];
function connect(v) {
  idx.set(v, index);
  low.set(v, index++);
  stack.push(v);
  onStack.add(v);
  for (const { to } of graph.get(v)) {
    if (!idx.has(to)) {
      connect(to);
      low.set(v, Math.min(low.get(v), low.get(to)));
    } else if (onStack.has(to)) low.set(v, Math.min(low.get(v), idx.get(to)));
  }
  if (low.get(v) === idx.get(v)) {
    const c = [];
    let w;
    do {
      w = stack.pop();
      onStack.delete(w);
      c.push(w);
    } while (w !== v);
    if (c.length > 1 || graph.get(v).some((e) => e.to === v)) components.push(c);
  }
}
for (const f of files) if (!idx.has(f)) connect(f);

/** One shortest cycle through `start` inside component `c`, as [file, line-of-import] pairs. */
function cycleThrough(start, c) {
  const inC = new Set(c);
  const prev = new Map([[start, null]]);
  const queue = [start];
  while (queue.length) {
    const v = queue.shift();
    for (const e of graph.get(v)) {
      if (!inC.has(e.to)) continue;
      if (e.to === start) {
        const path = [{ file: v, line: e.line }];
        for (let p = prev.get(v); p; p = prev.get(p.from)) path.unshift({ file: p.from, line: p.line });
        return path;
      }
      if (!prev.has(e.to)) {
        prev.set(e.to, { from: v, line: e.line });
        queue.push(e.to);
      }
    }
  }
  return [];
}

const rel = (f) => relative(root, f);
for (const c of components) {
  c.sort();
  const path = cycleThrough(c[0], c);
  console.error(`import cycle: ${c.length} module(s) depend on each other: ${c.map(rel).join(', ')}`);
  console.error(`  for example: ${path.map((p) => `${rel(p.file)}:${p.line}`).join(' → ')} → ${rel(c[0])}`);
}
if (components.length) {
  console.error(`${components.length} import cycle(s); fix: move the shared code (often a type) into a module both import`);
  process.exit(1);
}
console.log(`import cycles: none in ${files.length} files`);
