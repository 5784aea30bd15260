/**
 * Loading: finds the config file and the distro, reads host facts, and returns a
 * {@link ResolvedConfig}. Reads only; writes nothing.
 *
 * Lookup: `--config FILE`; else `./kubeception.config.ts` in the working directory; else the
 * package's own. An operator's file is run only if nobody but root (or the invoking user) could
 * have written it or its directories ({@link findConfigFile}). Distro: `--distro`, else the config's `distro`, else detected from
 * `/etc/os-release` (`ID`/`ID_LIKE`: debian, opensuse-microos/kubic); its files from the site's
 * `distros/<name>/` (beside the config file, else in the working directory) when it has one, else
 * the package's (lib/config/distro-dir.ts).
 */
import { promises as fs } from 'node:fs';
import { hostname, networkInterfaces } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { ConfigError } from '../errors.ts';
import { importModule } from '../package.ts';
import { assertTrustedFile, sameFile } from '../trusted-file.ts';
import type { KubeceptionConfig, ResolvedConfig, DistroSettings } from '../types.ts';
import type { HostFacts } from './validate.ts';
// The schema (zod), the TOML parser and the validator are imported when first needed, not with this
// module: a command that fails before (a missing --config) or never validates (`plan --order-only`)
// starts without them.
const schema = () => import('./schema.ts');
import { readDefaultRoutes } from '../net/routes.ts';
import { siteDir } from '../site-dir.ts';
import { distroDir, isPackageDistro, listDistros } from './distro-dir.ts';

/** Identity helper for type inference in `kubeception.config.ts`. */
export function defineConfig(config: KubeceptionConfig): KubeceptionConfig {
  return config;
}

/** Reads host name and non-loopback addresses (with their networks) from the OS. */
export function readHostFacts(): HostFacts {
  const addresses = Object.entries(networkInterfaces()).flatMap(([iface, list]) =>
    (list ?? []).filter((a) => !a.internal && a.cidr).map((a) => ({ address: a.address, cidr: a.cidr!, iface })),
  );
  return { hostname: hostname(), addresses, defaultRouteIfaces: readDefaultRoutes().map((r) => r.iface) };
}

async function readable(path: string): Promise<boolean> {
  return fs.access(path).then(() => true, () => false);
}

/**
 * Absolute path of the config file to load: `--config`, else `./kubeception.config.ts`, else the
 * package's. A file that is not the package's is loaded only if it and its directories are safe
 * (lib/trusted-file.ts: kubeception runs the config's code).
 * @throws ConfigError `config-missing` if `--config` names a missing file.
 * @throws HostStateError `untrusted-file` for a config that others could have written.
 */
export async function findConfigFile(packageDir: string, cwd: string, explicit?: string): Promise<string> {
  const packaged = join(packageDir, 'kubeception.config.ts');
  const trusted = async (p: string) => {
    if (!(await sameFile(p, packaged))) await assertTrustedFile(p, 'config file', 'pass --config FILE in a directory only root (or you) can write');
    return p;
  };
  if (explicit !== undefined) {
    const p = isAbsolute(explicit) ? explicit : resolve(cwd, explicit);
    if (!(await readable(p)))
      throw new ConfigError('config-missing', { what: `--config ${explicit}`, why: `${p} does not exist or is not readable`, fix: 'pass the path of an existing kubeception.config.ts' });
    return trusted(p);
  }
  const local = join(cwd, 'kubeception.config.ts');
  return (await readable(local)) ? trusted(local) : packaged;
}

/** The useful lines of an import error: esbuild puts the position and message after a summary line. */
export function loadErrorText(err: unknown): string {
  const lines = String((err as Error)?.message ?? err).split('\n').map((l) => l.trim()).filter(Boolean);
  return (lines[0]?.startsWith('Transform failed') ? lines.slice(0, 2).join(' ') : lines[0]) ?? String(err);
}

/** Imports a config module and checks its shape. @throws ConfigError `config-load` / `config-invalid`. */
export async function loadConfigFile(file: string): Promise<KubeceptionConfig> {
  let mod: { default?: unknown };
  try {
    mod = (await importModule(file)) as { default?: unknown };
  } catch (err) {
    throw new ConfigError('config-load', { what: file, why: `cannot load it: ${loadErrorText(err)}`, fix: 'fix the error in the config file (it must be a module whose default export is the config)', cause: err });
  }
  if (mod.default === undefined)
    throw new ConfigError('config-load', { what: file, why: 'it has no default export', fix: 'end the file with `export default defineConfig({ ... })`' });
  return (await schema()).parseConfig(mod.default, file);
}

export { listDistros } from './distro-dir.ts';

