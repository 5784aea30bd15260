/**
 * `npm run cis [-- --keep] [--only kubeception|kubeadm]` (root, on the bed): the CIS Kubernetes
 * Benchmark (kube-bench, test/cis/benchmark.ts) on a kubeception cluster and on a kubeadm cluster of the
 * same version (`K8S_VERSION`, else kubeception's default), scores side by side.
 *
 * 1. Builds what is missing, cached by version (the bed's binaries and images, kube-bench with its cfg/:
 *    test/bed/build-kube-bench.sh, and kubeadm's etcd image: test/bed/kubeadm-etcd-image.sh).
 * 2. kubeception: 1 control plane + 1 worker made with its defaults (test/conformance/cluster.ts); kube-bench
 *    with kubeception's layout (test/cis/config.yaml) and the checks of test/cis/not-applicable.yaml skipped.
 * 3. kubeadm: 1 control plane + 1 worker, `kubeadm init` with its stacked etcd (its defaults but for what
 *    the bed needs: test/bed/kubeadm-config.ts); kube-bench's cfg/ unchanged (it is kubeadm's layout).
 * On each control plane kube-bench runs the targets master, controlplane, etcd, node and policies; on
 * each worker, node. The clusters run one after the other (their hosts are destroyed after their runs,
 * unless --keep). Writes `<cluster>-<role>.json` (kube-bench's --json), kube-bench's logs, summary.json
 * and summary.txt in `$KUBECEPTION_CACHE/results/cis-<version>-<date>/`; prints summary.txt.
 * Exit 0 when every run completed (FAILs are the measurement, not an error), 1 otherwise.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import process from 'node:process';
import { bootHost, CACHE_DIR, type Host, K8S_VERSION, REPO_ROOT } from '../bed/bed.ts';
import { importKubeceptionImage } from '../bed/kubeception-image.ts';
import { coreDNSVersion } from '../../manifests/addons/versions.ts';
import { ADMIN } from '../helpers/cluster.ts';
import { kubeceptionCluster, waitClusterReady } from '../conformance/cluster.ts';
import { kubeadmCluster } from '../conformance/kubeadm-cluster.ts';
import { BENCHMARK, KUBE_BENCH_VERSION, readNotApplicable, writeConfigDir } from './benchmark.ts';
import { type ClusterScore, formatScores, type HostScore, scoreCluster, scoreRun } from './summary.ts';

const CLUSTERS = ['kubeception', 'kubeadm'] as const;
type ClusterName = (typeof CLUSTERS)[number];

const args = process.argv.slice(2);
const only = args.includes('--only') ? args[args.indexOf('--only') + 1] : undefined;
const unknown = args.filter((a, i) => !['--keep', '--only'].includes(a) && args[i - 1] !== '--only');
if (unknown.length || (args.includes('--only') && !CLUSTERS.includes(only as ClusterName))) {
  console.error(`usage: npm run cis -- [--keep] [--only kubeception|kubeadm]\nunknown: ${[...unknown, only ?? ''].join(' ').trim()}`);
  process.exit(2);
}
const keep = args.includes('--keep');
const prefix = process.env.CIS_PREFIX ?? 'cis';
const version = K8S_VERSION;
const stamp = new Date().toISOString().replace(/:\d\d\.\d+Z$/, 'Z').replace(/:/g, '');
const resultsDir = join(CACHE_DIR, 'results', `cis-${version}-${stamp}`);
const KUBE_BENCH_DIR = join(CACHE_DIR, 'kube-bench', KUBE_BENCH_VERSION);
const KUBE_BENCH = join(KUBE_BENCH_DIR, 'bin', 'kube-bench');
const CONTROL_PLANE_TARGETS = ['master', 'controlplane', 'etcd', 'node', 'policies'];
const log = (m: string) => console.log(`[cis ${new Date().toISOString().slice(11, 19)}] ${m}`);
const seconds = (t0: number) => ((Date.now() - t0) / 1000).toFixed(0);

/** Builds what is missing (each script is a no-op when its cache is complete). */
function build(): void {
  const env = { ...process.env, K8S_VERSION: version, COREDNS_VERSION: coreDNSVersion(version) ?? '' };
  const sh = (script: string) => execFileSync('nice', ['-n', '10', 'bash', join(REPO_ROOT, 'test', 'bed', script)], { stdio: 'inherit', env });
  for (const s of ['build-k8s.sh', 'build-etcd.sh', 'build-containerd.sh', 'build-addons.sh', 'images.sh', 'build-kube-bench.sh', 'kubeadm-etcd-image.sh']) sh(s);
  execFileSync('bash', [join(REPO_ROOT, 'test', 'bed', 'kubeception-image.sh')], { stdio: ['ignore', 'ignore', 'inherit'] });
}

/** How one cluster is made and benchmarked. */
interface Plan {
  name: ClusterName;
  /** bootHost's `kubelet` option for its hosts. */
  kubelet: true | { cni: 'none' };
  make: (cp: Host, worker: Host, t0: number) => Promise<void>;
  /** kube-bench's --config-dir (a path the hosts see: the cache dir is bound into them). */
  configDir: string;
  /** Check ids for kube-bench's --skip. */
  skip: string[];
}

/**
 * Runs kube-bench on `host` and writes its JSON and log to the results dir.
 * @returns the host's score. @throws if kube-bench exits non-zero or writes no JSON.
 */
