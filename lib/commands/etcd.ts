/**
 * `kubeception etcd snapshot save|list|delete NAME|verify NAME [--output json]` on a control-plane
 * node (lib/etcd/snapshot-bundle.ts). Text is a line per snapshot; `--output json` one JSON object
 * per line (a `list` item or the metadata of the snapshot saved or verified). The snapshot key is
 * never printed: its bytes are registered with the redactor before any output.
 * @see https://docs.k3s.io/cli/etcd-snapshot (k3s's `etcd-snapshot save|ls|delete`)
 */
import { ExitCode, InputError } from '../errors.ts';
import { RealFiles } from '../host/files.ts';
import { RealShell } from '../host/sh.ts';
import { deleteSnapshot, listSnapshots, saveSnapshot, verifySnapshot, type SnapshotHost } from '../etcd/snapshot-bundle.ts';
import type { SnapshotMetadata } from '../etcd/snapshot-meta.ts';
import type { CliIO } from '../cli-io.ts';
import type { ResolvedConfig } from '../types.ts';

type Args = Record<string, unknown> & { _: string[] };
type IO = Pick<CliIO, 'stdout' | 'stderr'>;

const SUBCOMMANDS = 'use `kubeception etcd snapshot save`, `… list`, `… verify NAME` or `… delete NAME` (add --output json for JSON)';

/** `1.2 MB`-style size (powers of 1000, as etcd prints). */
export function humanBytes(n: number): string {
  if (n < 1000) return `${n} B`;
  const units = ['kB', 'MB', 'GB', 'TB'];
  let v = n;
  let i = -1;
  while (v >= 1000 && i < units.length - 1) {
    v /= 1000;
    i++;
  }
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}

const summary = (m: SnapshotMetadata) => `revision ${m.etcd.revision}, ${m.verify.keyCount} keys, ${humanBytes(m.parts.db.bytes + m.parts.pki.bytes)}`;

/** `kubeception etcd <sub> …`. @returns the exit code. @throws InputError `usage` for an unknown subcommand. */
export async function etcdCommand(args: Args, config: ResolvedConfig, io: IO, redactor: { add(s: string): void }): Promise<number> {
  const [group, sub, name] = [args._[1], args._[2], args._[3]];
  if (group !== 'snapshot') throw new InputError('usage', { what: `etcd ${group ?? ''}`.trim(), why: 'etcd has the commands snapshot and restore', fix: `${SUBCOMMANDS}; or \`kubeception etcd restore NAME\`` });
  const json = args.output === 'json';
  const h: SnapshotHost = { config, files: new RealFiles(), sh: new RealShell() };
  // The key is never printed; should any message carry it, the redactor hides it.
  const { readFile } = await import('node:fs/promises');
  const hideKey = async () => {
    const text = await readFile(config.etcd.snapshots.keyFile, 'utf8').catch(() => undefined);
    if (text?.trim()) redactor.add(text.trim());
  };
  await hideKey();
  if (sub === 'save') {
    if (name !== undefined) throw new InputError('usage', { what: 'etcd snapshot save', why: `it takes no argument ("${name}")`, fix: 'names are made from the node and the time: run `kubeception etcd snapshot save`' });
    const started = Date.now();
    const r = await saveSnapshot(h);
    if (r.keyCreated) await hideKey();
    const ms = Date.now() - started;
    if (json) io.stdout(`${JSON.stringify({ event: 'snapshot-saved', path: r.path, durationMs: ms, pruned: r.pruned, keyCreated: r.keyCreated, snapshot: r.meta })}\n`);
    else {
      io.stdout(`saved ${r.path} (${summary(r.meta)}; test restore ${r.meta.verify.durationMs} ms; ${ms} ms in all)\n`);
      if (r.pruned.length) io.stdout(`pruned (retention ${config.etcd.snapshots.retention}): ${r.pruned.join(', ')}\n`);
    }
    if (r.keyCreated) io.stderr(`note: created the snapshot key ${config.etcd.snapshots.keyFile} (0600): copy it off this host, a restore needs it\n`);
    return ExitCode.ok;
  }
  if (sub === 'list') {
    const items = await listSnapshots(h);
    if (json) {
      for (const s of items) io.stdout(`${JSON.stringify('meta' in s ? { name: s.name, path: s.path, nodeName: s.meta.nodeName, created: s.meta.created, bytes: s.meta.parts.db.bytes + s.meta.parts.pki.bytes, revision: s.meta.etcd.revision, keyCount: s.meta.verify.keyCount, verified: s.meta.verify.at } : { name: s.name, path: s.path, error: s.error })}\n`);
      return ExitCode.ok;
    }
    io.stdout(`${'NAME'.padEnd(52)}${'CREATED'.padEnd(22)}${'SIZE'.padEnd(10)}${'REVISION'.padEnd(10)}${'KEYS'.padEnd(8)}VERIFIED\n`);
    for (const s of items)
      io.stdout('meta' in s ? `${s.name.padEnd(52)}${s.meta.created.replace(/\.\d{3}Z$/, 'Z').padEnd(22)}${humanBytes(s.meta.parts.db.bytes + s.meta.parts.pki.bytes).padEnd(10)}${String(s.meta.etcd.revision).padEnd(10)}${String(s.meta.verify.keyCount).padEnd(8)}${s.meta.verify.at.replace(/\.\d{3}Z$/, 'Z')}\n` : `${s.name.padEnd(52)}unreadable: ${s.error}\n`);
    return ExitCode.ok;
  }
  if (sub === 'delete') {
    const path = await deleteSnapshot(h, name);
    io.stdout(json ? `${JSON.stringify({ event: 'snapshot-deleted', name, path })}\n` : `deleted ${path}\n`);
    return ExitCode.ok;
  }
  if (sub === 'verify') {
    const m = await verifySnapshot(h, name);
    io.stdout(json ? `${JSON.stringify({ event: 'snapshot-verified', snapshot: m })}\n` : `verified ${m.name}: sha256 of etcd.db and pki.enc as recorded, PKI opens with the key, test restore by ${m.verify.tool} serves ${summary(m)} (${m.verify.durationMs} ms)\n`);
    return ExitCode.ok;
  }
  throw new InputError('usage', { what: `etcd snapshot ${sub ?? ''}`.trim(), why: sub ? `unknown subcommand "${sub}"` : 'a subcommand is needed', fix: SUBCOMMANDS });
}
