/** The NodeUpgradePlan CRD and the node upgrade controller's and agent's objects. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { nodeUpgradeCrd } from '../../../manifests/node-upgrade.ts';
import { agentJob, agentJobName, nodeUpgradeControllerObjects, AGENT_COMMAND_ENV, AGENT_IMAGE_ENV, AGENT_SITE_DIR_ENV } from '../../../manifests/node-upgrade-controller.ts';
import { parseAgentCommand } from '../../../lib/commands/in-cluster.ts';

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
  // What the agent runs as root on the Nodes is not a plan's to say: no field for it, and the
  // apiserver prunes unknown fields of a structural schema (nothing preserves them).
  assert.ok(!('agent' in spec!.properties!), 'no spec.agent');
  assert.ok(!JSON.stringify(crd).includes('x-kubernetes-preserve-unknown-fields'));
});

test('the agent command from the controller\'s environment: a JSON array of non-empty strings, anything else refused', () => {
  assert.deepEqual(parseAgentCommand('["node","/opt/kc/bin/kubeception.js"]'), ['node', '/opt/kc/bin/kubeception.js']);
  for (const bad of [undefined, '', 'kubeception', '[]', '[""]', '["a",1]', '{"0":"a"}', '"kubeception"']) assert.equal(parseAgentCommand(bad), undefined, String(bad));
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
  const objs = nodeUpgradeControllerObjects('reg/kubeception:v1', 6443, { siteDir: '/root/site', command: ['node', '/opt/kc/bin/kubeception.js'] });
  const d = objs.find((o) => o.kind === 'Deployment') as ReturnType<typeof nodeUpgradeControllerObjects>[number] & { spec: { replicas: number; strategy: { type: string }; template: { spec: { containers: { args: string[]; env: { name: string; value?: string }[] }[] } } } };
  assert.deepEqual([d.spec.replicas, d.spec.strategy.type], [1, 'Recreate']);
  // Restarted while its only control-plane node is cordoned (by itself, upgrading it), it comes back there.
  assert.ok((d.spec.template.spec as { tolerations?: { key?: string; effect?: string }[] }).tolerations?.some((t) => t.key === 'node.kubernetes.io/unschedulable' && t.effect === 'NoSchedule'));
  assert.deepEqual(d.spec.template.spec.containers[0]!.args, ['node-upgrade-controller']);
  const env = (n: string) => d.spec.template.spec.containers[0]!.env.find((e) => e.name === n)?.value;
  assert.equal(env(AGENT_IMAGE_ENV), 'reg/kubeception:v1');
  assert.equal(env(AGENT_SITE_DIR_ENV), '/root/site');
  assert.deepEqual(parseAgentCommand(env(AGENT_COMMAND_ENV)), ['node', '/opt/kc/bin/kubeception.js']);
  const rules = objs.flatMap((o) => ((o as { rules?: { resources?: string[] }[] }).rules ?? []));
  assert.ok(rules.length > 0);
  assert.ok(!rules.some((r) => r.resources?.includes('secrets') || r.resources?.includes('*')));
  // Privileged agent Jobs only in kube-system: jobs in a Role there, in no ClusterRole.
  const jobsIn = objs.filter((o) => ((o as { rules?: { resources?: string[] }[] }).rules ?? []).some((r) => r.resources?.includes('jobs')));
  assert.deepEqual(jobsIn.map((o) => [o.kind, o.metadata.namespace]), [['Role', 'kube-system']]);
});
