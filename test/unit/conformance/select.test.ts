/**
 * Tier selection, the skip list and the summary of a conformance run (test/conformance/select.ts,
 * summary.ts): pure, against spec texts shaped as ginkgo's JSON report of e2e.test gives them. Where the
 * release's conformance.yaml is in the bed's Go module cache, the smoke list is checked against it.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import process from 'node:process';
import { test } from 'node:test';
import { focusRegex, normalize, readSkips, readSmoke, select, specsOf, fullText, type SpecReport } from '../../conformance/select.ts';
import { formatSummary, summarize } from '../../conformance/summary.ts';
import { fromYaml } from '../../../lib/util/yaml.ts';

const spec = (containers: string[], leaf: string, state = 'passed', message?: string): SpecReport => ({ ContainerHierarchyTexts: containers, LeafNodeText: leaf, LeafNodeType: 'It', State: state, RunTime: 2e9, ...(message && { Failure: { Message: message } }) });
const SPECS = [
  spec(['[sig-node] Pods'], 'should be submitted and removed [NodeConformance] [Conformance]'),
  spec(['[sig-apps] Daemon set'], 'should run and stop simple daemon [Conformance] [Serial]'),
  spec(['[sig-network] DNS'], 'should provide DNS for the cluster [Conformance]', 'failed', 'Timed out after 600s.\nmore'),
  spec(['[sig-storage] ImageVolume'], 'should succeed with pod and pull policy of Always [Conformance]', 'skipped', 'Only supported on containerd >= 2.1'),
  spec(['[sig-node] Pods'], 'should get a host IP [NodeConformance]'),
];
const texts = SPECS.map(fullText);

test('normalize drops every bracketed tag but the SIG, wherever a release puts it', () => {
  assert.equal(normalize('[sig-node] InitContainer [NodeConformance] should invoke init containers on a RestartNever pod [Conformance]'), '[sig-node] InitContainer should invoke init containers on a RestartNever pod');
  assert.equal(normalize('[sig-node] InitContainer should invoke init containers on a RestartNever pod [Conformance] [NodeConformance]'), '[sig-node] InitContainer should invoke init containers on a RestartNever pod');
});

test('tiers: full = every [Conformance] spec, fast = without [Serial], smoke = the list; the skip list drops specs with their reason', () => {
  assert.equal(select('full', texts, []).run.length, 4);
  assert.deepEqual(select('fast', texts, []).run, [texts[0], texts[2], texts[3]]);
  const smoke = select('smoke', texts, [], ['[sig-node] Pods should be submitted and removed [Conformance] [NodeConformance]', '[sig-cli] Kubectl renamed spec [Conformance]']);
  assert.deepEqual(smoke.run, [texts[0]]);
  assert.deepEqual(smoke.unmatched, ['[sig-cli] Kubectl renamed spec [Conformance]']);
  const skipped = select('fast', texts, [{ spec: 'ImageVolume .*pull policy of Always', reason: 'a written reason that is long enough' }]);
  assert.deepEqual(skipped.run, [texts[0], texts[2]]);
  assert.deepEqual(skipped.skipped, [{ name: texts[3], reason: 'a written reason that is long enough' }]);
  assert.equal(skipped.conformance, 4);
});

test('the focus regex matches exactly the chosen specs', () => {
  const re = new RegExp(focusRegex([texts[0]!, texts[2]!]));
  assert.deepEqual(texts.filter((t) => re.test(t)), [texts[0], texts[2]]);
  assert.equal(re.test(`${texts[0]} and more`), false);
  assert.equal(re.test(`Kubernetes e2e suite ${texts[0]}`), true, 'the text ginkgo matches starts with the suite description');
  assert.equal(re.test(`x ${texts[0]}`), false);
});

test('skips.yaml: each entry needs a regex and a reason; the shipped file parses', () => {
  assert.throws(() => readSkips('- spec: "x"\n'), /written reason/);
  assert.throws(() => readSkips('- spec: "("\n  reason: "a reason that is long enough"\n'), /Invalid regular expression/);
  assert.ok(Array.isArray(readSkips()));
});

test('summary: passed / failed / skipped per SIG of the selected specs; a selected spec the report lacks counts as failed', () => {
  const selection = select('full', texts, []);
  const report = [{ SpecReports: [...SPECS.slice(0, 2), SPECS[3]!, { LeafNodeType: 'SynchronizedBeforeSuite', State: 'passed' }] }];
  const s = summarize(selection, specsOf(report), { version: 'v1.37.2', cluster: 'test', date: '2026-12-03', wallSeconds: 60 });
  assert.deepEqual([s.selected, s.passed, s.failed, s.skipped, s.notRun], [4, 2, 1, 1, 1]);
  assert.deepEqual(s.perSig['sig-network'], { passed: 0, failed: 1, skipped: 0 });
  assert.deepEqual(s.perSig['sig-node'], { passed: 1, failed: 0, skipped: 0 });
  assert.match(s.runtimeSkips[0]!.message, /containerd >= 2\.1/);
  const withDns = summarize(selection, specsOf(report.map((r) => ({ SpecReports: [...r.SpecReports, SPECS[2]!] }))), { version: 'v1.37.2', cluster: 'test', date: 'd', wallSeconds: 1 });
  assert.equal(withDns.failures[0]!.message, 'failed: Timed out after 600s.');
  assert.match(formatSummary(withDns, selection), /sig-network\s+0\s+1\s+0/);
});

const gomod = process.env.GOMODCACHE ?? `${process.env.KUBECEPTION_CACHE ?? '/var/cache/kubeception'}/go/mod`;
const yamlFile = `${gomod}/k8s.io/kubernetes@v1.37.2/test/conformance/testdata/conformance.yaml`;
test('smoke.txt: ≥ 40 [Conformance] specs of v1.37.2, none [Serial], every SIG of the suite', { skip: existsSync(yamlFile) ? false : `${yamlFile} not downloaded` }, () => {
  const codenames = (fromYaml(readFileSync(yamlFile, 'utf8'), yamlFile) as { codename: string }[]).map((c) => c.codename);
  const smoke = readSmoke();
  assert.ok(smoke.length >= 40, `${smoke.length} specs`);
  const sel = select('smoke', codenames, [], smoke);
  assert.deepEqual(sel.unmatched, []);
  assert.equal(sel.run.length, smoke.length);
  assert.ok(sel.run.every((t) => !t.includes('[Serial]')));
  const sigs = (names: string[]) => new Set(names.map((n) => /^\[(sig-[a-z-]+)\]/.exec(n)?.[1]));
  assert.deepEqual([...sigs(sel.run)].sort(), [...sigs(codenames)].sort());
});
