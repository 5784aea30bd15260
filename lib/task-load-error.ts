/**
 * Explains why a task (or distro overrides) file failed to import, as a typed error naming the file,
 * the line and the step or symbol: an import of a name the kubeception module does not export, a step
 * built with something that is not a function ({@link StepDefinitionError}), a reference to an
 * undefined name, or a syntax/transform error.
 */
import { promises as fs } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { TaskDefinitionError } from './errors.ts';
import { loadErrorText } from './config/load.ts';
import { didYouMean } from './util/suggest.ts';

/** Public modules a task file may import, by specifier. */
const PUBLIC: Record<string, () => Promise<Record<string, unknown>>> = {
  kubeception: () => import('./index.ts'),
  'kubeception/dsl': () => import('./engine/dsl.ts'),
  'kubeception/steps': () => import('./steps/index.ts'),
};

interface ImportedName {
  name: string;
  from: string;
  line: number;
}

/** Value (non-`type`) names a source imports from kubeception's public modules, with their lines. */
export function kubeceptionImports(source: string): ImportedName[] {
  const out: ImportedName[] = [];
  for (const m of source.matchAll(/import\s+(type\s+)?\{([^}]*)\}\s*from\s*['"](kubeception(?:\/[a-z-]+)?)['"]/g)) {
    if (m[1]) continue;
    let offset = m.index! + m[0].indexOf('{') + 1;
    for (const part of m[2]!.split(',')) {
      const name = /^\s*(type\s+)?([A-Za-z_$][\w$]*)/.exec(part);
      if (name && !name[1]) {
        const at = offset + part.indexOf(name[2]!);
        out.push({ name: name[2]!, from: m[3]!, line: source.slice(0, at).split('\n').length });
      }
      offset += part.length + 1;
    }
  }
  return out;
}

/** Names imported from a kubeception module that it does not export, with a suggestion each. */
export async function missingImports(source: string): Promise<(ImportedName & { hint: string })[]> {
  const out: (ImportedName & { hint: string })[] = [];
  for (const imp of kubeceptionImports(source)) {
    const load = PUBLIC[imp.from];
    if (!load) continue;
    const mod = await load();
    // Interfaces and type aliases exist only for the type checker (imported without `type`, they are erased).
    if (!(imp.name in mod) && !(await typeNames()).has(imp.name)) out.push({ ...imp, hint: didYouMean(imp.name, Object.keys(mod)) });
  }
  return out;
}

/** Names declared as types (interface, type alias, `export type {…}`) anywhere under lib/. */
async function typeNames(): Promise<Set<string>> {
  const dir = fileURLToPath(new URL('.', import.meta.url));
  const names = new Set<string>();
  for (const f of (await fs.readdir(dir, { recursive: true })).filter((f) => f.endsWith('.ts'))) {
    const text = await fs.readFile(`${dir}/${f}`, 'utf8');
    for (const m of text.matchAll(/export\s+(?:interface|type)\s+([A-Za-z_$][\w$]*)/g)) names.add(m[1]!);
    for (const m of text.matchAll(/export\s+(?:type\s+)?\{([^}]*)\}/g))
      for (const part of m[1]!.split(',')) {
        const t = /^\s*type\s+(?:\w+\s+as\s+)?([A-Za-z_$][\w$]*)/.exec(part);
        if (t || m[0].startsWith('export type')) names.add((t?.[1] ?? part.trim().split(/\s+as\s+/).pop()) as string);
      }
  }
  return names;
}

/** The first `file:line` of `file` in an error's stack, if any. */
export function lineInStack(err: unknown, file: string): number | undefined {
  const stack = String((err as Error)?.stack ?? '');
  for (const m of stack.matchAll(/(?:file:\/\/)?(\/[^\s():]+):(\d+)(?::\d+)?/g)) {
    const p = m[1]!.startsWith('/') ? m[1]! : fileURLToPath(m[1]!);
    if (p === file) return Number(m[2]);
  }
  return undefined;
}

/** A `task-invalid` error for a file whose import threw `err`. Reads the file to find the line. */
export async function taskLoadError(file: string, err: unknown): Promise<TaskDefinitionError> {
  const source = await fs.readFile(file, 'utf8').catch(() => '');
  const fix = 'import step functions from kubeception/steps and the DSL from kubeception/dsl (see the README, "Customising a site")';
  const missing = await missingImports(source).catch(() => []);
  const first = missing[0];
  if (first)
    return new TaskDefinitionError('task-import', {
      what: `${file}:${first.line}: ${first.name}`,
      why: `${first.from} has no export named "${first.name}"${first.hint}${usedBy(source, first.name)}${missing.length > 1 ? ` (also: ${missing.slice(1).map((m) => m.name).join(', ')})` : ''}`,
      fix,
      cause: err,
    });
  const stepId = (err as { stepId?: unknown })?.stepId;
  const line = lineInStack(err, file) ?? importLine(source, err);
  const where = `${file}${line ? `:${line}` : ''}${typeof stepId === 'string' ? ` (step ${stepId})` : ''}`;
  const name = /^(\S+) is not defined/.exec(String((err as Error)?.message))?.[1];
  const hint = name ? didYouMean(name, Object.keys(await PUBLIC['kubeception/steps']!())) : '';
  const step = typeof stepId === 'string' || !name ? '' : usedBy(source, name);
  // No `cause`: its message is already the `why`.
  return new TaskDefinitionError('task-invalid', { what: where, why: `cannot load it: ${loadErrorText(err)}${hint}${step}`, fix: typeof stepId === 'string' || name ? fix : 'fix the error in the task file' });
}

/** `; used by step <id>` for the first step whose definition mentions `name` after its import. */
function usedBy(source: string, name: string): string {
  const uses = [...source.matchAll(new RegExp(`\\b${name}\\b`, 'g'))].map((m) => m.index!).filter((i) => !/import[^;]*$/.test(source.slice(0, i)));
  if (uses[0] === undefined) return '';
  const id = [...source.slice(0, uses[0]).matchAll(/step\(\s*['"]([a-z0-9/-]+)['"]/g)].pop()?.[1];
  return id ? `; used by step ${id}` : '';
}

/** For "does not provide an export named 'x'" errors: the line importing x. */
function importLine(source: string, err: unknown): number | undefined {
  const name = /export named '([^']+)'/.exec(String((err as Error)?.message))?.[1];
  if (!name) return undefined;
  const i = source.search(new RegExp(`import[^;]*\\b${name}\\b`));
  return i < 0 ? undefined : source.slice(0, source.indexOf(name, i)).split('\n').length;
}
