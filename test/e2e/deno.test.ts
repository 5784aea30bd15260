/**
 * Deno end to end: `deno run -A bin/kubeception.ts run bootstrap` on a bed host gives a Ready
 * control plane, and `deno run -A bin/kubeception.ts run join …` on a second host a Ready worker —
 * the task files and the CLI under Deno, against the same real etcd, systemd (D-Bus), kubelet and
 * containerd as the Node tests. Deno is the package's devDependency (node_modules/.bin/deno), run
 * offline against node_modules.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { bootHost, REPO_ROOT, type Host } from '../bed/bed.ts';
import { importKubeceptionImage } from '../bed/kubeception-image.ts';
import { kc, SITE, stepsWith, writeConfig } from '../helpers/bed-cli.ts';
import { ADMIN, assertBootstrapped } from '../helpers/converged.ts';
import { printedJoin } from '../helpers/join-command.ts';

const DENO = [`${REPO_ROOT}/node_modules/.bin/deno`, 'run', '-A', `${REPO_ROOT}/bin/kubeception.ts`];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function deno(host: Host, args: string[], env: Record<string, string> = {}) {
  const r = await host.exec([...DENO, ...args, '--output', 'json'], { cwd: SITE, timeoutMs: 900_000, env: { ...env, DENO_NO_UPDATE_CHECK: '1' } });
  const events = r.stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
  return { ...r, events };
}

/** The join service's pods and their last log lines, for a failed join's message. */
async function joinServiceState(cp: Host): Promise<string> {
  const k = (args: string[]) => cp.exec(['kubectl', `--kubeconfig=${ADMIN}`, '-n', 'kube-system', ...args]).then((x) => x.stdout + x.stderr);
  return `join service pods:\n${await k(['get', 'pods', '-o', 'wide', '-l', 'app.kubernetes.io/name=kubeception-join'])}\nlogs:\n${await k(['logs', '--tail', '40', '-l', 'app.kubernetes.io/name=kubeception-join'])}`;
}

describe('Deno end to end on the bed: bootstrap and join', { timeout: 1_800_000 }, () => {
  let cp: Host;
  let worker: Host;
  before(async () => {
    [cp, worker] = await Promise.all([bootHost({ name: 'c13f', kubelet: true }), bootHost({ name: 'c13g', kubelet: true })]);
    await importKubeceptionImage(cp);
    for (const h of [cp, worker]) await writeConfig(h, { distro: 'debian', networking: { plugin: 'none' } });
  });
  after(async () => {
    await Promise.all([cp, worker].map((h) => h?.destroy()));
  });

  test('deno run … run bootstrap: exit 0, Node Ready, self-hosted, bootstrap manifests gone', async () => {
    const r = await deno(cp, ['run', 'bootstrap']);
    assert.equal(r.code, 0, `${r.stderr.slice(-3000)}\n${r.stdout.slice(-2000)}`);
    assert.deepEqual(stepsWith(r.events, 'step-failed'), []);
    assert.ok(stepsWith(r.events, 'step-done').includes('kubelet-pivot'));
    await assertBootstrapped(cp, cp.name);
  });

  test('deno run … run join: exit 0, the worker Ready', async () => {
    const line = await kc(cp, ['token', 'create', '--print-join-command']);
    assert.equal(line.code, 0, line.stderr);
    const printed = printedJoin(line.stdout); // the token in KUBECEPTION_TOKEN
    const r = await deno(worker, ['run', 'join', ...printed.args], printed.env);
    assert.equal(r.code, 0, `${r.stderr.slice(-3000)}\n${r.stdout.slice(-2000)}\n${r.code ? await joinServiceState(cp) : ''}`);
    let ready = '';
    for (let i = 0; i < 90 && ready !== 'True'; i++) {
      ready = (await cp.exec(['kubectl', `--kubeconfig=${ADMIN}`, 'get', 'node', worker.name, '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}'])).stdout.trim();
      if (ready !== 'True') await sleep(1_000);
    }
    assert.equal(ready, 'True');
  });
});
