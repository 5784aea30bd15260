/**
 * The test restore of a snapshot: `etcdutl snapshot restore` (etcdctl's on etcd ≤ 3.5) into a scratch
 * directory, read by a throw-away etcd on loopback (plain HTTP, two free ports picked at random) that
 * is asked for its live key count and revision through its JSON gateway; then the etcd is stopped and
 * the scratch directory removed, whatever happened. The restore checks the sha256 etcdctl appends to
 * every snapshot, so a truncated or altered file fails there.
 *
 * Host effects: `<scratchParent>/.verify-XXXXXX/` (0700) and a child etcd process for about a second;
 * both gone when it returns or throws. Nothing else on the host changes.
 * @see https://etcd.io/docs/v3.6/op-guide/recovery/#restoring-a-cluster
 */
import { promises as fs } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { KubeceptionError, SnapshotError } from '../errors.ts';
import { startProcess, type RunningProcess, type Shell } from '../host/sh.ts';
import { postHttp } from '../net/probe.ts';
import { pollUntil } from '../util/poll.ts';
import { lastLine, type SnapshotTools } from './snapshot.ts';
import type { VerifyResult } from './snapshot-meta.ts';

/** How long the throw-away etcd may take to serve (it took about a second on the bed). */
export const TEST_RESTORE_TIMEOUT_MS = 60_000;
const MEMBER = 'kubeception-verify';
/** A range over every key, count only (`key` and `range_end` "\0": from the first key to the end). */
const COUNT_ALL = JSON.stringify({ key: 'AA==', range_end: 'AA==', count_only: true });

/** A free TCP port on 127.0.0.1 (bound, read, released). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => (a && typeof a === 'object' ? resolve(a.port) : reject(new Error('no port'))));
    });
  });
}

/** Revision and live key count from a range answer (proto3 JSON: int64 as strings, zero values left out). */
export function parseRangeCount(body: string): { revision: number; keyCount: number } | undefined {
  try {
    const j = JSON.parse(body) as { header?: { revision?: string }; count?: string };
    const revision = Number(j.header?.revision ?? Number.NaN);
    const keyCount = Number(j.count ?? 0);
    return Number.isSafeInteger(revision) && Number.isSafeInteger(keyCount) ? { revision, keyCount } : undefined;
  } catch {
    return undefined;
  }
}

/** What a test restore needs. */
export interface TestRestore {
  sh: Shell;
  tools: SnapshotTools;
  /** The etcd binary (the distro's). */
  etcd: string;
  /** The snapshot file (`etcdctl snapshot save` output). */
  db: string;
  /** Directory the scratch directory is made in (on the same disk as the snapshots). */
  scratchParent: string;
  signal?: AbortSignal;
}

/**
 * Restores `db` into a scratch directory and reads it with a throw-away etcd.
 * @throws SnapshotError `snapshot-corrupt` (exit 2) when the restore refuses the file (truncated, hash
 *   mismatch, not a snapshot); KubeceptionError `snapshot-test-restore` (exit 1) when the restored
 *   etcd does not serve within {@link TEST_RESTORE_TIMEOUT_MS} (its last output in `why`).
 */
export async function testRestore(t: TestRestore): Promise<VerifyResult> {
  const started = Date.now();
  const scratch = await fs.mkdtemp(join(t.scratchParent, '.verify-'));
  let etcd: RunningProcess | undefined;
  try {
    const data = join(scratch, 'data');
    const [clientPort, peerPort] = [await freePort(), await freePort()];
    const client = `http://127.0.0.1:${clientPort}`;
    const peer = `http://127.0.0.1:${peerPort}`;
    const membership = ['--name', MEMBER, '--initial-cluster', `${MEMBER}=${peer}`, '--initial-advertise-peer-urls', peer, '--initial-cluster-token', MEMBER];
    const r = await t.sh.exec([t.tools.offline.bin, 'snapshot', 'restore', t.db, '--data-dir', data, ...membership], { env: { ETCDCTL_API: '3' }, allowFail: true, timeoutMs: 300_000 });
    if (r.code !== 0)
      throw new SnapshotError('snapshot-corrupt', { what: t.db, why: `${t.tools.offline.tool} snapshot restore refuses it: ${lastLine(r.stderr || r.stdout)}`, fix: 'the file is truncated or altered: take a new snapshot (`kubeception etcd snapshot save`) and delete this one' });
    etcd = await startProcess([t.etcd, ...membership, '--data-dir', data, '--listen-client-urls', client, '--advertise-client-urls', client, '--listen-peer-urls', peer, '--logger=zap', '--log-level=warn'], { dropEnv: (n) => n.startsWith('ETCD_') || n.startsWith('ETCDCTL_') });
    const running = etcd;
    const read = await pollUntil(async () => {
      if (running.exited()) return null;
      const a = await postHttp(`${client}/v3/kv/range`, COUNT_ALL, 2_000);
      return 'status' in a && a.status === 200 ? parseRangeCount(a.body) : undefined;
    }, { timeoutMs: TEST_RESTORE_TIMEOUT_MS, intervalMs: 100, signal: t.signal });
    if (!read)
      throw new KubeceptionError('snapshot-test-restore', { what: `${t.db} (test restore)`, why: `the restored data dir did not serve on ${client} ${read === null ? '(etcd exited)' : `within ${TEST_RESTORE_TIMEOUT_MS / 1000} s`}: ${lastLine(running.output())}`, fix: `check that ${t.etcd} runs on this host (\`${t.etcd} --version\`), then verify again` });
    return { at: new Date().toISOString(), tool: t.tools.offline.tool, ...read, durationMs: Date.now() - started };
  } finally {
    await etcd?.stop();
    await fs.rm(scratch, { recursive: true, force: true });
  }
}
