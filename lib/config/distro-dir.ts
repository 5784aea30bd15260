/**
 * Where a distro's files live: the package's `distros/<name>/`, or a site's own `<site>/distros/<name>/`
 * (a copy of a shipped distro edited for the site, or a new one: docs/configuration.md, "A distro of
 * your own"). A site's directory wins over the package's of the same name. Reads only.
 */
import { promises as fs } from 'node:fs';
import { join } from 'node:path';

const isDir = (p: string) => fs.stat(p).then((s) => s.isDirectory(), () => false);

async function names(root: string): Promise<string[]> {
  const entries = await fs.readdir(join(root, 'distros'), { withFileTypes: true }).catch(() => []);
  return entries.filter((e) => e.isDirectory()).map((e) => e.name);
}

/** Names of the distros shipped in `<packageDir>/distros` and of the site's `<site>/distros`, sorted, once each. */
export async function listDistros(packageDir: string, site?: string): Promise<string[]> {
  const all = [...(await names(packageDir)), ...(site === undefined ? [] : await names(site))];
  return [...new Set(all)].sort();
}

/** The directory of distro `name`: the site's when it has one, else the package's; undefined if neither exists. */
export async function distroDir(packageDir: string, site: string | undefined, name: string): Promise<string | undefined> {
  if (!/^[a-z0-9][a-z0-9._-]*$/i.test(name)) return undefined;
  if (site !== undefined && (await isDir(join(site, 'distros', name)))) return join(site, 'distros', name);
  return (await isDir(join(packageDir, 'distros', name))) ? join(packageDir, 'distros', name) : undefined;
}

/** True if `dir` is one of the package's own distro directories (trusted as the package is). */
export const isPackageDistro = (packageDir: string, dir: string) => dir.startsWith(`${join(packageDir, 'distros')}/`);
