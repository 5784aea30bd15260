/**
 * The cluster a conformance run tests, on the bed: one control-plane host (or three behind a load
 * balancer, `ha`) and two workers, made by kubeception with its defaults (flannel, CoreDNS,
 * kube-proxy), each worker joined with its own bootstrap token (`kubeception token create`, passed in
 * the environment); and a runner host that runs ginkgo / e2e.test (nothing is sent from the machine's
 * own network namespace) and serves a local registry (crane) that the nodes' containerd uses for
 * `registry.k8s.io`, so the specs that pull with `Always` find every conformance image there.
 */
import { join } from 'node:path';
import { bootHost, CACHE_DIR, type Host } from '../bed/bed.ts';
import { BED_FLANNEL_CNI_PLUGIN_IMAGE } from '../bed/addon-images.ts';
import { importKubeceptionImage } from '../bed/kubeception-image.ts';
import { startLoadBalancer } from '../bed/lb.ts';
import { kc, writeConfig, type KcResult } from '../helpers/bed-cli.ts';
import { ADMIN, getJson, waitFor } from '../helpers/cluster.ts';
import { kubeadmCluster } from './kubeadm-cluster.ts';
import { importImageArchives } from '../bed/kubelet.ts';

export interface ConformanceCluster {
  controlPlanes: Host[];
  workers: Host[];
  runner: Host;
  lb?: Host;
  /** Every host this run booted (destroyed at the end unless kept). */
  hosts: Host[];
  /** The registry on the runner: `host:port`. */
  registry: string;
}

const CRANE = join(CACHE_DIR, 'crane', 'v0.22.1', 'bin', 'crane');
const REGISTRY_PORT = 5000;
const log = (m: string) => console.log(`[conformance ${new Date().toISOString().slice(11, 19)}] ${m}`);

/** `--url` and `--ca-cert-hash` of the join command bootstrap printed (whatever form the token takes in it). */
export function joinFlags(stdout: string): string[] {
  const line = stdout.split('\n').find((l) => l.includes('kubeception run join'));
  if (!line) throw new Error(`no join command printed:\n${stdout.slice(-2000)}`);
  const words = line.trim().split(/\s+/);
  const value = (flag: string) => {
    const i = words.indexOf(flag);
    if (i < 0 || !words[i + 1]) throw new Error(`no ${flag} in the printed join command: ${line.replace(/[a-z0-9]{6}\.[a-z0-9]{16}/g, '<token>')}`);
    return words[i + 1]!;
  };
  return ['--url', value('--url'), '--ca-cert-hash', value('--ca-cert-hash')];
}

const must = (r: KcResult, what: string) => {
  if (r.code !== 0) throw new Error(`${what} exited ${r.code}\n${r.stderr.slice(-3000)}\n${r.stdout.slice(-3000)}`);
  return r;
};

/** Imports the archives (images.txt of conformance-images.sh) into a kubelet host's containerd. */
async function importImages(host: Host, archives: readonly string[]): Promise<void> {
  // Two at a time: the hosts import at once, and 2 cores are shared.
  await importImageArchives(host, archives, { parallel: 2, timeoutMs: 600_000 });
}

/** The nodes' containerd asks the runner's registry for registry.k8s.io images (other registries still fail at once). */
async function useRegistry(host: Host, registry: string): Promise<void> {
  await host.writeFile('/etc/containerd/certs.d/registry.k8s.io/hosts.toml', `server = "http://${registry}"\n\n[host."http://${registry}"]\n  capabilities = ["pull", "resolve"]\n  skip_verify = true\n`);
}

