/**
 * The node upgrade controller against a real kube-apiserver and etcd on loopback
 * (test/bed/loopback-apiserver.ts): the NodeUpgradePlan CRD, the controller with its own
 * ServiceAccount and RBAC (manifests/node-upgrade-controller.ts), Nodes whose status the test writes
 * as their kubelets (upgraded by the agents) would. No kubelet and no Job controller run: an agent
 * Job is created and stays; the test plays the agent by reporting the Node's new kubelet version.
 * Proves: the status advances batch by batch as Nodes report the target; a Node an operator cordoned
 * is never uncordoned; a controller restarted mid-batch resumes from the status; a failing Node stops
 * the rollout, is named, stays cordoned, and the rest is untouched; `upgrade pause|resume|status`
 * through the CLI hold, release and show a plan.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Cluster, type KubernetesObject, type V1Node } from '../../lib/k8s/client.ts';
import { runNodeUpgradeController } from '../../lib/node-upgrade/controller.ts';
import { NODE_UPGRADE_API_VERSION, NODE_UPGRADE_KIND, type NodeUpgradePlan, type NodeUpgradePlanSpec } from '../../lib/node-upgrade/types.ts';
import { DRAINED_ANNOTATION } from '../../lib/steps/upgrade/upgrade-node.ts';
import { nodeUpgradeCrd } from '../../manifests/node-upgrade.ts';
import { agentJob, agentJobName, nodeUpgradeRbac, NODE_UPGRADE_CONTROLLER_NAME } from '../../manifests/node-upgrade-controller.ts';
import { startLoopbackApiserver, type LoopbackApiserver } from '../bed/loopback-apiserver.ts';
import { cli } from '../helpers/cli.ts';
import { startNodeRollout } from '../../lib/node-upgrade/start.ts';

const OLD = 'v1.36.4';
const NEW = 'v1.37.2';
let api: LoopbackApiserver;
let admin: Cluster;
let controllerKubeconfig: string;
const tmp = mkdtempSync('/tmp/kc-node-upgrade-test-');
const log: string[] = [];

function kubectl(...args: string[]): string {
  return execFileSync('kubectl', ['--kubeconfig', join(tmp, 'admin.conf'), ...args]).toString().trim();
}

/** A Node as its kubelet would register it: labelled, Ready, kubelet `version`; cordoned if `operatorCordon`. */
async function addNode(name: string, pool: string, opts: { operatorCordon?: boolean } = {}): Promise<void> {
  await admin.apply([{ apiVersion: 'v1', kind: 'Node', metadata: { name, labels: { pool } }, ...(opts.operatorCordon && { spec: { unschedulable: true } }) } as KubernetesObject]);
  report(name, OLD);
}

/** What the Node's kubelet reports: Ready, at `version` (what the agent's `upgrade node` ends with). */
function report(name: string, version: string): void {
  const now = new Date().toISOString();
  const status = { conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'test', lastHeartbeatTime: now, lastTransitionTime: now }], nodeInfo: { kubeletVersion: version, kubeProxyVersion: '', machineID: name, systemUUID: name, bootID: name, kernelVersion: '6', osImage: 'test', containerRuntimeVersion: 'containerd://2', operatingSystem: 'linux', architecture: 'amd64' } };
  kubectl('patch', 'node', name, '--subresource=status', '--type=merge', '-p', JSON.stringify({ status }));
}

const readPlan = (name: string) => admin.read<NodeUpgradePlan & KubernetesObject>({ apiVersion: NODE_UPGRADE_API_VERSION, kind: NODE_UPGRADE_KIND, metadata: { name } });
const readNode = (name: string) => admin.read<V1Node>({ apiVersion: 'v1', kind: 'Node', metadata: { name } });
const phases = (p: NodeUpgradePlan | undefined) => Object.fromEntries((p?.status?.nodes ?? []).map((n) => [n.name, `${n.batch}:${n.phase}`]));
const jobExists = async (plan: string, node: string) => !!(await admin.read({ apiVersion: 'batch/v1', kind: 'Job', metadata: { name: agentJobName(plan, node, NEW), namespace: 'kube-system' } }));

