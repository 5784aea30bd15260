/**
 * The install story as an operator without a registry copy of kubeception tries it: `npm pack` in the
 * repo, then install the tarball into a clean directory. The directory gets a package-lock.json whose
 * entries are the repo's own (production dependencies, plus kubeception from the tarball), so
 * `npm ci --offline` installs from the npm cache alone — tests send no traffic off the machine.
 * Directories are made under /var/tmp, which bed hosts see (their /tmp is their own).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../bed/bed.ts';

const TMP = '/var/tmp';

/** Packs the repo into a fresh directory; returns the tarball's absolute path. */
export function packRepo(): string {
  const out = mkdtempSync(join(TMP, 'kc-pack-'));
  const name = execFileSync('npm', ['pack', '--pack-destination', out, '--silent'], { cwd: REPO_ROOT, encoding: 'utf8' }).trim().split('\n').pop()!;
  return join(out, name);
}

interface LockEntry {
  version?: string;
  resolved?: string;
  dev?: boolean;
  link?: boolean;
  [k: string]: unknown;
}

/**
 * package.json + package-lock.json for a project depending on kubeception from `tarball`, with the
 * repo's locked production dependencies. `resolved` URLs use the configured registry (as npm would).
 */
export function lockFor(projectName: string, tarball: string, existingPackageJson?: string): { packageJson: string; packageLock: string } {
  const repoLock = JSON.parse(readFileSync(join(REPO_ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
  const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8'));
  const registry = execFileSync('npm', ['config', 'get', 'registry'], { encoding: 'utf8' }).trim().replace(/\/$/, '');
  const spec = `file:${tarball}`;
  const project = existingPackageJson ? JSON.parse(existingPackageJson) : { name: projectName, private: true };
  project.dependencies = { ...project.dependencies, kubeception: spec };
  const packages: Record<string, LockEntry> = {
    '': { name: project.name, dependencies: project.dependencies },
    'node_modules/kubeception': { version: pkg.version, resolved: spec, license: pkg.license, dependencies: pkg.dependencies, bin: pkg.bin, engines: pkg.engines },
  };
  for (const [k, v] of Object.entries(repoLock.packages)) {
    if (!k || v.dev || v.link) continue;
    const name = k.slice(k.lastIndexOf('node_modules/') + 'node_modules/'.length);
    packages[k] = v.resolved ? v : { ...v, resolved: `${registry}/${name}/-/${name.split('/').pop()}-${v.version}.tgz` };
  }
  return {
    packageJson: `${JSON.stringify(project, null, 2)}\n`,
    packageLock: `${JSON.stringify({ name: project.name, lockfileVersion: 3, requires: true, packages }, null, 2)}\n`,
  };
}

/** A clean directory with kubeception installed from `tarball` (`npm ci --offline`). */
export function installTarball(tarball: string): string {
  const dir = mkdtempSync(join(TMP, 'kc-install-'));
  mkdirSync(dir, { recursive: true });
  const { packageJson, packageLock } = lockFor('kc-install', tarball);
  writeFileSync(join(dir, 'package.json'), packageJson);
  writeFileSync(join(dir, 'package-lock.json'), packageLock);
  execFileSync('npm', ['ci', '--offline', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
  return dir;
}
