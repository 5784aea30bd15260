/**
 * PKI generation: kubeception's `reconcilePki` (a full PKI into an empty dir: 11 keys — 3 CAs, 7
 * leaves, `sa` — 10 certificates and `sa.pub`, written 0600/0644 with fsync) against the openssl CLI
 * doing the same work from a shell script of `openssl genpkey/req/x509` (same subjects, SANs,
 * extensions, signing structure). Per algorithm: ECDSA-P256, ECDSA-P384, RSA-2048. Prints ms per run
 * and the ratio kubeception/openssl; never asserts on time. Runs are interleaved so load from other
 * processes hits every contender alike; each starts after `sync` (untimed), so no contender's fsyncs
 * pay for another's dirty pages. kubeception runs in this process (modules loaded once, as
 * in `run bootstrap`); the first run, which also compiles the code paths, is shown apart.
 *
 * Two openssl variants: the plain serial script (what a hand-written PKI script does) and one that
 * generates the keys in parallel, like kubeception does on libuv's thread pool.
 *
 * Usage: `npm run bench -- pki [runs]` (default 5 runs per algorithm).
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { RealFiles } from '../lib/host/files.ts';
import { certSpecs, saKeyPairSpec, type CaSpec, type FileLeafSpec } from '../lib/pki/certs.ts';
import { reconcilePki } from '../lib/pki/reconcile.ts';
import type { EncryptionAlgorithm, ResolvedConfig } from '../lib/types.ts';
import { sampleConfig } from '../test/unit/pki/fixtures.ts';

const exec = promisify(execFile);
const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
const subj = (o: readonly string[], cn: string) => q([...o.map((x) => `/O=${x}`), `/CN=${cn}`].join(''));
const GENPKEY: Partial<Record<EncryptionAlgorithm, string>> = {
  'RSA-2048': '-algorithm RSA -pkeyopt rsa_keygen_bits:2048',
  'ECDSA-P256': '-algorithm EC -pkeyopt ec_paramgen_curve:P-256',
  'ECDSA-P384': '-algorithm EC -pkeyopt ec_paramgen_curve:P-384',
};
const ALGORITHMS = Object.keys(GENPKEY) as EncryptionAlgorithm[];
const genkey = (alg: EncryptionAlgorithm, path: string) => `openssl genpkey -quiet ${GENPKEY[alg]} -out ${q(path)}`;
const digest = (alg: EncryptionAlgorithm) => (alg === 'ECDSA-P384' ? '-sha384' : '-sha256');

function caCommands(s: CaSpec, alg: EncryptionAlgorithm): string[] {
  return [
    `openssl req -x509 -new -key ${q(s.keyPath)} ${digest(alg)} -days ${s.validityDays} -subj ${subj([], s.commonName)} ` +
      `-addext 'basicConstraints=critical,CA:TRUE' -addext 'keyUsage=critical,digitalSignature,${alg.startsWith('RSA') ? 'keyEncipherment,' : ''}keyCertSign' -out ${q(s.certPath)}`,
  ];
}

function leafCommands(s: FileLeafSpec, ca: CaSpec, alg: EncryptionAlgorithm): string[] {
  const sans = [...s.altNames.dnsNames.map((d) => `DNS:${d}`), ...s.altNames.ipAddresses.map((i) => `IP:${i}`)];
  const ext = [
    'basicConstraints=critical,CA:FALSE', `keyUsage=critical,digitalSignature${alg.startsWith('RSA') ? ',keyEncipherment' : ''}`, `extendedKeyUsage=${s.usages.join(',')}`,
    ...(sans.length ? [`subjectAltName=${sans.join(',')}`] : []), 'subjectKeyIdentifier=hash', 'authorityKeyIdentifier=keyid',
  ].join('\n');
  const csr = `${s.certPath}.csr`;
  const extFile = `${s.certPath}.ext`;
  return [
    `printf '%s\\n' ${q(ext)} > ${q(extFile)}`,
    `openssl req -new -key ${q(s.keyPath)} -subj ${subj(s.organizations, s.commonName)} -out ${q(csr)}`,
    `openssl x509 -req -in ${q(csr)} -CA ${q(ca.certPath)} -CAkey ${q(ca.keyPath)} -set_serial 0x${randomBytes(16).toString('hex')} ` +
      `-days ${s.validityDays} ${digest(alg)} -extfile ${q(extFile)} -out ${q(s.certPath)} 2>/dev/null`,
  ];
}

/** The shell script: keys (serially, or all at once with `&` + `wait`), then certificates in table order. */
export function opensslScript(config: ResolvedConfig, parallelKeys: boolean): string {
  const alg = config.encryptionAlgorithm;
  const specs = certSpecs(config);
  const sa = saKeyPairSpec(config);
  const cas = new Map(specs.filter((s): s is CaSpec => s.kind === 'ca').map((s) => [s.name, s]));
  const keys = [...specs.map((s) => s.keyPath), sa.keyPath].map((p) => genkey(alg, p));
  const certs = specs.flatMap((s) => (s.kind === 'ca' ? caCommands(s, alg) : leafCommands(s, cas.get(s.caName)!, alg)));
  return [
    'set -e',
    `mkdir -p ${q(join(config.certificatesDir, 'etcd'))}`,
    ...(parallelKeys ? [...keys.map((k) => `${k} &`), 'wait'] : keys),
    ...certs,
    `openssl pkey -in ${q(sa.keyPath)} -pubout -out ${q(sa.publicKeyPath)}`,
  ].join('\n');
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

/** Every leaf the openssl script made must verify: the peer did the real work. */
async function checkOpenssl(config: ResolvedConfig): Promise<void> {
  for (const s of certSpecs(config)) {
    if (s.kind !== 'leaf') continue;
    await exec('openssl', ['verify', '-CAfile', join(config.certificatesDir, `${s.caName}.crt`), s.certPath]);
  }
}

type Kind = 'kubeception' | 'openssl' | 'openssl-parallel';
const KINDS: readonly Kind[] = ['kubeception', 'openssl', 'openssl-parallel'];

/** One run of one contender into a fresh temp dir. @returns milliseconds. */
async function oneRun(kind: Kind, alg: EncryptionAlgorithm): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), `bench-pki-${kind}-`));
  // Flush other runs' dirty pages first: kubeception fsyncs each file, and on ext4 its first fsync
  // would otherwise also commit the previous contender's writes and removals.
  await exec('sync');
  try {
    const config = sampleConfig({ certificatesDir: dir, encryptionAlgorithm: alg });
    if (kind === 'kubeception') return await timed(() => reconcilePki(config, new RealFiles()));
    const script = join(dir, 'pki.sh');
    await writeFile(script, opensslScript(config, kind === 'openssl-parallel'));
    const ms = await timed(() => exec('sh', [script]));
    await checkOpenssl(config);
    return ms;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const ms = (x: number) => `${x.toFixed(x < 100 ? 1 : 0)} ms`;

/** Runs each algorithm: one warm-up kubeception run, then `runs` interleaved runs per contender; prints medians and ratios. */
export async function runPkiBench(runs = 5): Promise<void> {
  const spec = certSpecs(sampleConfig());
  console.log(`PKI generation: ${spec.length + 1} keys, ${spec.length} certificates + sa.pub, written with fsync; ${runs} runs each (median), ${cpus().length} CPUs`);
  const rows: string[][] = [];
  for (const alg of ALGORITHMS) {
    const first = await oneRun('kubeception', alg);
    const times: Record<Kind, number[]> = { kubeception: [], openssl: [], 'openssl-parallel': [] };
    for (let i = 0; i < runs; i++) for (const k of KINDS) times[k].push(await oneRun(k, alg));
    const [kc, serial, parallel] = KINDS.map((k) => median(times[k]));
    console.log(`\n${alg}`);
    console.log(`  kubeception (@peculiar/asn1-x509 + node:crypto)  median ${ms(kc!)}  [${times.kubeception.map(ms).join(', ')}]  first run in this process ${ms(first)}`);
    console.log(`  openssl CLI, serial script                        median ${ms(serial!)}  [${times.openssl.map(ms).join(', ')}]`);
    console.log(`  openssl CLI, keys in parallel                     median ${ms(parallel!)}  [${times['openssl-parallel'].map(ms).join(', ')}]`);
    rows.push([alg, ms(kc!), ms(serial!), (kc! / serial!).toFixed(2), (kc! / parallel!).toFixed(2)]);
  }
  console.log('\nsummary (medians; ratio = kubeception / openssl script in this run)');
  console.log(`  ${'algorithm'.padEnd(12)} ${'kubeception'.padStart(12)} ${'openssl'.padStart(12)} ${'ratio'.padStart(7)} ${'ratio (parallel keys)'.padStart(22)}`);
  for (const r of rows) console.log(`  ${r[0]!.padEnd(12)} ${r[1]!.padStart(12)} ${r[2]!.padStart(12)} ${r[3]!.padStart(7)} ${r[4]!.padStart(22)}`);
  console.log('  (RSA key generation dominates RSA runs and varies run to run: primes are random)');
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await runPkiBench(Number(process.argv[2] ?? 5) || 5);
}
