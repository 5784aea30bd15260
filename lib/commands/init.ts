/**
 * `kubeception init [DIR]`: writes a site directory an operator edits — `kubeception.config.ts`, the
 * package's `tasks/bootstrap.ts` and `tasks/join.ts` copied verbatim (they import only from
 * `kubeception/dsl` and `kubeception/steps`, so the copies work as they are), and a `package.json`
 * that depends on kubeception. Then `npm install` and `npx kubeception plan bootstrap` in DIR.
 *
 * Host effects: creates DIR (and DIR/tasks) and those four files (0644). Never overwrites: if any of
 * them exists, nothing is written — except that a package.json already depending on kubeception (made
 * by `npm install /path/to/kubeception-<version>.tgz` in DIR) is kept as it is.
 * @throws InputError `init-exists` (exit 2) naming the files that already exist.
 */
import { promises as fs } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { ExitCode, InputError } from '../errors.ts';

/** Options of `init`. */
export interface InitOptions {
  /** Target directory (created if missing), relative to `cwd`. Default `.`. */
  dir?: string;
  cwd: string;
  /** The package's own directory (source of the task files and config). */
  packageDir: string;
  /** The dependency spec for kubeception in package.json: a version or a tarball path. Default: this version. */
  kubeception?: string;
  stdout: (s: string) => void;
}

const TASKS = ['bootstrap', 'join'];

/** The files init writes, relative to the site directory, with their content. */
export async function siteFiles(packageDir: string, siteName: string, dependency: string): Promise<Record<string, string>> {
  const config = (await fs.readFile(join(packageDir, 'kubeception.config.ts'), 'utf8')).replace(/from '\.\/lib\/config\/load\.ts'/, "from 'kubeception'");
  const pkg = { name: siteName, private: true, type: 'module', description: 'kubeception site: config and task files for this cluster', dependencies: { kubeception: dependency } };
  const out: Record<string, string> = { 'package.json': `${JSON.stringify(pkg, null, 2)}\n`, 'kubeception.config.ts': config };
  for (const t of TASKS) out[`tasks/${t}.ts`] = await fs.readFile(join(packageDir, 'tasks', `${t}.ts`), 'utf8');
  return out;
}

/** A tarball path becomes `file:<absolute path>`; anything else (a version, a range) is kept. */
function dependencySpec(spec: string | undefined, cwd: string, version: string): string {
  if (!spec) return version;
  return /\.(tgz|tar\.gz)$/.test(spec) && !spec.startsWith('file:') ? `file:${resolve(cwd, spec)}` : spec;
}

function dependsOnKubeception(text: string): boolean {
  try {
    return typeof (JSON.parse(text) as { dependencies?: Record<string, unknown> }).dependencies?.kubeception === 'string';
  } catch {
    return false;
  }
}

/** Runs `init`. @returns the exit code. */
export async function initCommand(o: InitOptions): Promise<number> {
  const dir = resolve(o.cwd, o.dir ?? '.');
  const { version } = JSON.parse(await fs.readFile(join(o.packageDir, 'package.json'), 'utf8')) as { version: string };
  const name = basename(dir).toLowerCase().replace(/[^a-z0-9._-]+/g, '-').replace(/^[._-]+/, '') || 'kubeception-site';
  const files = await siteFiles(o.packageDir, name, dependencySpec(o.kubeception, o.cwd, version));
  // A package.json that already depends on kubeception (`npm install kubeception-0.1.0.tgz` first) is kept.
  const pkgText = await fs.readFile(join(dir, 'package.json'), 'utf8').catch(() => undefined);
  if (pkgText !== undefined && dependsOnKubeception(pkgText)) delete files['package.json'];
  const existing = [];
  for (const f of Object.keys(files)) if (await fs.lstat(join(dir, f)).then(() => true, () => false)) existing.push(join(dir, f));
  if (existing.length)
    throw new InputError('init-exists', { what: existing.join(', '), why: 'init never overwrites a site file', fix: 'run init in an empty directory, or move these files aside' });
  await fs.mkdir(join(dir, 'tasks'), { recursive: true });
  for (const [f, text] of Object.entries(files)) await fs.writeFile(join(dir, f), text, { mode: 0o644, flag: 'wx' });
  const installed = !('package.json' in files);
  const hint = installed || o.kubeception ? '' : `   (kubeception ${version} is on no registry: use \`npm install /path/to/kubeception-${version}.tgz\`, or init --kubeception TARBALL)`;
  const next = [`  cd ${dir}`, ...(installed ? [] : [`  npm install${hint}`]), '  npx kubeception plan bootstrap'];
  o.stdout(`wrote ${Object.keys(files).map((f) => join(dir, f)).join(', ')}\n\nNext:\n${next.join('\n')}\n\nEdit kubeception.config.ts and tasks/*.ts; the CLI prefers ./tasks/<task>.ts over the package's own.\n`);
  return ExitCode.ok;
}