/** Starts crane's registry on the runner and pushes every image under its name without `registry.k8s.io/`. */
async function startRegistry(runner: Host, images: readonly { archive: string; refs: string[] }[]): Promise<string> {
  const registry = `${runner.ip}:${REGISTRY_PORT}`;
  await runner.execOk(['mkdir', '-p', '/var/lib/conformance-registry']);
  await runner.execOk(['systemd-run', '--unit=conformance-registry', '--collect', CRANE, 'registry', 'serve', '--address', registry, '--disk', '/var/lib/conformance-registry']);
  await waitFor('the registry answers', 30_000, async () => ((await runner.exec(['curl', '-sf', `http://${registry}/v2/`])).code === 0 ? true : undefined));
  for (const { archive, refs } of images)
    for (const ref of refs.filter((r) => r.startsWith('registry.k8s.io/')))
      await runner.execOk([CRANE, 'push', '--insecure', archive, `${registry}/${ref.slice('registry.k8s.io/'.length)}`], { timeoutMs: 300_000 });
  return registry;
}

/**
 * Boots the hosts and makes the cluster.
 * @param images the conformance image archives with their names (images.txt).
 * @param resultsDir a machine directory, bound read-write at /results in the runner.
 */
export async function makeCluster(opts: { prefix: string; ha: boolean; images: { archive: string; refs: string[] }[]; resultsDir: string; keep?: boolean; peer?: 'kubeadm' }): Promise<ConformanceCluster> {
  const { prefix, ha, images, peer } = opts;
  if (peer && ha) throw new Error('the kubeadm peer is single control-plane only');
  const names = { cps: ha ? [1, 2, 3].map((i) => `${prefix}cp${i}`) : [`${prefix}cp`], workers: [`${prefix}w1`, `${prefix}w2`], runner: `${prefix}run`, lb: `${prefix}lb` };
  const t0 = Date.now();
  // kubeception installs flannel (no CNI on the host); the kubeadm peer uses the bed's bridge CNI.
  const node = (name: string) => bootHost({ name, kubelet: peer ? true : { cni: 'none' }, bootTimeoutMs: 180_000 });
  const settled = await Promise.allSettled([...names.cps.map(node), ...names.workers.map(node), bootHost({ name: names.runner, extraBinds: [{ src: opts.resultsDir, dst: '/results' }] }), ...(ha ? [bootHost({ name: names.lb })] : [])]);
  const booted = settled.flatMap((b) => (b.status === 'fulfilled' ? [b.value] : []));
  const failed = settled.find((b) => b.status === 'rejected');
  if (failed) {
    await Promise.all(booted.map((h) => h.destroy()));
    throw failed.reason;
  }
  try {
    return await setUp(booted, names.cps.length, ha, images, t0, peer);
  } catch (e) {
    if (opts.keep) log(`kept after the failure: ${booted.map((h) => h.name).join(' ')}`);
    else await Promise.all(booted.map((h) => h.destroy()));
    throw e;
  }
}