async function benchHost(plan: Plan, host: Host, role: string, targets: string[]): Promise<HostScore> {
  const base = `${plan.name}-${role.replace(/ /g, '-')}`;
  const out = `/root/${base}.json`;
  const argv = [KUBE_BENCH, 'run', '--config-dir', plan.configDir, '--benchmark', BENCHMARK, '--targets', targets.join(','), '--json', '--include-test-output', '--outputfile', out];
  if (plan.skip.length) argv.push('--skip', plan.skip.join(','));
  const t0 = Date.now();
  const r = await host.exec(argv, { env: { KUBECONFIG: ADMIN }, timeoutMs: 600_000 });
  writeFileSync(join(resultsDir, `${base}.log`), `${argv.join(' ')}\nexit ${r.code}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`);
  if (r.code !== 0) throw new Error(`kube-bench on ${host.name} exited ${r.code}: ${r.stderr.trim().split('\n').slice(-5).join('\n')}`);
  const json = await host.readFile(out);
  const file = join(resultsDir, `${base}.json`);
  writeFileSync(file, json);
  log(`${plan.name}: kube-bench on the ${role} (${host.name}, ${targets.join(',')}) in ${seconds(t0)} s`);
  return scoreRun(json, role, file);
}

/** Boots the plan's two hosts, makes the cluster, benchmarks both hosts; destroys the hosts unless --keep. */
async function measure(plan: Plan): Promise<ClusterScore & { seconds: { cluster: number; bench: number } }> {
  const t0 = Date.now();
  const tag = plan.name === 'kubeception' ? '' : 'k';
  const node = (name: string) => bootHost({ name, kubelet: plan.kubelet, bootTimeoutMs: 180_000 });
  const settled = await Promise.allSettled([node(`${prefix}${tag}cp`), node(`${prefix}${tag}w1`)]);
  const hosts = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  try {
    const failed = settled.find((s) => s.status === 'rejected');
    if (failed) throw failed.reason;
    const [cp, worker] = hosts as [Host, Host];
    await plan.make(cp, worker, t0);
    await waitClusterReady(cp, 2);
    const clusterSeconds = (Date.now() - t0) / 1000;
    log(`${plan.name}: cluster ready (${seconds(t0)} s)`);
    const t1 = Date.now();
    const scores = [await benchHost(plan, cp, 'control plane', CONTROL_PLANE_TARGETS), await benchHost(plan, worker, 'worker', ['node'])];
    return { ...scoreCluster(plan.name, scores), seconds: { cluster: clusterSeconds, bench: (Date.now() - t1) / 1000 } };
  } finally {
    if (keep) log(`hosts kept: ${hosts.map((h) => h.name).join(' ')} (npx tsx test/bed/host.ts down NAME)`);
    else await Promise.all(hosts.map((h) => h.destroy()));
  }
}

async function main(): Promise<number> {
  const t0 = Date.now();
  build();
  log(`built in ${seconds(t0)} s; results in ${resultsDir}`);
  mkdirSync(resultsDir, { recursive: true });
  const kubeceptionCfg = join(resultsDir, 'cfg-kubeception');
  writeConfigDir(join(KUBE_BENCH_DIR, 'cfg'), kubeceptionCfg);
  const notApplicable = readNotApplicable();
  const plans: Plan[] = [
    {
      name: 'kubeception',
      kubelet: { cni: 'none' },
      make: async (cp, worker, start) => {
        await importKubeceptionImage(cp);
        await kubeceptionCluster([cp], [worker], undefined, start, (m) => log(`kubeception: ${m}`));
      },
      configDir: kubeceptionCfg,
      skip: notApplicable.map((n) => n.id),
    },
    {
      name: 'kubeadm',
      kubelet: true,
      make: (cp, worker) => kubeadmCluster(cp, [worker], (m) => log(`kubeadm: ${m}`), { etcd: 'stacked' }),
      configDir: join(KUBE_BENCH_DIR, 'cfg'),
      skip: [],
    },
  ];
  const results: Awaited<ReturnType<typeof measure>>[] = [];
  let failed = false;
  for (const plan of plans.filter((p) => !only || p.name === only)) {
    try {
      results.push(await measure(plan));
    } catch (e) {
      failed = true;
      log(`${plan.name}: ${(e as Error).stack ?? e}`);
    }
  }
  const title = `CIS Kubernetes Benchmark ${BENCHMARK} (kube-bench ${KUBE_BENCH_VERSION}), Kubernetes ${version}, ${new Date().toISOString()}\n` +
    `  control plane: ${CONTROL_PLANE_TARGETS.join(',')}; worker: node. kubeception skips ${notApplicable.map((n) => n.id).join(',')} (test/cis/not-applicable.yaml).\n` +
    results.map((r) => `  ${r.name}: cluster made in ${r.seconds.cluster.toFixed(0)} s, kube-bench ${r.seconds.bench.toFixed(0)} s`).join('\n');
  const text = formatScores(title, results);
  writeFileSync(join(resultsDir, 'summary.txt'), text);
  writeFileSync(join(resultsDir, 'summary.json'), `${JSON.stringify({ version, benchmark: BENCHMARK, kubeBench: KUBE_BENCH_VERSION, notApplicable, clusters: results }, null, 2)}\n`);
  console.log(`\n${text}\nresults: ${resultsDir}; total ${((Date.now() - t0) / 60_000).toFixed(1)} min`);
  return failed ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (e: Error) => {
    console.error(e.stack ?? e.message);
    process.exit(1);
  },
);
