/**
 * The `certs` phase: reconcile the PKI under `certificatesDir` with the certificate table. Reads
 * everything, decides everything (generating keys and certificates in memory), and only then
 * writes, so a refused run (a CA without its key, an unreadable key, a bad SAN) changes nothing.
 *
 * Rules — never lose data: a valid file is kept; a leaf that differs from its spec, does not chain
 * to the current CA, does not match its key or expires within `certificateRenewalWindow` (default 90 days) is re-issued for its existing
 * key; a CA certificate and any key that exists are never replaced; a missing CA is created.
 *
 * Host effects: writes through {@link HostFiles.write} (atomic): keys mode 0600, certificates and
 * `sa.pub` 0644, parent directories 0755, every file root:root (CIS 1.1.19: etcd, which runs as
 * `distro.etcdUser`, gets its two keys from systemd as credentials, see lib/etcd/config.ts; a key a
 * previous version gave to that user is given back to root). Unchanged files are not rewritten.
 * @see kubernetes/cmd/kubeadm/app/phases/certs/certs.go
 * @see https://kubernetes.io/docs/setup/best-practices/certificates/
 */
import type { HostFiles, WriteOptions } from '../host/files.ts';
import type { ResolvedConfig } from '../types.ts';
import { reconcileCa, reconcileSa } from './ca.ts';
import { certSpecs, saKeyPairSpec, type CaName, type CaSpec, type FileLeafSpec } from './certs.ts';
import { assertSupportedAlgorithm } from './keys.ts';
import { reconcileLeaf, type CaMaterial, type PkiAction, type ReconcileOptions } from './leaf.ts';

export { reconcileLeaf, type CaMaterial, type LeafResult, type PkiAction, type ReconcileOptions } from './leaf.ts';

/** One line of the report: a certificate (kubeadm name) or `sa`. */
export interface PkiReportEntry {
  name: string;
  action: PkiAction;
  /** Why, for the user; mentions files whose mode was corrected. Never key material. */
  reason: string;
}

/** What {@link reconcilePki} did. */
export interface PkiReport {
  /** In table order (CAs before their leaves), `sa` last. */
  entries: PkiReportEntry[];
  /** Absolute paths actually written (content or mode changed). Empty on a no-op run. */
  written: string[];
}

/** Options of {@link reconcilePki}. */
export type ReconcilePkiOptions = ReconcileOptions;


interface PlannedFile {
  path: string;
  data: string;
  opts: WriteOptions;
}

interface Planned {
  entry: PkiReportEntry;
  files: PlannedFile[];
}

const KEY_MODE = 0o600;
const CERT_MODE = 0o644;

function pairFiles(certPath: string, certPem: string, keyPath: string, keyPem: string): PlannedFile[] {
  return [
    { path: keyPath, data: keyPem, opts: { mode: KEY_MODE } },
    { path: certPath, data: certPem, opts: { mode: CERT_MODE } },
  ];
}

/** Reads through `files`, remembering what each path held, to tell mode fixes from new content. */
class Reader {
  readonly seen = new Map<string, string>();
  constructor(private readonly files: HostFiles) {}

  async read(path: string): Promise<string | undefined> {
    const text = await this.files.read(path);
    if (text !== undefined) this.seen.set(path, text);
    return text;
  }

  async pair(certPath: string, keyPath: string): Promise<{ certPem?: string; keyPem?: string }> {
    const [certPem, keyPem] = await Promise.all([this.read(certPath), this.read(keyPath)]);
    return { ...(certPem !== undefined && { certPem }), ...(keyPem !== undefined && { keyPem }) };
  }
}

async function planCas(specs: CaSpec[], config: ResolvedConfig, files: Reader, opts: ReconcileOptions) {
  const cas = new Map<CaName, CaMaterial>();
  const planned = await Promise.all(
    specs.map(async (spec): Promise<Planned> => {
      const r = await reconcileCa(spec, await files.pair(spec.certPath, spec.keyPath), config, opts);
      cas.set(spec.name, r);
      return { entry: { name: spec.name, action: r.action, reason: r.reason }, files: pairFiles(spec.certPath, r.certPem, spec.keyPath, r.keyPem) };
    }),
  );
  return { cas, planned };
}