/** Everything after the boot: images, registry, load balancer, bootstrap, joins, readiness. */
async function setUp(booted: Host[], cpCount: number, ha: boolean, images: { archive: string; refs: string[] }[], t0: number, peer?: 'kubeadm'): Promise<ConformanceCluster> {
  const controlPlanes = booted.slice(0, cpCount);
  const workers = booted.slice(cpCount, cpCount + 2);
  const runner = booted[cpCount + 2]!;
  const lb = ha ? booted[cpCount + 3] : undefined;
  const cluster: ConformanceCluster = { controlPlanes, workers, runner, lb, hosts: booted, registry: '' };
  log(`${booted.length} hosts booted in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  const nodes = [...controlPlanes, ...workers];
  await Promise.all([...(peer ? [] : controlPlanes.map(importKubeceptionImage)), ...nodes.map((h) => importImages(h, images.map((i) => i.archive)))]);
  cluster.registry = await startRegistry(runner, images);
  for (const h of nodes) await useRegistry(h, cluster.registry);
  log(`images imported and pushed to the registry at ${cluster.registry} (${((Date.now() - t0) / 1000).toFixed(0)} s)`);
  if (peer) await kubeadmCluster(controlPlanes[0]!, workers, log);
  else await kubeceptionCluster(controlPlanes, workers, lb, t0);
  const [cp1] = controlPlanes as [Host];
  await waitClusterReady(cp1, nodes.length);
  await runner.writeFile('/root/admin.conf', await cp1.readFile(ADMIN), 0o600);
  log(`cluster ready: ${nodes.length} nodes (${((Date.now() - t0) / 1000).toFixed(0)} s)`);
  return cluster;
}

/**
 * Waits until `nodeCount` Nodes are Ready and CoreDNS has a ready replica (5 min each).
 * @param cp a control-plane host with the admin kubeconfig.
 */
export async function waitClusterReady(cp: Host, nodeCount: number): Promise<void> {
  await waitFor('every node Ready', 300_000, async () => {
    const ns = (await getJson(cp, 'nodes')).items as { status: { conditions: { type: string; status: string }[] } }[];
    return ns.length === nodeCount && ns.every((n) => n.status.conditions.some((c) => c.type === 'Ready' && c.status === 'True')) ? true : undefined;
  });
  await waitFor('CoreDNS ready', 300_000, async () => ((await getJson(cp, 'deployment', '-n', 'kube-system', 'coredns')).status?.readyReplicas >= 1 ? true : undefined));
}

/**
 * kubeception's cluster with its defaults on booted kubelet hosts (`cni: 'none'`; the control planes
 * with the kubeception image imported): bootstrap on the first control plane, the others and the
 * workers joined, each with its own bootstrap token. With `lb`, the control planes sit behind it.
 * @param t0 the run's start (`Date.now()`), for the elapsed times logged.
 * @param say where progress lines go (default: the conformance log).
 */
export async function kubeceptionCluster(controlPlanes: Host[], workers: Host[], lb: Host | undefined, t0: number, say: (m: string) => void = log): Promise<void> {
  const nodes = [...controlPlanes, ...workers];
  const config: Record<string, unknown> = { distro: 'debian', networking: { flannel: { cniPluginImage: BED_FLANNEL_CNI_PLUGIN_IMAGE } } };
  if (lb) {
    await startLoadBalancer(lb, controlPlanes.map((h) => h.ip));
    config.controlPlaneEndpoint = `${lb.ip}:6443`;
  }
  for (const h of nodes) await writeConfig(h, config);
  const [cp1] = controlPlanes as [Host];
  const boot = must(await kc(cp1, ['run', 'bootstrap'], { timeoutMs: 900_000 }), `bootstrap on ${cp1.name}`);
  say(`bootstrap done (${((Date.now() - t0) / 1000).toFixed(0)} s)`);
  const flags = joinFlags(boot.stdout);
  const token = async () => {
    // One bootstrap token per joining node, passed in the environment (never on a command line).
    const t = (await kc(cp1, ['token', 'create'])).stdout.trim();
    if (!/^[a-z0-9]{6}\.[a-z0-9]{16}$/.test(t)) throw new Error('token create printed no token');
    return t;
  };
  for (const [i, cp] of controlPlanes.slice(1).entries()) {
    // The second of three leaves etcd with two voting members until the third joins right after it.
    const force = i === 0 && controlPlanes.length > 2 ? ['--force'] : [];
    const upload = must(await kc(cp1, ['certs', 'upload']), 'certs upload');
    const key = /\b([0-9a-f]{64})\b/.exec(upload.stdout)?.[1];
    if (!key) throw new Error('certs upload printed no certificate key');
    must(await kc(cp, ['run', 'join', ...flags, '--control-plane', ...force, '--wait-for-network'], { timeoutMs: 900_000, env: { KUBECEPTION_TOKEN: await token(), KUBECEPTION_CERTIFICATE_KEY: key } }), `control-plane join of ${cp.name}`);
    say(`${cp.name} joined as a control-plane node`);
  }
  for (const w of workers) {
    must(await kc(w, ['run', 'join', ...flags, '--wait-for-network'], { timeoutMs: 900_000, env: { KUBECEPTION_TOKEN: await token() } }), `join of ${w.name}`);
    say(`${w.name} joined`);
  }
}
