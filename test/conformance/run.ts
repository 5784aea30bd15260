/**
 * `npm run conformance [-- smoke|fast|full] [--ha] [--peer kubeadm] [--keep] [--procs N]` (root, on the
 * bed): the upstream [Conformance] e2e specs of the bed's Kubernetes version (`K8S_VERSION`, else
 * kubeception's default) against a cluster kubeception makes on bed hosts (test/conformance/cluster.ts),
 * or, with `--peer kubeadm`, one kubeadm makes on the same hosts (test/conformance/kubeadm-cluster.ts).
 *
 * 1. Builds what is missing, cached by version: the Kubernetes binaries, etcd, containerd, the addons,
 *    the images, and e2e.test + ginkgo + kubectl + the conformance images (build-conformance.sh).
 * 2. Boots the cluster (1 control plane, or 3 behind a load balancer with --ha, and 2 workers) and a
 *    runner host; e2e.test runs in the runner, so nothing is sent from the machine's own namespace.
 * 3. A ginkgo dry run lists the release's specs; the tier picks its specs (test/conformance/select.ts);
 *    test/conformance/skips.yaml drops the ones that cannot run here, each with its reason (counted and
 *    printed).
 * 4. ginkgo runs them (in parallel; [Serial] specs after the others, one at a time) and writes its JUnit
 *    and JSON reports; summary.json and summary.txt (passed / failed / skipped, per SIG, wall time)
 *    go beside them in `$KUBECEPTION_CACHE/results/conformance-<version>-<tier>[-ha]-<date>/`.
 * Exit 0 when no selected spec failed, 1 otherwise. The hosts are destroyed at the end (--keep keeps them).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import process from 'node:process';
import { CACHE_DIR, K8S_VERSION, REPO_ROOT } from '../bed/bed.ts';
import { coreDNSVersion } from '../../manifests/addons/versions.ts';
import { makeCluster } from './cluster.ts';
import { focusRegex, readSkips, select, specsOf, TIERS, type Tier, fullText } from './select.ts';
import { formatSummary, summarize } from './summary.ts';

const args = process.argv.slice(2);
const tier = (args.find((a) => !a.startsWith('--') && TIERS.includes(a as Tier)) ?? 'smoke') as Tier;
const valued = ['--procs', '--peer'];
const unknown = args.filter((a, i) => !TIERS.includes(a as Tier) && !['--ha', '--keep', ...valued].includes(a) && !valued.includes(args[i - 1] ?? ''));
const peerArg = args.includes('--peer') ? args[args.indexOf('--peer') + 1] : undefined;
if (unknown.length || (peerArg !== undefined && peerArg !== 'kubeadm')) {
  console.error(`usage: npm run conformance -- [smoke|fast|full] [--ha] [--peer kubeadm] [--keep] [--procs N]\nunknown: ${[...unknown, peerArg ?? ''].join(' ').trim()}`);
  process.exit(2);
}
const peer = peerArg as 'kubeadm' | undefined;
const ha = args.includes('--ha');
const keep = args.includes('--keep');
const procs = Number(args[args.indexOf('--procs') + 1] ?? 0) || (tier === 'smoke' ? 4 : 5);
const prefix = process.env.CONFORMANCE_PREFIX ?? 'cf';
const version = K8S_VERSION;
const stamp = new Date().toISOString().replace(/:\d\d\.\d+Z$/, 'Z').replace(/:/g, '');
const resultsDir = join(CACHE_DIR, 'results', `conformance-${version}-${tier}${ha ? '-ha' : ''}${peer ? `-${peer}` : ''}-${stamp}`);
const BIN = join(CACHE_DIR, 'conformance', version, 'bin');
const log = (m: string) => console.log(`[conformance ${new Date().toISOString().slice(11, 19)}] ${m}`);

function build(): void {
  const env = { ...process.env, K8S_VERSION: version, COREDNS_VERSION: coreDNSVersion(version) ?? '' };
  const sh = (script: string) => execFileSync('nice', ['-n', '10', 'bash', join(REPO_ROOT, 'test', 'bed', script)], { stdio: 'inherit', env });
  for (const s of ['build-k8s.sh', 'build-etcd.sh', 'build-containerd.sh', 'build-addons.sh', 'images.sh', 'build-conformance.sh']) sh(s);
  execFileSync('bash', [join(REPO_ROOT, 'test', 'bed', 'kubeception-image.sh')], { stdio: ['ignore', 'ignore', 'inherit'] });
}

const e2eFlags = (report: string) => [
  '--kubeconfig=/root/admin.conf',
  '--provider=skeleton',
  `--kubectl-path=${BIN}/kubectl`,
  '--report-dir=/results',
  '--non-blocking-taints=node-role.kubernetes.io/control-plane',
  `--ginkgo.json-report=${report}`,
];

async function main(): Promise<number> {
  const t0 = Date.now();
  build();
  log(`built in ${((Date.now() - t0) / 1000).toFixed(0)} s; results in ${resultsDir}`);
  mkdirSync(resultsDir, { recursive: true });
  const images = readFileSync(join(CACHE_DIR, 'conformance', version, 'images', 'images.txt'), 'utf8').trim().split('\n').map((l) => {
    const [archive, ...refs] = l.split(' ');
    return { archive: archive!, refs };
  });
  const cluster = await makeCluster({ prefix, ha, images, resultsDir, keep, peer });
  try {
    const { runner } = cluster;
    // Which specs exist: a dry run of the whole suite (nothing is created in the cluster).
    const dry = await runner.exec([`${BIN}/e2e.test`, ...e2eFlags('/results/dry-run.json'), '--ginkgo.dry-run', '--ginkgo.focus=\\[Conformance\\]', '--ginkgo.no-color'], { cwd: '/results', timeoutMs: 600_000 });
    if (dry.code !== 0) throw new Error(`dry run exited ${dry.code}:\n${dry.stdout.slice(-2000)}\n${dry.stderr.slice(-2000)}`);
    const texts = specsOf(JSON.parse(readFileSync(join(resultsDir, 'dry-run.json'), 'utf8'))).map(fullText);
    const selection = select(tier, texts, readSkips());
    writeFileSync(join(resultsDir, 'selection.json'), `${JSON.stringify(selection, null, 2)}\n`);
    log(`${selection.conformance} [Conformance] specs in ${version}; tier ${tier}: ${selection.run.length} to run, ${selection.skipped.length} skipped by test/conformance/skips.yaml${selection.unmatched.length ? `, ${selection.unmatched.length} smoke names not in this release` : ''}`);
    for (const s of selection.skipped) log(`  skip: ${s.name} — ${s.reason}`);
    const t1 = Date.now();
    const ginkgo = [
      `${BIN}/ginkgo`,
      `--procs=${procs}`,
      '--timeout=6h',
      '--no-color',
      '--poll-progress-after=300s',
      '--output-dir=/results',
      '--junit-report=junit.xml',
      '--json-report=report.json',
      `--focus=${focusRegex(selection.run)}`,
      `${BIN}/e2e.test`,
      '--',
      ...e2eFlags('/results/e2e-report.json').slice(0, -1),
    ];
    writeFileSync(join(resultsDir, 'command.txt'), `${ginkgo.map((a) => (a.length > 200 ? `${a.slice(0, 200)}…` : a)).join(' ')}\n`);
    const run = await runner.exec(ginkgo, { cwd: '/results', timeoutMs: 7 * 3_600_000 });
    const wallSeconds = (Date.now() - t1) / 1000;
    writeFileSync(join(resultsDir, 'ginkgo.log'), `${run.stdout}\n--- stderr\n${run.stderr}`);
    const specs = specsOf(JSON.parse(readFileSync(join(resultsDir, 'report.json'), 'utf8')));
    const stack = `etcd ${cluster.controlPlanes[0]!.runtime.etcd}, containerd ${cluster.controlPlanes[0]!.runtime.containerd} stack`;
    const clusterName = peer ? `kubeadm (the peer) 1 control plane + 2 workers, bed CNI (${stack})` : `kubeception ${ha ? '3 control planes (LB) + 2 workers' : '1 control plane + 2 workers'} (${stack})`;
    const summary = summarize(selection, specs, { version, cluster: clusterName, date: new Date().toISOString(), wallSeconds });
    writeFileSync(join(resultsDir, 'summary.json'), `${JSON.stringify(summary, null, 2)}\n`);
    const text = formatSummary(summary, selection);
    writeFileSync(join(resultsDir, 'summary.txt'), text);
    console.log(`\n${text}\nresults: ${resultsDir} (junit.xml, report.json, summary.txt, ginkgo.log); total ${((Date.now() - t0) / 60_000).toFixed(1)} min`);
    return summary.failed === 0 && run.code === 0 ? 0 : 1;
  } finally {
    if (keep) log(`hosts kept: ${cluster.hosts.map((h) => h.name).join(' ')} (npx tsx test/bed/host.ts down NAME)`);
    else await Promise.all(cluster.hosts.map((h) => h.destroy()));
  }
}

main().then(
  (code) => process.exit(code),
  (e: Error) => {
    console.error(e.stack ?? e.message);
    process.exit(1);
  },
);
