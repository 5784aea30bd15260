/**
 * The crash harness: `kubeception run bootstrap` (one host) and `run join` (one worker) are killed
 * with a real SIGKILL at every crash point — every step boundary (`<step>:before`/`:after`) and the
 * mid-step points of the long steps, including each point between a config write and the
 * restart/reload that applies it (lib/engine/crash.ts, `KUBECEPTION_CRASH_AT`) — and each crash is
 * recovered through by the next run.
 *
 * Design (wall time ≈ one cold bootstrap + one re-run per point, not one cold bootstrap per point):
 * the points are walked in order on ONE host. Run k is started with `KUBECEPTION_CRASH_AT=p_k` on the
 * state run k-1 left when it was killed at p_{k-1}: it must redo or accept everything before p_k
 * (re-running every step from preflight, so it recovers through crash k-1) and is then killed at p_k
 * itself (asserted: exit 137 and the crash line naming p_k, so a step that failed — or a point never
 * reached — fails the test). Full converges (exit 0; Node Ready; no bootstrap manifest; the *running*
 * kubelet connected to the final apiserver only; then a second re-run that changes nothing: files,
 * unit starts, kube-system pod uids and restarts) are done where the rest of the walk still reaches
 * every later point from a converged host: right after the bootstrap control plane is removed, and
 * at the end of each walk. A wedge left by any earlier crash (e.g. the kubelet's kubeconfig switched
 * to the final apiserver, the kubelet not restarted) surfaces there: the bootstrap apiserver is gone
 * by then, so a kubelet still on it fails "connected to the final apiserver only".
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { bootHost, type Host } from '../bed/bed.ts';
import { importKubeceptionImage } from '../bed/kubeception-image.ts';
import { kc, snapshot, assertSameTree, writeConfig } from '../helpers/bed-cli.ts';
import { ADMIN, assertBootstrapped, assertSameState, hostState } from '../helpers/converged.ts';
import { CRASH_ENV, crashPoints } from '../../lib/engine/crash.ts';
import bootstrapTask from '../../tasks/bootstrap.ts';
import joinTask from '../../tasks/join.ts';
import { printedJoin } from '../helpers/join-command.ts';

const BOOTSTRAP = ['run', 'bootstrap', '--output', 'json'];
/** Points after which a full converge is checked mid-walk (every later point is still reached from a converged host). */
const FULL_AT = new Set(['remove-bootstrap-control-plane:after']);
const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const changedSteps = (events: any[]) => events.filter((e) => e.event === 'step-done' && e.changed).map((e) => e.step);

/** Runs `args` (with `env`) killed at `point`; asserts it really died there. @returns seconds the run took. */
async function crashAt(host: Host, args: string[], point: string, env: Record<string, string> = {}): Promise<number> {
  const t0 = Date.now();
  const r = await kc(host, args, { env: { ...env, [CRASH_ENV]: point }, timeoutMs: 600_000 });
  const tail = `${r.stderr.slice(-1500)}\n${r.stdout.slice(-1500)}`;
  assert.match(r.stderr, new RegExp(`crash point ${esc(point)}: SIGKILL`), `run meant to die at ${point} exited ${r.code}:\n${tail}`);
  assert.equal(r.code, 137, `killed at ${point}: exit ${r.code} (SIGKILL is 137)`);
  return (Date.now() - t0) / 1000;
}

/** A full run that must exit 0, then a second one that must change nothing (measured, not self-reported). */
async function converge(host: Host, args: string[], what: string, check: () => Promise<unknown>, state: () => Promise<unknown>, same: (a: any, b: any) => void, env?: Record<string, string>) {
  const r = await kc(host, [...args, '--output', 'json'], { timeoutMs: 900_000, env });
  assert.equal(r.code, 0, `${what}: full re-run failed\n${r.stderr.slice(-2000)}\n${r.stdout.slice(-2000)}`);
  await check();
  const s0 = await state();
  const again = await kc(host, [...args, '--output', 'json'], { timeoutMs: 600_000, env });
  assert.equal(again.code, 0, again.stderr);
  assert.deepEqual(changedSteps(again.events), [], `${what}: second re-run changed steps`);
  same(s0, await state());
}