/** Polls the plan (≤ 20 s) until `ok` holds; fails with the last status otherwise. */
async function waitPlan(name: string, what: string, ok: (p: NodeUpgradePlan) => boolean): Promise<NodeUpgradePlan> {
  let last: NodeUpgradePlan | undefined;
  for (let i = 0; i < 200; i++) {
    last = await readPlan(name);
    if (last && ok(last)) return last;
    await sleep(100);
  }
  assert.fail(`${what}: plan ${name} status ${JSON.stringify(last?.status)}\ncontroller log:\n${log.slice(-20).join('\n')}`);
}

/** What the controller's Deployment would give it: the agents' site directory and command. */
const AGENT = { siteDir: '/root/site', command: ['node', '/opt/kc/bin/kubeception.js'] };

/** Runs a controller (its own ServiceAccount) until the returned function is called. */
function startController(): () => void {
  const ac = new AbortController();
  void runNodeUpgradeController(controllerKubeconfig, ac.signal, { image: 'localhost/kubeception:test', agent: AGENT, intervalMs: 150, log: (l) => log.push(l) });
  return () => ac.abort();
}

async function createPlan(name: string, spec: NodeUpgradePlanSpec): Promise<void> {
  assert.ok(await admin.create({ apiVersion: NODE_UPGRADE_API_VERSION, kind: NODE_UPGRADE_KIND, metadata: { name }, spec } as KubernetesObject));
}

before(async () => {
  api = await startLoopbackApiserver();
  admin = new Cluster(api.adminKubeconfig, 'admin');
  writeFileSync(join(tmp, 'admin.conf'), api.adminKubeconfig, { mode: 0o600 });
  await admin.apply([nodeUpgradeCrd(), ...nodeUpgradeRbac()]);
  kubectl('wait', '--for=condition=Established', '--timeout=30s', 'crd/nodeupgradeplans.kubeception.io');
  controllerKubeconfig = api.tokenKubeconfig(kubectl('-n', 'kube-system', 'create', 'token', NODE_UPGRADE_CONTROLLER_NAME, '--duration=1h'));
});

after(async () => {
  await api?.stop();
  rmSync(tmp, { recursive: true, force: true });
});