async function detectDistro(): Promise<string | undefined> {
  const text = await fs.readFile('/etc/os-release', 'utf8').catch(() => '');
  const ids = [...text.matchAll(/^(?:ID|ID_LIKE)="?([^"\n]+)"?$/gm)].flatMap((m) => m[1]!.split(/\s+/));
  if (ids.some((i) => i.includes('kubic') || i.includes('microos'))) return 'kubic';
  if (ids.includes('debian')) return 'debian';
  return undefined;
}

/**
 * What `plan --order-only` shows of the config without validating it: the file and the distro name
 * (`--distro`, else the file's `distro`, else /etc/os-release's). Only the distro's task overrides
 * depend on it. @throws ConfigError `config-missing` / `config-load` / `config-distro`.
 */
export async function peekConfig(opts: Pick<LoadOptions, 'packageDir' | 'cwd' | 'configFile' | 'distro'>): Promise<{ file: string; distro: string }> {
  const site = siteDir(opts.cwd, opts.configFile);
  const file = await findConfigFile(opts.packageDir, opts.cwd, opts.configFile);
  let mod: { default?: { distro?: unknown } };
  try {
    mod = (await importModule(file)) as typeof mod;
  } catch (err) {
    throw new ConfigError('config-load', { what: file, why: `cannot load it: ${loadErrorText(err)}`, fix: 'fix the error in the config file (it must be a module whose default export is the config)', cause: err });
  }
  const named = typeof mod.default?.distro === 'string' ? mod.default.distro : undefined;
  return { file, distro: await chooseDistro(opts.packageDir, opts.distro ?? named, opts.distro ? '--distro' : file, site) };
}

/** The distro to use: `name`, else /etc/os-release's, among the shipped ones and the site's. @throws ConfigError `config-distro`. */
async function chooseDistro(packageDir: string, name: string | undefined, source: string, site?: string): Promise<string> {
  const known = await listDistros(packageDir, site);
  const chosen = name ?? (await detectDistro());
  if (chosen === undefined || !known.includes(chosen))
    throw new ConfigError('config-distro', {
      what: `${source}: distro${chosen === undefined ? '' : ` "${chosen}"`}`,
      why: chosen === undefined ? 'no distro set and /etc/os-release names none that kubeception knows' : `there is no distros/${chosen}/ in the package${site === undefined ? '' : ` or in ${site}`} (known: ${known.join(', ')})`,
      fix: `set distro to one of: ${known.join(', ')} (or pass --distro)`,
    });
  return chosen;
}

/**
 * Loads `distros/<name>/<name>.toml`: the site's (`<site>/distros/<name>/`) when it has that directory,
 * else the package's.
 * @throws ConfigError `config-distro` for an unknown distro or a directory without its TOML.
 * @throws HostStateError `untrusted-file` for a site's TOML that others could have written (it decides
 *   where kubeception writes as root).
 */
export async function loadDistro(packageDir: string, name: string | undefined, source: string, site?: string): Promise<DistroSettings> {
  const chosen = await chooseDistro(packageDir, name, source, site);
  const dir = (await distroDir(packageDir, site, chosen)) ?? join(packageDir, 'distros', chosen);
  const file = join(dir, `${chosen}.toml`);
  if (!isPackageDistro(packageDir, file)) await assertTrustedFile(file, 'distro settings file', 'fix the ownership and mode of the site\'s distros/ directory');
  const text = await fs.readFile(file, 'utf8').catch(() => undefined);
  if (text === undefined)
    throw new ConfigError('config-distro', { what: file, why: 'the distro has no settings file', fix: `add ${chosen}.toml to distros/${chosen}/` });
  const [{ parseDistro }, { parseToml }] = await Promise.all([schema(), import('./toml.ts')]);
  return parseDistro(parseToml(text, file), chosen, file);
}

/** Options for {@link loadConfig}. */
export interface LoadOptions {
  packageDir: string;
  cwd: string;
  configFile?: string;
  distro?: string;
  facts?: HostFacts;
  /** Replaces the file's kubernetesVersion (`upgrade apply vX.Y.Z`); validated like it. */
  kubernetesVersion?: string;
}

/**
 * Finds, loads, validates and resolves the config.
 * @returns the resolved config and the file it came from.
 * @throws ConfigError (exit 2) for any bad input; nothing on the host is changed.
 */
export async function loadConfig(opts: LoadOptions): Promise<{ config: ResolvedConfig; file: string }> {
  const file = await findConfigFile(opts.packageDir, opts.cwd, opts.configFile);
  const loaded = await loadConfigFile(file);
  const raw = opts.kubernetesVersion ? { ...loaded, kubernetesVersion: opts.kubernetesVersion } : loaded;
  const distro = await loadDistro(opts.packageDir, opts.distro ?? raw.distro, opts.distro ? '--distro' : file, siteDir(opts.cwd, opts.configFile));
  const { resolveConfig } = await import('./validate.ts');
  return { config: resolveConfig(raw, distro, opts.facts ?? readHostFacts(), file), file };
}
