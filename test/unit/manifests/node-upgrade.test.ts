/** The NodeUpgradePlan CRD and the node upgrade controller's and agent's objects. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { nodeUpgradeCrd } from '../../../manifests/node-upgrade.ts';
import { agentJob, agentJobName, nodeUpgradeControllerObjects, AGENT_IMAGE_ENV } from '../../../manifests/node-upgrade-controller.ts';

const job = () => agentJob({ plan: 'kubelet', node: 'w1', target: 'v1.37.2', image: 'reg/kubeception:v1', siteDir: '/root/site', command: ['node', '/opt/kc/bin/kubeception.js'], timeoutSeconds: 900 });

test('the CRD: kubeception.io/v1alpha1 NodeUpgradePlan, cluster-scoped, a status subresource, targetVersion required and a version', () => {
  const crd = nodeUpgradeCrd();
  assert.equal(crd.metadata.name, 'nodeupgradeplans.kubeception.io');
  assert.equal(crd.spec.scope, 'Cluster');
  const v = crd.spec.versions[0]!;
  assert.deepEqual([v.name, v.storage, v.subresources?.status], ['v1alpha1', true, {}]);
  const spec = v.schema?.openAPIV3Schema?.properties?.spec;
  assert.deepEqual(spec?.required, ['targetVersion']);
  assert.ok(new RegExp(spec!.properties!.targetVersion!.pattern!).test('v1.37.2'));
  assert.ok(!new RegExp(spec!.properties!.targetVersion!.pattern!).test('1.37'));
});

test('the agent Job: pinned to its Node, privileged, never retried, the host at /host, a script sh accepts', () => {
  const j = job();
  const pod = j.spec!.template.spec!;
  assert.equal(j.metadata.name, agentJobName('kubelet', 'w1', 'v1.37.2'));
  assert.notEqual(agentJobName('kubelet', 'w1', 'v1.37.2'), agentJobName('kubelet', 'w2', 'v1.37.2'));
  assert.ok(j.metadata.name.length <= 63);
  assert.deepEqual([pod.nodeName, pod.restartPolicy, j.spec!.backoffLimit, j.spec!.activeDeadlineSeconds], ['w1', 'Never', 0, 900]);
  assert.deepEqual(pod.tolerations, [{ operator: 'Exists' }]);
  const c = pod.containers[0]!;
  assert.equal(c.securityContext?.privileged, true);
  assert.deepEqual(pod.volumes, [{ name: 'host', hostPath: { path: '/', type: 'Directory' } }]);
  const [sh, flag, script, ...args] = c.command!;
  assert.deepEqual([sh, flag, args], ['/bin/sh', '-c', ['agent', '/root/site', 'node', '/opt/kc/bin/kubeception.js']]);
  execFileSync('sh', ['-n', '-c', script!]);
  assert.match(script!, /chroot \/host .*"\$@" upgrade node --kubeconfig \/run\/kubeception-upgrade-agent\/kubeconfig/);
  assert.match(script!, /trap 'rm -rf "\$d"' EXIT/, 'the token kubeconfig is removed from the host');
});

test("the controller: one replica, never two at once, its image passed to the agents; its roles read no Secret", () => {
  const objs = nodeUpgradeControllerObjects('reg/kubeception:v1', 6443);
  const d = objs.find((o) => o.kind === 'Deployment') as ReturnType<typeof nodeUpgradeControllerObjects>[number] & { spec: { replicas: number; strategy: { type: string }; template: { spec: { containers: { args: string[]; env: { name: string; value?: string }[] }[] } } } };
  assert.deepEqual([d.spec.replicas, d.spec.strategy.type], [1, 'Recreate']);
  assert.deepEqual(d.spec.template.spec.containers[0]!.args, ['node-upgrade-controller']);
  assert.equal(d.spec.template.spec.containers[0]!.env.find((e) => e.name === AGENT_IMAGE_ENV)?.value, 'reg/kubeception:v1');
  const rules = objs.flatMap((o) => ((o as { rules?: { resources?: string[] }[] }).rules ?? []));
  assert.ok(rules.length > 0);
  assert.ok(!rules.some((r) => r.resources?.includes('secrets') || r.resources?.includes('*')));
});
