/**
 * Which [Conformance] specs a tier runs. Pure: the spec texts come from a ginkgo dry run of the
 * release's e2e.test (its JSON report), the smoke list and the skip list from files of this directory.
 *
 * - `smoke`: the specs of smoke.txt (≥ 40, every SIG, each a few seconds to a minute: for CI).
 * - `fast`: every [Conformance] spec that is not [Serial] (run in parallel).
 * - `full`: every [Conformance] spec ([Serial] ones run after the parallel ones, one at a time).
 * Every tier then drops the specs of skips.yaml, each with its written reason.
 *
 * Names are compared without their bracketed tags other than the SIG (`[sig-node] Pods should … [Conformance]
 * [NodeConformance]` → `[sig-node] Pods should …`), since releases move the tags around.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fromYaml } from '../../lib/util/yaml.ts';

export type Tier = 'smoke' | 'fast' | 'full';
export const TIERS: readonly Tier[] = ['smoke', 'fast', 'full'];

const HERE = dirname(fileURLToPath(import.meta.url));
export const SMOKE_FILE = join(HERE, 'smoke.txt');
export const SKIPS_FILE = join(HERE, 'skips.yaml');

/** One spec of a ginkgo JSON report (the fields used here). */
export interface SpecReport {
  ContainerHierarchyTexts?: string[] | null;
  LeafNodeText?: string;
  LeafNodeType?: string;
  LeafNodeLabels?: string[] | null;
  State?: string;
  RunTime?: number;
  Failure?: { Message?: string; Location?: { FileName?: string; LineNumber?: number } };
}

/** A skip: a regex matched against a spec's full text, and why the spec cannot run on the bed. */
export interface Skip {
  spec: string;
  reason: string;
}

/** The text ginkgo's --focus/--skip match: container texts and the spec's own, joined by spaces. */
export const fullText = (s: SpecReport) => [...(s.ContainerHierarchyTexts ?? []), s.LeafNodeText ?? ''].join(' ');

/** A spec name without its bracketed tags, other than the SIG, and with single spaces. */
export function normalize(name: string): string {
  return name.replace(/\[(?!sig-)[^\]]*\]/g, ' ').replace(/\s+/g, ' ').trim();
}

/** The It specs of a ginkgo JSON report (an array of suite reports). */
export function specsOf(report: unknown): SpecReport[] {
  const suites = Array.isArray(report) ? report : [report];
  return suites.flatMap((s) => ((s as { SpecReports?: SpecReport[] })?.SpecReports ?? []).filter((r) => r.LeafNodeType === 'It'));
}

/** The names of smoke.txt (`#` comments and blank lines ignored). */
export function readSmoke(text = readFileSync(SMOKE_FILE, 'utf8')): string[] {
  return text.split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
}

/** The entries of skips.yaml. @throws Error for an entry without a spec regex or a reason. */
export function readSkips(text = readFileSync(SKIPS_FILE, 'utf8')): Skip[] {
  const doc = fromYaml(text, SKIPS_FILE) ?? [];
  if (!Array.isArray(doc)) throw new Error(`${SKIPS_FILE}: want a list of { spec, reason }`);
  return doc.map((e, i) => {
    const { spec, reason } = (e ?? {}) as Partial<Skip>;
    if (typeof spec !== 'string' || !spec || typeof reason !== 'string' || reason.trim().length < 20)
      throw new Error(`${SKIPS_FILE}: entry ${i + 1} needs a spec regex and a written reason (≥ 20 characters)`);
    new RegExp(spec); // a bad regex fails here, not in ginkgo
    return { spec, reason: reason.trim() };
  });
}

/** The selection of a tier: the spec texts to run, and the ones dropped by the skip list (with the reason). */
export interface Selection {
  tier: Tier;
  run: string[];
  skipped: { name: string; reason: string }[];
  /** smoke.txt names that match no spec of this release (a release renamed them). */
  unmatched: string[];
  /** All [Conformance] specs of the release. */
  conformance: number;
}

/** Selects the tier's specs from the dry run's spec texts. */
export function select(tier: Tier, texts: readonly string[], skips: readonly Skip[], smoke: readonly string[] = readSmoke()): Selection {
  const conformance = texts.filter((t) => t.includes('[Conformance]'));
  let chosen = conformance;
  const unmatched: string[] = [];
  if (tier === 'fast') chosen = conformance.filter((t) => !t.includes('[Serial]'));
  if (tier === 'smoke') {
    const byName = new Map(conformance.map((t) => [normalize(t), t]));
    chosen = [];
    for (const name of smoke) {
      const t = byName.get(normalize(name));
      if (t) chosen.push(t);
      else unmatched.push(name);
    }
  }
  const skipped: Selection['skipped'] = [];
  const run = chosen.filter((t) => {
    const s = skips.find((k) => new RegExp(k.spec).test(t));
    if (s) skipped.push({ name: t, reason: s.reason });
    return !s;
  });
  return { tier, run, skipped, unmatched, conformance: conformance.length };
}

/** `s` with every regex metacharacter escaped. */
export const escapeRegex = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * One --focus regex matching exactly these spec texts. ginkgo matches focus against the suite's
 * description, a space and the spec's text (`Kubernetes e2e suite [sig-…] …`, seen on v1.37.2's
 * e2e.test: a bare `^\[sig-` matched nothing), so the start is anchored after any such prefix.
 */
export function focusRegex(texts: readonly string[]): string {
  return `^(?:Kubernetes e2e suite )?(?:${texts.map(escapeRegex).join('|')})$`;
}
