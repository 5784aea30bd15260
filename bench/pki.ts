/**
 * PKI generation: kubeception's `reconcilePki` against the openssl CLI doing the same work — the
 * same 11 RSA-2048 keys (3 CAs, 7 leaves, `sa`), 10 certificates with the same subjects, SANs,
 * extensions and signing structure, and `sa.pub`, from a shell script of `openssl genpkey/req/x509`.
 * Prints seconds per run and the ratio kubeception/openssl; never asserts on time. Runs are
 * interleaved so load from other processes hits every contender alike.
 *
 * Two openssl variants: the plain serial script (what a hand-written PKI script does) and one that
 * generates the keys in parallel, like kubeception does on libuv's thread pool.
 *
 * Usage: `npx tsx bench/pki.ts [runs]` (default 3 runs).
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
import { SUPPORTED_ALGORITHMS } from '../lib/pki/keys.ts';
import { reconcilePki } from '../lib/pki/reconcile.ts';
import type { ResolvedConfig } from '../lib/types.ts';
import { sampleConfig } from '../test/unit/pki/fixtures.ts';

const exec = promisify(execFile);
const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
const subj = (o: readonly string[], cn: string) => q([...o.map((x) => `/O=${x}`), `/CN=${cn}`].join(''));
const genkey = (path: string) => `openssl genpkey -quiet -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out ${q(path)}`;

function caCommands(s: CaSpec): string[] {
  return [
    `openssl req -x509 -new -key ${q(s.keyPath)} -sha256 -days ${s.validityDays} -subj ${subj([], s.commonName)} ` +
      `-addext 'basicConstraints=critical,CA:TRUE' -addext 'keyUsage=critical,digitalSignature,keyEncipherment,keyCertSign' -out ${q(s.certPath)}`,
  ];
}

function leafCommands(s: FileLeafSpec, ca: CaSpec): string[] {
  const sans = [...s.altNames.dnsNames.map((d) => `DNS:${d}`), ...s.altNames.ipAddresses.map((i) => `IP:${i}`)];
  const ext = [
    'basicConstraints=critical,CA:FALSE', 'keyUsage=critical,digitalSignature,keyEncipherment', `extendedKeyUsage=${s.usages.join(',')}`,
    ...(sans.length ? [`subjectAltName=${sans.join(',')}`] : []), 'subjectKeyIdentifier=hash', 'authorityKeyIdentifier=keyid',
  ].join('\n');
  const csr = `${s.certPath}.csr`;
  const extFile = `${s.certPath}.ext`;
  return [
    `printf '%s\\n' ${q(ext)} > ${q(extFile)}`,
    `openssl req -new -key ${q(s.keyPath)} -subj ${subj(s.organizations, s.commonName)} -out ${q(csr)}`,
    `openssl x509 -req -in ${q(csr)} -CA ${q(ca.certPath)} -CAkey ${q(ca.keyPath)} -set_serial 0x${randomBytes(16).toString('hex')} ` +
      `-days ${s.validityDays} -sha256 -extfile ${q(extFile)} -out ${q(s.certPath)} 2>/dev/null`,
  ];
}

/** The shell script: keys (serially, or all at once with `&` + `wait`), then certificates in table order. */
export function opensslScript(config: ResolvedConfig, parallelKeys: boolean): string {
  const specs = certSpecs(config);
  const sa = saKeyPairSpec(config);
  const cas = new Map(specs.filter((s): s is CaSpec => s.kind === 'ca').map((s) => [s.name, s]));
  const keys = [...specs.map((s) => s.keyPath), sa.keyPath].map(genkey);
  const certs = specs.flatMap((s) => (s.kind === 'ca' ? caCommands(s) : leafCommands(s, cas.get(s.caName)!)));
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
  return (performance.now() - t0) / 1000;
}

/** Every leaf the openssl script made must verify: the peer did the real work. */
async function checkOpenssl(config: ResolvedConfig): Promise<void> {
  for (const s of certSpecs(config)) {
    if (s.kind !== 'leaf') continue;
    await exec('openssl', ['verify', '-CAfile', join(config.certificatesDir, `${s.caName}.crt`), s.certPath]);
  }
}

async function oneRun(kind: 'kubeception' | 'openssl' | 'openssl-parallel'): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), `bench-pki-${kind}-`));
  try {
    const config = sampleConfig({ certificatesDir: dir });
    if (kind === 'kubeception') return await timed(() => reconcilePki(config, new RealFiles()));
    const script = join(dir, 'pki.sh');
    await writeFile(script, opensslScript(config, kind === 'openssl-parallel'));
    const s = await timed(() => exec('sh', [script]));
    await checkOpenssl(config);
    return s;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Runs the benchmark `runs` times per contender (interleaved) and prints the results. */
export async function runPkiBench(runs = 3): Promise<void> {
  const kinds = ['kubeception', 'openssl', 'openssl-parallel'] as const;
  const times: Record<(typeof kinds)[number], number[]> = { kubeception: [], openssl: [], 'openssl-parallel': [] };
  for (let i = 0; i < runs; i++) for (const k of kinds) times[k].push(await oneRun(k));
  const fmt = (xs: number[]) => `mean ${mean(xs).toFixed(2)} s, median ${median(xs).toFixed(2)} s  [${xs.map((x) => x.toFixed(2)).join(' ')}]`;
  const spec = certSpecs(sampleConfig());
  console.log(`PKI generation, RSA-2048: ${spec.length + 1} keys, ${spec.length} certificates + sa.pub; ${runs} runs each, ${cpus().length} CPUs`);
  console.log(`  kubeception (node-forge + node:crypto)  ${fmt(times.kubeception)}`);
  console.log(`  openssl CLI, serial script              ${fmt(times.openssl)}`);
  console.log(`  openssl CLI, keys in parallel           ${fmt(times['openssl-parallel'])}`);
  console.log(`  ratio kubeception/openssl (serial):   ${(mean(times.kubeception) / mean(times.openssl)).toFixed(2)}`);
  console.log(`  ratio kubeception/openssl (parallel): ${(mean(times.kubeception) / mean(times['openssl-parallel'])).toFixed(2)}`);
  console.log(`  (RSA key generation dominates and its time varies run to run: primes are random)`);
  console.log(`ECDSA-P256: unsupported — node-forge cannot put an ECDSA key into a certificate; supported: ${SUPPORTED_ALGORITHMS.join(', ')}`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await runPkiBench(Number(process.argv[2] ?? 3) || 3);
}
