/**
 * Snapshot time and size on the bed (issue 27): a kubeception control plane with `SNAPSHOT_OBJECTS`
 * (default 10,000) ConfigMaps of 512 bytes of data each, then `ROUNDS` (default 3) interleaved rounds of
 * `kubeception etcd snapshot save` (etcdctl's snapshot, the PKI bundle encrypted, the hashes and a
 * test restore read by a throw-away etcd, the metadata written, pruning), `kubeception etcd snapshot
 * verify NAME` (the hashes and the test restore again) and, as the peer, plain
 * `etcdctl snapshot save` of the same member with the same client certificate. Prints each run and
 * the medians, the sizes and the ratios; asserts nothing about time.
 *
 * Usage (root): `npm run bench -- snapshot`. Host name `$BENCH_PREFIX-snap` (default prefix `bench`).
 * Each side's time is the wall time of its process inside the host (`node` start to exit for
 * kubeception, so the CLI's own start-up is included; etcdctl's for the peer).
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { bootHost, type Host, REPO_ROOT } from '../test/bed/bed.ts';
import { importKubeceptionImage } from '../test/bed/kubeception-image.ts';
import { kc, writeConfig } from '../test/helpers/bed-cli.ts';
import { quantile } from './scale-report.ts';

const prefix = process.env.BENCH_PREFIX ?? 'bench';
const OBJECTS = Number(process.env.SNAPSHOT_OBJECTS ?? 10_000);
const ROUNDS = Number(process.env.SNAPSHOT_ROUNDS ?? 3);
const CHUNK = 500;
const ADMIN = '/etc/kubernetes/admin.conf';
const PKI = '/etc/kubernetes/pki/etcd';
const s = (ms: number) => (ms / 1000).toFixed(2);
const mb = (b: number) => `${(b / 1e6).toFixed(1)} MB`;

/** Creates `n` ConfigMaps `bench-<i>` in namespace `bench` (512 bytes of data each), `CHUNK` per `kubectl create`. */
async function fill(host: Host, n: number): Promise<number> {
  const t0 = Date.now();
  await host.exec(['kubectl', `--kubeconfig=${ADMIN}`, 'create', 'namespace', 'bench']);
  const data = 'x'.repeat(512);
  for (let i = 0; i < n; i += CHUNK) {
    const items = [];
    for (let j = i; j < Math.min(n, i + CHUNK); j++) items.push({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `bench-${j}`, namespace: 'bench' }, data: { d: data } });
    const file = `/root/bench-${i}.json`;
    await host.writeFile(file, JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));
    const r = await host.exec(['kubectl', `--kubeconfig=${ADMIN}`, 'create', '-o', 'name', '-f', file], { timeoutMs: 300_000 });
    if (r.code !== 0) throw new Error(`kubectl create (objects ${i}…) exited ${r.code}: ${r.stderr.slice(-2000)}`);
    await host.exec(['rm', '-f', file]);
  }
  return Date.now() - t0;
}

/** Runs `argv` in the host and returns its wall time in ms. @throws when it exits non-zero. */
async function timed(host: Host, argv: string[], what: string): Promise<{ ms: number; stdout: string }> {
  const t0 = Date.now();
  const r = await host.exec(argv, { timeoutMs: 600_000, cwd: '/root/site' });
  const ms = Date.now() - t0;
  if (r.code !== 0) throw new Error(`${what} exited ${r.code}: ${r.stderr.slice(-2000)}`);
  return { ms, stdout: r.stdout };
}

execFileSync(process.execPath, [join(REPO_ROOT, 'scripts', 'build.mjs')], { stdio: 'inherit' });
const KC = join(REPO_ROOT, 'bin', 'kubeception.js');
let host: Host | undefined;
try {
  host = await bootHost({ name: `${prefix}-snap`, kubelet: true });
  await importKubeceptionImage(host);
  // Retention above the rounds: no save prunes a snapshot a later verify reads.
  await writeConfig(host, { distro: 'debian', networking: { plugin: 'none' }, etcd: { snapshots: { retention: ROUNDS + 2 } } });
  const b = await kc(host, ['run', 'bootstrap'], { timeoutMs: 900_000 });
  if (b.code !== 0) throw new Error(`bootstrap exited ${b.code}\n${b.stderr}`);
  const fillMs = await fill(host, OBJECTS);
  console.log(`created ${OBJECTS} ConfigMaps of 512 B in ${s(fillMs)} s`);
  const rows: { save: number; testRestore: number; verify: number; etcdctl: number; bytes: number; pki: number; keys: number; etcdctlBytes: number }[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const save = await timed(host, ['node', KC, 'etcd', 'snapshot', 'save', '--output', 'json'], 'kubeception etcd snapshot save');
    const ev = JSON.parse(save.stdout.trim().split('\n').pop()!);
    const name = String(ev.path).split('/').pop()!;
    const verify = await timed(host, ['node', KC, 'etcd', 'snapshot', 'verify', name, '--output', 'json'], 'kubeception etcd snapshot verify');
    const peerFile = `/root/etcdctl-${i}.db`;
    const peer = await timed(host, ['env', 'ETCDCTL_API=3', 'etcdctl', '--endpoints=https://127.0.0.1:2379', `--cacert=${PKI}/ca.crt`, `--cert=${PKI}/healthcheck-client.crt`, `--key=${PKI}/healthcheck-client.key`, 'snapshot', 'save', peerFile], 'etcdctl snapshot save');
    const size = Number((await host.exec(['stat', '-c', '%s', peerFile])).stdout.trim());
    await host.exec(['rm', '-f', peerFile]);
    const m = ev.snapshot;
    rows.push({ save: save.ms, testRestore: m.verify.durationMs, verify: verify.ms, etcdctl: peer.ms, bytes: m.parts.db.bytes, pki: m.parts.pki.bytes, keys: m.verify.keyCount, etcdctlBytes: size });
    console.log(`round ${i + 1}: save ${s(save.ms)} s (test restore ${s(m.verify.durationMs)} s), verify ${s(verify.ms)} s, etcdctl snapshot save ${s(peer.ms)} s; db ${mb(m.parts.db.bytes)}, pki part ${m.parts.pki.bytes} B, ${m.verify.keyCount} keys; etcdctl's file ${mb(size)}`);
  }
  const med = (k: keyof (typeof rows)[number]) => quantile(rows.map((r) => r[k]), 0.5);
  console.log(`\netcd snapshot of a cluster with ${OBJECTS} ConfigMaps (512 B each), ${ROUNDS} interleaved rounds on one bed host (2 cores), medians`);
  console.log(`  kubeception etcd snapshot save (with its test restore)   ${s(med('save'))} s   (test restore ${s(med('testRestore'))} s of it)`);
  console.log(`  kubeception etcd snapshot verify                         ${s(med('verify'))} s`);
  console.log(`  etcdctl snapshot save                                    ${s(med('etcdctl'))} s`);
  console.log(`  size: kubeception ${mb(med('bytes'))} etcd part + ${med('pki')} B encrypted PKI part; etcdctl ${mb(med('etcdctlBytes'))}`);
  console.log(`  ratio save / etcdctl ${(med('save') / med('etcdctl')).toFixed(2)}, (save + verify) / etcdctl ${((med('save') + med('verify')) / med('etcdctl')).toFixed(2)}, size ${((med('bytes') + med('pki')) / med('etcdctlBytes')).toFixed(3)}`);
  console.log('  note: kubeception\'s save is etcdctl\'s save plus the encrypted PKI part, the hashes, a test restore read by a throw-away etcd (key count, revision) and the metadata.');
} finally {
  await host?.destroy();
}
