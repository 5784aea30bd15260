/**
 * The node record on a worker (issue 29): the join's `kubelet-config` step (writeWorkerKubelet)
 * records the distro, first and idempotently, and the join task's own preflight step refuses another
 * distro with exit 2 before anything is written. Real files: every path the steps use lives under a
 * temp dir (`/x` → `<root>/x`).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import joinTask from '../../../tasks/join.ts';
import { ExitCode, isBadInput, PreflightError } from '../../../lib/errors.ts';
import { RealFiles, type HostFiles } from '../../../lib/host/files.ts';
import { NODE_RECORD, renderNodeRecord } from '../../../lib/host/node-record.ts';
import { writeWorkerKubelet } from '../../../lib/steps/join/join.ts';
import { sampleConfig } from '../pki/fixtures.ts';
import type { JoinContext } from '../../../lib/steps/contexts.ts';
import type { ResolvedConfig } from '../../../lib/types.ts';

const debian = sampleConfig({ nodeName: 'w1' });
const kubic: ResolvedConfig = { ...debian, distro: { ...debian.distro, name: 'kubic' } };

/** RealFiles with every path under `root`; `written` collects the paths actually written, in order. */
function filesUnder(root: string, written: string[]): HostFiles {
  const real = new RealFiles();
  const at = (p: string) => join(root, p);
  return {
    dryRun: false,
    read: (p) => real.read(at(p)),
    exists: (p) => real.exists(at(p)),
    list: (p) => real.list(at(p)),
    mkdir: (p, mode, owner) => real.mkdir(at(p), mode, owner),
    remove: (p) => real.remove(at(p)),
    removeTree: (p, o) => real.removeTree(at(p), o),
    async write(p, data, opts) {
      const w = await real.write(at(p), data, opts);
      if (w) written.push(p);
      return w;
    },
  };
}

/** A worker join's context on `files`: the kubelet on PATH, no unit or socket of anything else. */
function workerCtx(config: ResolvedConfig, files: HostFiles): JoinContext {
  const none = async () => ({ code: 0, stdout: '', stderr: '' });
  return {
    config: { ...config, ignorePreflightErrors: [], notices: [] },
    files,
    dryRun: false,
    options: {
      // Host checks this machine may fail (not root, no kubelet unit) only warn; NodeConfiguration and the flag checks cannot be ignored.
      ignorePreflightErrors: new Set(['all']),
      ignorePreflightErrorsFlag: ['all'],
      token: 'abcdef.0123456789abcdef',
      caCertHash: `sha256:${'a'.repeat(64)}`,
      joinUrl: 'https://10.250.0.2:30000',
    },
    state: { join: { apiserver: 'https://10.250.0.2:6443', caPem: '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n' } },
    sh: { which: async () => '/usr/bin/kubelet', read: none, exec: none },
    systemd: { reload: async () => {}, unitFileState: async () => 'enabled', activeState: async () => 'active', mainPid: async () => 0 },
    log: { info() {}, warn() {} },
  } as unknown as JoinContext;
}

const preflight = joinTask.steps.find((s) => s.spec.id === 'preflight')!.spec.run as (ctx: JoinContext) => Promise<unknown>;

test("a worker's kubelet-config writes the node record first (0600 in 0700); a converged re-run reports nothing changed and owes the kubelet no restart", async () => {
  const root = mkdtempSync(join(tmpdir(), 'kc-worker-record-'));
  try {
    const written: string[] = [];
    const files = filesUnder(root, written);
    const first = workerCtx(debian, files);
    const outcome = await writeWorkerKubelet(first);
    assert.equal(outcome.changed, true);
    assert.match(outcome.detail ?? '', /^node record, ca\.crt, /);
    assert.equal(written[0], NODE_RECORD, 'the first write of the join');
    const record = join(root, NODE_RECORD);
    assert.equal(readFileSync(record, 'utf8'), renderNodeRecord(debian));
    assert.equal(statSync(record).mode & 0o777, 0o600);
    assert.equal(statSync(dirname(record)).mode & 0o777, 0o700);

    written.length = 0;
    const again = workerCtx(debian, files);
    assert.deepEqual(await writeWorkerKubelet(again), { changed: false, detail: 'up to date' });
    assert.deepEqual(written, []);
    assert.notEqual(again.state.kubeletRestart, true);

    // A worker joined before the record existed: its next run records the distro, and only that.
    rmSync(record);
    const older = workerCtx(debian, files);
    assert.deepEqual(await writeWorkerKubelet(older), { changed: true, detail: 'node record' });
    assert.deepEqual(written, [NODE_RECORD]);
    assert.notEqual(older.state.kubeletRestart, true, 'the record is no kubelet file');
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test("the worker join's preflight refuses another distro than the node record's: exit 2 naming distro, the record, why and the fix; nothing written", async () => {
  const root = mkdtempSync(join(tmpdir(), 'kc-worker-record-'));
  try {
    const written: string[] = [];
    const files = filesUnder(root, written);
    assert.equal(await preflight(workerCtx(debian, files)).then(() => 'passed'), 'passed', 'no record yet: nothing to compare');
    await writeWorkerKubelet(workerCtx(debian, files));
    assert.equal(await preflight(workerCtx(debian, files)).then(() => 'passed'), 'passed', 'the distro it joined with');
    const before = readFileSync(join(root, NODE_RECORD), 'utf8');
    written.length = 0;
    await assert.rejects(preflight(workerCtx(kubic, files)), (e: unknown) => {
      assert.ok(e instanceof PreflightError, String(e));
      assert.equal(isBadInput(e), true);
      assert.equal(ExitCode.badInput, 2);
      assert.equal(e.what, 'NodeConfiguration');
      assert.equal(e.why, `[NodeConfiguration] distro gives kubic in the config, but this node runs with debian (${NODE_RECORD}): this node's container runtime, kubelet (and on a control-plane node etcd) units and paths were set up for that distro; kubeception does not move a node to another distro`);
      assert.match(e.fix, /^set distro back to what this node runs with in kubeception\.config\.ts .*`kubeception reset` it with distro debian, then bootstrap or join it with kubic\)$/);
      return true;
    });
    assert.deepEqual(written, [], 'preflight writes nothing');
    assert.equal(readFileSync(join(root, NODE_RECORD), 'utf8'), before);
    assert.ok(!existsSync(join(root, debian.certificatesDir, 'ca.key')));
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('no join step writes before preflight: every step of the join needs it, directly or through others', () => {
  const needs = new Map<string, readonly string[]>(joinTask.steps.map((s) => [s.spec.id, s.spec.needs]));
  const reaches = (id: string): boolean => id === 'preflight' || (needs.get(id) ?? []).some(reaches);
  for (const s of joinTask.steps) assert.ok(s.spec.id === 'preflight' || reaches(s.spec.id), s.spec.id);
});