describe('node upgrade controller against a real apiserver', () => {
  test('batch by batch as Nodes report the target; an operator-cordoned Node held, never uncordoned; a restart mid-batch resumes', async () => {
    for (const n of ['a1', 'a2', 'a4', 'a5']) await addNode(n, 'a');
    await addNode('a3', 'a', { operatorCordon: true });
    // A plan's writer trying to say what the agent runs as root: the field is not in the CRD's schema.
    const injected = { agent: { siteDir: '/tmp', command: ['/bin/sh', '-c', 'id'] } };
    await createPlan('pool-a', { targetVersion: NEW, nodeSelector: { pool: 'a' }, maxUnavailable: 2, ...injected } as NodeUpgradePlanSpec);
    let stop = startController();
    try {
      let p = await waitPlan('pool-a', 'batch 1 upgrading', (x) => phases(x).a1 === '1:Upgrading' && phases(x).a2 === '1:Upgrading');
      assert.deepEqual(p.status?.held, ['a3']);
      for (const n of ['a1', 'a2']) {
        const node = await readNode(n);
        assert.equal(node?.spec?.unschedulable, true, `${n} cordoned`);
        assert.equal(node?.metadata?.annotations?.[DRAINED_ANNOTATION], NEW, `${n}: the cordon recorded as kubeception's`);
        assert.ok(await jobExists('pool-a', n), `agent Job for ${n}`);
        const job = await admin.read<KubernetesObject & { spec: { template: { spec: { containers: { command: string[] }[] } } } }>({ apiVersion: 'batch/v1', kind: 'Job', metadata: { name: agentJobName('pool-a', n, NEW), namespace: 'kube-system' } });
        assert.deepEqual(job!.spec.template.spec.containers[0]!.command.slice(3), ['agent', AGENT.siteDir, ...AGENT.command], `${n}: the agent runs the controller's command, not the plan's`);
      }
      for (const n of ['a3', 'a4', 'a5']) assert.equal(await jobExists('pool-a', n), false, `no agent for ${n} yet`);
      assert.equal((await readNode('a4'))?.spec?.unschedulable, undefined, 'a4 untouched');

      report('a1', NEW);
      p = await waitPlan('pool-a', 'a1 done', (x) => phases(x).a1 === '1:Done');
      assert.equal((await readNode('a1'))?.spec?.unschedulable, undefined, 'a1 uncordoned once Ready at the target');
      await sleep(600);
      p = (await readPlan('pool-a'))!;
      assert.equal(p.status?.batch, 1, 'batch 2 waits for a2');
      assert.equal((await readNode('a4'))?.spec?.unschedulable, undefined);

      stop();
      await sleep(300);
      log.push('--- controller restarted ---');
      stop = startController();
      report('a2', NEW);
      p = await waitPlan('pool-a', 'batch 2 upgrading after the restart', (x) => x.status?.batch === 2 && phases(x).a4 === '2:Upgrading' && phases(x).a5 === '2:Upgrading');
      assert.equal(phases(p).a2, '1:Done');
      assert.equal(p.status?.nodes?.filter((n) => n.batch === 1).length, 2, 'the restarted controller started no Node of batch 1 again');
      report('a4', NEW);
      report('a5', NEW);
      p = await waitPlan('pool-a', 'complete', (x) => x.status?.phase === 'Complete');
      assert.match(p.status?.conditions?.find((c) => c.type === 'Complete')?.message ?? '', /held .*a3/);
      const a3 = await readNode('a3');
      assert.equal(a3?.spec?.unschedulable, true, 'the operator\'s cordon stays');
      assert.equal(a3?.metadata?.annotations?.[DRAINED_ANNOTATION], undefined);
      assert.equal(await jobExists('pool-a', 'a3'), false, 'no agent ever ran on a3');
      for (const n of ['a1', 'a2', 'a4', 'a5']) assert.equal((await readNode(n))?.spec?.unschedulable, undefined, `${n} uncordoned`);
    } finally {
      stop();
    }
  });

  test('a Node that never reports the target fails the rollout: named, left cordoned, the rest untouched', async () => {
    for (const n of ['b1', 'b2', 'b3']) await addNode(n, 'b');
    await createPlan('pool-b', { targetVersion: NEW, nodeSelector: { pool: 'b' }, maxUnavailable: 1, nodeTimeoutSeconds: 2 });
    const stop = startController();
    try {
      const p = await waitPlan('pool-b', 'failed', (x) => x.status?.phase === 'Failed');
      const failed = p.status?.conditions?.find((c) => c.type === 'Failed');
      assert.equal(failed?.reason, 'NodeUpgradeFailed');
      assert.match(failed?.message ?? '', /^Node b1: not Ready with kubelet v1\.37\.2 within 2 s/);
      assert.deepEqual(phases(p), { b1: '1:Failed' });
      await sleep(600);
      assert.equal((await readPlan('pool-b'))?.status?.batch, 1, 'no further batch');
      assert.equal((await readNode('b1'))?.spec?.unschedulable, true, 'the failing Node stays cordoned');
      for (const n of ['b2', 'b3']) {
        assert.equal((await readNode(n))?.spec?.unschedulable, undefined, `${n} untouched`);
        assert.equal(await jobExists('pool-b', n), false, `no agent for ${n}`);
      }
    } finally {
      stop();
    }
  });

  test("a Node whose agent rolled its kubelet back: the plan Failed naming it with the agent's error; `upgrade rollback` (refused before the failure) returns it to service; the plan RolledBack", async () => {
    for (const n of ['d1', 'd2']) await addNode(n, 'd');
    await createPlan('pool-d', { targetVersion: NEW, nodeSelector: { pool: 'd' }, maxUnavailable: 1 });
    const kc = join(tmp, 'admin.conf');
    const early = await cli(['upgrade', 'rollback', 'pool-d', '--kubeconfig', kc]);
    assert.equal(early.code, 2, `rollback of a plan that has not failed: ${early.stdout}${early.stderr}`);
    assert.match(early.stderr, /plan-not-failed/);
    assert.equal((await readPlan('pool-d'))?.spec.rollback, undefined, 'the refused rollback changed nothing');
    const stop = startController();
    try {
      await waitPlan('pool-d', 'd1 upgrading', (x) => phases(x).d1 === '1:Upgrading');
      // Play the agent that rolled back: its pod ended with the CLI's error, its Job failed; the Node
      // is Ready at its old kubelet (no Job controller or kubelet runs here).
      const job = agentJobName('pool-d', 'd1', NEW);
      const said = 'upgrade-node-preflight … kubelet-restart failed\nerror kubelet-upgrade-rolled-back: Node d1\n  why: the kubelet v1.37.2 did not come up (unit kubelet crash loop); rolled back';
      await admin.apply([{ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default', namespace: 'kube-system' } } as KubernetesObject]); // no controller-manager here
      await admin.create({ apiVersion: 'v1', kind: 'Pod', metadata: { name: `${job}-x`, namespace: 'kube-system', labels: { 'job-name': job } }, spec: { nodeName: 'd1', restartPolicy: 'Never', containers: [{ name: 'agent', image: 'localhost/kubeception:test' }] } } as KubernetesObject);
      kubectl('-n', 'kube-system', 'patch', 'pod', `${job}-x`, '--subresource=status', '--type=merge', '-p', JSON.stringify({ status: { phase: 'Failed', containerStatuses: [{ name: 'agent', image: 'localhost/kubeception:test', imageID: '', ready: false, restartCount: 0, state: { terminated: { exitCode: 1, reason: 'Error', message: said } } }] } }));
      kubectl('-n', 'kube-system', 'patch', 'job', job, '--subresource=status', '--type=merge', '-p', JSON.stringify({ status: { failed: 1 } }));
      report('d1', OLD);
      let p = await waitPlan('pool-d', 'failed', (x) => x.status?.phase === 'Failed');
      assert.match(p.status!.conditions!.find((c) => c.type === 'Failed')!.message, /^Node d1: the upgrade agent failed: Job .*: its pod failed — error kubelet-upgrade-rolled-back: Node d1; why: the kubelet v1\.37\.2 did not come up \(unit kubelet crash loop\); rolled back$/);
      assert.equal(p.status!.nodes!.find((n) => n.name === 'd1')!.rolledBack, true);
      assert.equal((await readNode('d1'))?.spec?.unschedulable, true, 'Failed: d1 stays cordoned');
      const text = await cli(['upgrade', 'status', 'pool-d', '--kubeconfig', kc]);
      assert.equal(text.code, 1, 'status of a Failed plan exits 1');
      const r = await cli(['upgrade', 'rollback', 'pool-d', '--kubeconfig', kc]);
      assert.equal(r.code, 0, r.stderr);
      p = await waitPlan('pool-d', 'rolled back', (x) => x.status?.phase === 'RolledBack');
      assert.deepEqual(phases(p), { d1: '1:RolledBack' });
      assert.match(p.status!.conditions!.find((c) => c.type === 'RolledBack')!.message, /^back in service at their previous kubelet: d1$/);
      const d1 = await readNode('d1');
      assert.equal(d1?.spec?.unschedulable, undefined, 'd1 uncordoned');
      assert.equal(d1?.metadata?.annotations?.[DRAINED_ANNOTATION], undefined);
      assert.equal((await readNode('d2'))?.spec?.unschedulable, undefined, 'd2 untouched');
      assert.equal(await jobExists('pool-d', 'd2'), false, 'no agent for d2');
      const again = await cli(['upgrade', 'status', 'pool-d', '--kubeconfig', kc]);
      assert.equal(again.code, 0, again.stderr);
      assert.match(again.stdout, /phase RolledBack, batch 1, maxUnavailable 1, rollback requested\n/);
    } finally {
      stop();
    }
  });

  test('upgrade pause holds the rollout, upgrade resume lets it go on, upgrade status shows it (the CLI, --kubeconfig)', async () => {
    for (const n of ['c1', 'c2']) await addNode(n, 'c');
    await createPlan('pool-c', { targetVersion: NEW, nodeSelector: { pool: 'c' }, maxUnavailable: 1 });
    const kc = join(tmp, 'admin.conf');
    const stop = startController();
    try {
      await waitPlan('pool-c', 'batch 1 upgrading', (x) => phases(x).c1 === '1:Upgrading');
      const paused = await cli(['upgrade', 'pause', 'pool-c', '--kubeconfig', kc]);
      assert.equal(paused.code, 0, paused.stderr);
      await waitPlan('pool-c', 'paused', (x) => x.status?.phase === 'Paused');
      report('c1', NEW);
      await sleep(800);
      let p = (await readPlan('pool-c'))!;
      assert.deepEqual(phases(p), { c1: '1:Upgrading' }, 'paused: c1 at the target is not taken as done');
      assert.equal((await readNode('c1'))?.spec?.unschedulable, true);
      const text = await cli(['upgrade', 'status', 'pool-c', '--kubeconfig', kc]);
      assert.equal(text.code, 0, text.stderr);
      assert.match(text.stdout, /^NodeUpgradePlan pool-c: target v1\.37\.2, phase Paused, batch 1, maxUnavailable 1, paused\n/);
      assert.match(text.stdout, /\nc1 +1 +Upgrading +v1\.36\.4 +yes/);
      const resumed = await cli(['upgrade', 'resume', 'pool-c', '--kubeconfig', kc]);
      assert.equal(resumed.code, 0, resumed.stderr);
      p = await waitPlan('pool-c', 'batch 2 after the resume', (x) => phases(x).c2 === '2:Upgrading');
      const json = await cli(['upgrade', 'status', 'pool-c', '--kubeconfig', kc, '--output', 'json']);
      assert.equal(JSON.parse(json.stdout).status.batch, 2);
      assert.equal((await cli(['upgrade', 'status', 'nosuchplan', '--kubeconfig', kc])).code, 2);
    } finally {
      stop();
    }
  });

  test('upgrade apply --nodes\'s last part: the CRD and controller applied, the plan kubelet created; the same target again left; another refused while it runs', async () => {
    const o = { image: 'localhost/kubeception:test', apiserverPort: 6443, agent: { siteDir: '/root/site', command: ['node', '/opt/kc/bin/kubeception.js'] } };
    assert.match(await startNodeRollout(admin, NEW, o), /NodeUpgradePlan kubelet created/);
    const dep = await admin.read({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: NODE_UPGRADE_CONTROLLER_NAME, namespace: 'kube-system' } });
    assert.ok(dep, 'the controller Deployment is applied');
    const p = (await readPlan('kubelet'))!;
    assert.deepEqual(p.spec, { targetVersion: NEW });
    // What the agents run is the controller's Deployment's, not the plan's.
    const env = Object.fromEntries((dep as { spec: { template: { spec: { containers: { env: { name: string; value: string }[] }[] } } } }).spec.template.spec.containers[0]!.env.map((e) => [e.name, e.value]));
    assert.equal(env.KUBECEPTION_AGENT_SITE_DIR, '/root/site');
    assert.deepEqual(JSON.parse(env.KUBECEPTION_AGENT_COMMAND!), ['node', '/opt/kc/bin/kubeception.js']);
    assert.match(await startNodeRollout(admin, NEW, o), /exists \(Pending\): left as it is/);
    await assert.rejects(startNodeRollout(admin, 'v1.38.0', o), /node-rollout-busy|a rollout to v1\.37\.2 is Pending/);
    // Failed (or rolled back) at the same target: a new try replaces it, and its agent Jobs (a new
    // plan's Job for the same Node has the same name: a failed one left would fail it at once) go first.
    const job = agentJob({ plan: 'kubelet', node: 'e1', target: NEW, image: o.image, siteDir: o.agent.siteDir, command: o.agent.command, timeoutSeconds: 60 });
    assert.ok(await admin.create(job as KubernetesObject));
    const failed = (await readPlan('kubelet'))!;
    await admin.replaceStatus({ ...failed, status: { phase: 'Failed', batch: 1, nodes: [] } } as KubernetesObject, 'nodeupgradeplans');
    assert.match(await startNodeRollout(admin, NEW, o), /NodeUpgradePlan kubelet created/);
    const renewed = (await readPlan('kubelet'))!;
    assert.notEqual(renewed.metadata.uid, failed.metadata.uid, 'a new plan');
    assert.equal(renewed.status?.phase, undefined);
    assert.equal(await admin.read({ apiVersion: 'batch/v1', kind: 'Job', metadata: { name: job.metadata.name!, namespace: 'kube-system' } }), undefined, "the old plan's agent Job is gone");
    await admin.delete({ apiVersion: NODE_UPGRADE_API_VERSION, kind: NODE_UPGRADE_KIND, metadata: { name: 'kubelet' } });
  });
});
