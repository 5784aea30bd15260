/**
 * kube-bench's benchmark definitions for a kubeception host: a copy of the module's cfg/ (cached by
 * test/bed/build-kube-bench.sh) with test/cis/config.yaml as cis-1.12's version-specific config (kube-bench
 * merges it over cfg/config.yaml), and the checks of test/cis/not-applicable.yaml, which `npm run cis`
 * skips on kubeception's hosts. The kubeadm peer runs kube-bench's cfg/ unchanged: its defaults are
 * kubeadm's layout.
 */
import { cpSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fromYaml } from '../../lib/util/yaml.ts';

const HERE = dirname(fileURLToPath(import.meta.url));
/** kubeception's layout for kube-bench (merged over cfg/config.yaml). */
export const CONFIG_FILE = join(HERE, 'config.yaml');
/** The checks that cannot apply to a self-hosted control plane, with their reasons. */
export const NOT_APPLICABLE_FILE = join(HERE, 'not-applicable.yaml');
/** The benchmark: CIS Kubernetes Benchmark v1.12, the newest kube-bench v0.15.6 has (it covers 1.32–1.34; kube-bench maps 1.35–1.37 to it). */
export const BENCHMARK = 'cis-1.12';
/** kube-bench's version (test/bed/build-kube-bench.sh builds it). */
export const KUBE_BENCH_VERSION = process.env.KUBE_BENCH_VERSION ?? 'v0.15.6';

/** A check skipped on kubeception's hosts, and why. */
export interface NotApplicable {
  id: string;
  reason: string;
}

/**
 * Parses not-applicable.yaml: a list of `{ id, reason }`, ids unique and in kube-bench's form (`1.1.1`).
 * @throws Error naming `source` and the entry when one is malformed or repeated.
 */
export function parseNotApplicable(text: string, source: string): NotApplicable[] {
  const doc = fromYaml(text, source);
  if (!Array.isArray(doc)) throw new Error(`${source}: want a list of { id, reason }`);
  const seen = new Set<string>();
  return doc.map((e: { id?: unknown; reason?: unknown }, i) => {
    // A YAML number (`id: 2.10`) would lose digits: ids must be strings (`'2.10'`; `1.1.1` is one anyway).
    const id = typeof e?.id === 'string' ? e.id : '';
    if (!/^\d+(\.\d+)+$/.test(id)) throw new Error(`${source}: entry ${i + 1}: id ${JSON.stringify(e?.id)} is not a check id like '1.1.1' (quote it: YAML reads 2.10 as the number 2.1)`);
    if (typeof e.reason !== 'string' || e.reason.trim().length < 20) throw new Error(`${source}: ${id}: give the reason it cannot apply (a sentence)`);
    if (seen.has(id)) throw new Error(`${source}: ${id} is listed twice`);
    seen.add(id);
    return { id, reason: e.reason.trim() };
  });
}

/** The checks of {@link NOT_APPLICABLE_FILE}. */
export const readNotApplicable = (): NotApplicable[] => parseNotApplicable(readFileSync(NOT_APPLICABLE_FILE, 'utf8'), NOT_APPLICABLE_FILE);

/**
 * Writes kubeception's cfg dir for kube-bench's `--config-dir`: `upstream` (kube-bench's cfg/) copied to
 * `dest`, and {@link CONFIG_FILE} as `dest/<BENCHMARK>/config.yaml` (upstream's is comments only).
 * Host effects: files under `dest` (on the machine; bed hosts see the cache dir at the same path).
 * @throws Error if `upstream` has no config.yaml or no `<BENCHMARK>/` (run build-kube-bench.sh).
 */
export function writeConfigDir(upstream: string, dest: string): void {
  for (const f of [join(upstream, 'config.yaml'), join(upstream, BENCHMARK, 'master.yaml')])
    if (!existsSync(f)) throw new Error(`${f} is missing: run test/bed/build-kube-bench.sh (KUBE_BENCH_VERSION=${KUBE_BENCH_VERSION})`);
  cpSync(upstream, dest, { recursive: true });
  writeFileSync(join(dest, BENCHMARK, 'config.yaml'), readFileSync(CONFIG_FILE, 'utf8'));
}