describe('crash harness: SIGKILL at every crash point of bootstrap and join, each recovered', { timeout: 1_800_000 }, () => {
  let cp: Host;
  let worker: Host;
  before(async () => {
    [cp, worker] = await Promise.all([bootHost({ name: 'c13a', kubelet: true }), bootHost({ name: 'c13b', kubelet: true })]);
    await importKubeceptionImage(cp);
    for (const h of [cp, worker]) await writeConfig(h, { distro: 'debian', networking: { plugin: 'none' } });
  });
  after(async () => {
    await Promise.all([cp, worker].map((h) => h?.destroy()));
  });

  test('bootstrap: every crash point killed for real and recovered through; converged at the end', async () => {
    const points = crashPoints(bootstrapTask);
    console.log(`bootstrap crash points: ${points.length}`);
    for (const [i, p] of points.entries()) {
      const s = await crashAt(cp, BOOTSTRAP, p);
      console.log(`  [${i + 1}/${points.length}] ${p}: killed after ${s.toFixed(1)} s`);
      if (FULL_AT.has(p))
        await converge(cp, ['run', 'bootstrap'], `after ${p}`, () => assertBootstrapped(cp, cp.name), () => hostState(cp), (a, b) => assertSameState(a, b, `after ${p}`));
    }
    await converge(cp, ['run', 'bootstrap'], 'end of the bootstrap walk', () => assertBootstrapped(cp, cp.name), () => hostState(cp), (a, b) => assertSameState(a, b, 'end of the bootstrap walk'));
  });

  test('join: every crash point killed for real and recovered through; the worker Ready at the end', async () => {
    const line = await kc(cp, ['token', 'create', '--print-join-command']);
    assert.equal(line.code, 0, line.stderr);
    const printed = printedJoin(line.stdout); // the token in KUBECEPTION_TOKEN
    const join = ['run', 'join', ...printed.args];
    // wait-node-network runs only with --wait-for-network, which needs a pod network (flannel sets
    // NetworkUnavailable=False); this host keeps the bed's CNI, so that step is skipped and its points
    // are never reached.
    // The control-plane join's steps skip on a worker: their points would only repeat the next one.
    const controlPlaneOnly = ['control-plane-certs', 'certs', 'kubeconfig', 'apiserver-config', 'etcd-join', 'etcd-snapshot-schedule', 'mark-control-plane', 'control-plane-spread', 'wait-local-apiserver', 'apiserver-recovery'];
    const points = crashPoints(joinTask).filter((p) => !p.startsWith('wait-node-network:') && !controlPlaneOnly.includes(p.split(':')[0]!));
    console.log(`join crash points: ${points.length}`);
    for (const [i, p] of points.entries()) {
      const s = await crashAt(worker, [...join, '--output', 'json'], p, printed.env);
      console.log(`  [${i + 1}/${points.length}] ${p}: killed after ${s.toFixed(1)} s`);
    }
    const ready = async () => {
      for (let i = 0; i < 90; i++) {
        const n = await cp.exec(['kubectl', `--kubeconfig=${ADMIN}`, 'get', 'node', worker.name, '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}']);
        if (n.stdout.trim() === 'True') return;
        await new Promise((r) => setTimeout(r, 1_000));
      }
      assert.fail(`Node ${worker.name} not Ready`);
    };
    const state = async () => ({
      files: await snapshot(worker, ['/var/lib/kubelet/config.yaml', '/var/lib/kubelet/bootstrap-kubeconfig', '/etc/kubernetes/pki', '/etc/systemd/system/kubelet.service.d', '/var/lib/kubeception']),
      kubelet: await worker.execOk(['systemctl', 'show', '-p', 'ActiveEnterTimestamp', '-p', 'MainPID', 'kubelet.service']),
    });
    await converge(worker, join, 'end of the join walk', ready, state, (a, b) => {
      assertSameTree(a.files, b.files, 'join re-run');
      assert.equal(b.kubelet, a.kubelet, 'join re-run restarted the kubelet');
    }, printed.env);
    console.log(`crash points walked: ${crashPoints(bootstrapTask).length + points.length}`);
  });
});