async function planLeaf(spec: FileLeafSpec, ca: CaMaterial, config: ResolvedConfig, files: Reader, opts: ReconcileOptions): Promise<Planned> {
  const { certPath, keyPath } = spec;
  const r = await reconcileLeaf(spec, await files.pair(certPath, keyPath), ca, config, opts);
  return { entry: { name: spec.name, action: r.action, reason: r.reason }, files: pairFiles(certPath, r.certPem, keyPath, r.keyPem) };
}

async function planSa(config: ResolvedConfig, files: Reader): Promise<Planned> {
  const spec = saKeyPairSpec(config);
  const [keyPem, publicKeyPem] = await Promise.all([files.read(spec.keyPath), files.read(spec.publicKeyPath)]);
  const r = await reconcileSa(spec, { ...(keyPem !== undefined && { keyPem }), ...(publicKeyPem !== undefined && { publicKeyPem }) }, config);
  return {
    entry: { name: spec.name, action: r.action, reason: r.reason },
    files: [
      { path: spec.keyPath, data: r.keyPem, opts: { mode: KEY_MODE } },
      { path: spec.publicKeyPath, data: r.publicKeyPem, opts: { mode: CERT_MODE } },
    ],
  };
}

/** Writes one plan's files in order; notes mode-only rewrites in its reason. @returns the paths written. */
async function writePlan(plan: Planned, files: HostFiles, reader: Reader): Promise<string[]> {
  const written: string[] = [];
  const fixedModes: string[] = [];
  for (const f of plan.files) {
    if (!(await files.write(f.path, f.data, f.opts))) continue;
    written.push(f.path);
    if (reader.seen.get(f.path) === f.data) fixedModes.push(f.path);
  }
  if (fixedModes.length) plan.entry.reason += `; rewrote ${fixedModes.join(', ')} with the expected mode and owner`;
  return written;
}

/**
 * Reconciles every CA, leaf and the `sa` key pair of {@link certSpecs} under
 * `config.certificatesDir`. Idempotent: a second run keeps everything and writes nothing.
 * Under `--dry-run` pass a `DryRunFiles`: the report is the same, writes are only recorded.
 * @returns per certificate the action and reason, and the paths written.
 * @throws PkiError (bad input, before any write): `pki-unsupported-algorithm`, `pki-invalid-san`,
 * `pki-ca-key-missing`, `pki-ca-key-mismatch`, `pki-not-a-ca`, `pki-bad-key`, `pki-bad-cert` (a CA),
 * `pki-sa-mismatch`; `pki-sign` if OpenSSL fails to sign.
 */
export async function reconcilePki(config: ResolvedConfig, files: HostFiles, opts: ReconcilePkiOptions = {}): Promise<PkiReport> {
  assertSupportedAlgorithm(config.encryptionAlgorithm);
  const specs = certSpecs(config);
  const reader = new Reader(files);
  const caSpecs = specs.filter((s): s is CaSpec => s.kind === 'ca');
  const { cas, planned: caPlans } = await planCas(caSpecs, config, reader, opts);
  const leafPlans = await Promise.all(
    specs.filter((s): s is FileLeafSpec => s.kind === 'leaf').map((s) => planLeaf(s, cas.get(s.caName)!, config, reader, opts)),
  );
  const saPlan = await planSa(config, reader);
  const byName = new Map([...caPlans, ...leafPlans, saPlan].map((p) => [p.entry.name, p]));
  const ordered = [...specs.map((s) => byName.get(s.name)!), saPlan];

  // Pairs are written concurrently (each write is atomic and fsynced); within a pair the key goes
  // first, so a crash never leaves a certificate whose key is missing.
  const writtenPerPlan = await Promise.all(ordered.map((plan) => writePlan(plan, files, reader)));
  return { entries: ordered.map((p) => p.entry), written: writtenPerPlan.flat() };
}
