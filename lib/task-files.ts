/**
 * Finding and loading task files, and applying the distro's overrides. Task files export data
 * (a {@link Task}); importing one runs nothing.
 *
 * Lookup for task `name`: `<site>/tasks/<name>.ts` (the operator's editable copy), where the site is
 * the directory of `--config FILE` when one is given (an explicit path wins over the working
 * directory) and the working directory otherwise; then the package's own `tasks/<name>.ts`. A site's
 * task file is run only if it and its directories are safe (lib/trusted-file.ts), and replacing the
 * package's file is announced with a warning.
 */
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { TaskDefinitionError } from './errors.ts';
import { assertTrustedFile, sameFile } from './trusted-file.ts';
import { applyEdits } from './engine/graph.ts';
import { taskLoadError } from './task-load-error.ts';
import { didYouMean } from './util/suggest.ts';
import { importModule } from './package.ts';
import { distroDir, isPackageDistro } from './config/distro-dir.ts';
import type { Overrides, Step, Task } from './engine/dsl.ts';
import type { RunContext } from './run-options.ts';

const exists = (p: string) => fs.access(p).then(() => true, () => false);

export { siteDir } from './site-dir.ts';

/**
 * Absolute path of the task file.
 * @param site the site directory ({@link siteDir}).
 * @param warn told when a site's file replaces the package's.
 * @throws TaskDefinitionError `task-unknown` listing the tasks found.
 * @throws HostStateError `untrusted-file` for a site's file that others could have written.
 */
export async function findTaskFile(name: string, site: string, packageDir: string, warn: (message: string) => void = () => {}): Promise<string> {
  if (!/^[a-z0-9-]+$/.test(name))
    throw new TaskDefinitionError('task-unknown', { what: `task "${name}"`, why: 'task names are kebab-case file names', fix: 'use e.g. `bootstrap` or `join`' });
  const own = join(site, 'tasks', `${name}.ts`);
  const packaged = join(packageDir, 'tasks', `${name}.ts`);
  // The package's own file (run from a clone's root) is the package's, not a site's copy.
  if ((await exists(own)) && !(await sameFile(own, packaged))) {
    await assertTrustedFile(own, 'task file', 'run kubeception from another directory, or with --config FILE (task files are then looked up beside it)');
    if (await exists(packaged)) warn(`task file ${own} replaces the package's tasks/${name}.ts`);
    return own;
  }
  if (await exists(packaged)) return packaged;
  const known = (await fs.readdir(join(packageDir, 'tasks'))).filter((f) => f.endsWith('.ts')).map((f) => f.slice(0, -3));
  throw new TaskDefinitionError('task-unknown', { what: `task "${name}"`, why: `no tasks/${name}.ts in ${site} or in the package${didYouMean(name, known)}`, fix: `use one of: ${known.join(', ')}` });
}

function isTask(v: unknown): v is Task<RunContext> {
  const t = v as Task<RunContext>;
  // Structural, not instanceof: a site's task file may import the DSL from another copy of kubeception.
  return !!t && typeof t.name === 'string' && Array.isArray(t.steps) && t.steps.every((s) => typeof (s as Step<RunContext>)?.spec?.id === 'string');
}

/** The first step whose body or skip predicates are not functions (a task built without the DSL). */
function badStep(t: Task<RunContext>): string | undefined {
  const fn = (f: unknown) => typeof f === 'function';
  return t.steps.find((s) => (s.spec.run !== undefined && !fn(s.spec.run)) || !Array.isArray(s.spec.skipIf) || !s.spec.skipIf.every(fn))?.spec.id;
}

/** Imports a module the CLI runs code from, turning any failure into an error naming file, line and step. */
export async function importTaskModule(file: string): Promise<{ default?: unknown }> {
  try {
    return (await importModule(file)) as { default?: unknown };
  } catch (err) {
    throw await taskLoadError(file, err);
  }
}

/**
 * Imports a task file.
 * @throws TaskDefinitionError `task-import` (an import the package does not export, with line and
 *   symbol), `task-invalid` (cannot load, naming line and step; default export not a task; a step
 *   whose body is not a function).
 */
export async function loadTaskFile(file: string): Promise<Task<RunContext>> {
  const mod = await importTaskModule(file);
  if (!isTask(mod.default))
    throw new TaskDefinitionError('task-invalid', { what: file, why: 'its default export is not a task', fix: "end the file with `export default task('name', [ step(...), ... ])`" });
  const bad = badStep(mod.default);
  if (bad !== undefined)
    throw new TaskDefinitionError('task-invalid', { what: `${file} (step ${bad})`, why: 'its run or skipIf is not a function', fix: 'build steps with step(id).run(fn) from kubeception/dsl, with functions from kubeception/steps' });
  return mod.default;
}

/**
 * Applies the distro's `overrides.ts` (if present) to `t`: its default export maps task names to
 * {@link Overrides}. The distro's directory is the site's `distros/<distro>/` when the site has one
 * (lib/config/load.ts {@link distroDir}), else the package's.
 * @param site the site directory ({@link siteDir}); omitted: the package's distros only.
 * @throws TaskDefinitionError if an override names an unknown step.
 * @throws HostStateError `untrusted-file` for a site's overrides file that others could have written.
 */
export async function applyDistroOverrides(t: Task<RunContext>, distro: string, packageDir: string, site?: string): Promise<Task<RunContext>> {
  const dir = await distroDir(packageDir, site, distro);
  const file = join(dir ?? join(packageDir, 'distros', distro), 'overrides.ts');
  if (!(await exists(file))) return t;
  if (!isPackageDistro(packageDir, file)) await assertTrustedFile(file, 'distro overrides file', 'run kubeception from another directory, or fix the ownership and mode of the site\'s distros/ directory');
  const mod = (await importTaskModule(file)) as { default?: Record<string, Overrides<RunContext, string>> };
  const o = mod.default?.[t.name];
  if (!o) return t;
  if (!Array.isArray((o as Overrides<RunContext, string>).edits))
    throw new TaskDefinitionError('task-override', { what: `${file}: ${t.name}`, why: 'the value is not an overrides() list', fix: 'export default { bootstrap: overrides<typeof bootstrap>().replace(…) }' });
  return applyEdits(t, o.edits, file);
}
