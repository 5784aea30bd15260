import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CONFIG_FILE, parseNotApplicable, readNotApplicable } from '../../cis/benchmark.ts';
import { REPO_ROOT } from '../../bed/bed.ts';
import { parseToml } from '../../../lib/config/toml.ts';
import { fromYaml } from '../../../lib/util/yaml.ts';
import { KUBECONFIG, KUBELET_CONFIG, KUBELET_KUBECONFIG } from '../../../lib/constants.ts';
import { RECOVERY_POD } from '../../../manifests/recovery.ts';
import { kubeletDropIn } from '../../../lib/steps/bootstrap/kubelet.ts';
import type { ResolvedConfig } from '../../../lib/types.ts';

interface Paths {
  kubeletConfigDir: string;
  secretsDir: string;
  certificatesDir: string;
  etcdEnvironmentFile: string;
  etcdDataDir: string;
  systemdDir: string;
}
const distros = readdirSync(join(REPO_ROOT, 'distros')).map((d) => {
  const file = join(REPO_ROOT, 'distros', d, `${d}.toml`);
  return { name: d, ...(parseToml(readFileSync(file, 'utf8'), file) as { paths: Paths; units: { kubelet: string } }) };
});
const config = fromYaml(readFileSync(CONFIG_FILE, 'utf8'), CONFIG_FILE) as Record<string, Record<string, Record<string, string[] | string>>>;

test('test/cis/config.yaml: every distro\'s paths are among kube-bench\'s candidates (so a distro change breaks this test)', () => {
  assert.ok(distros.length >= 2);
  for (const { name, paths, units } of distros) {
    const has = (target: string, component: string, list: string, path: string) =>
      assert.ok((config[target]?.[component]?.[list] as string[] | undefined)?.includes(path), `${name}: ${path} not in ${target}.${component}.${list}`);
    for (const target of ['master', 'etcd']) {
      has(target, 'etcd', 'datadirs', paths.etcdDataDir);
      has(target, 'etcd', 'confs', paths.etcdEnvironmentFile);
    }
    // lib/steps/recovery/recovery.ts writes the recovery static pod into secretsDir/recovery/.
    has('master', 'apiserver', 'confs', join(paths.secretsDir, 'recovery', `${RECOVERY_POD}.yaml`));
    has('master', 'scheduler', 'kubeconfig', join(paths.secretsDir, KUBECONFIG.scheduler));
    has('master', 'controllermanager', 'kubeconfig', join(paths.secretsDir, KUBECONFIG.controllerManager));
    has('node', 'kubelet', 'confs', join(paths.kubeletConfigDir, KUBELET_CONFIG));
    has('node', 'kubelet', 'kubeconfig', join(paths.kubeletConfigDir, KUBELET_KUBECONFIG));
    // The drop-in kubeception writes comes first: it is the kubelet unit's file kubeception owns.
    const dropIn = kubeletDropIn({ distro: { paths, units } } as unknown as ResolvedConfig);
    assert.equal((config.node!.kubelet!.svc as string[])[0], dropIn, `${name}: svc starts with ${dropIn}`);
    for (const svc of [dropIn, join(paths.systemdDir, units.kubelet)]) {
      has('node', 'kubelet', 'svc', svc);
      has('node', 'kubelet', 'confs', svc);
    }
    has('node', 'kubelet', 'cafile', join(paths.certificatesDir, 'ca.crt'));
  }
});

test('test/cis/config.yaml: a distro\'s data dir that is another\'s parent comes after it (kube-bench takes the first that exists)', () => {
  const dirs = config.etcd!.etcd!.datadirs as string[];
  for (const [i, d] of dirs.entries()) for (const later of dirs.slice(i + 1)) assert.ok(!later.startsWith(`${d}/`), `${later} must come before ${d}`);
});

test('not-applicable.yaml: parses, the pod specification file checks of the self-hosted components, each with its reason', () => {
  const list = readNotApplicable();
  assert.deepEqual(list.map((e) => e.id), ['1.1.3', '1.1.4', '1.1.5', '1.1.6']);
  for (const e of list) assert.match(e.reason, /(DaemonSet|Deployment)/);
});

test('parseNotApplicable: a number id, a missing reason, a repeated id → an error naming the file and entry', () => {
  assert.throws(() => parseNotApplicable('- id: 1.1\n  reason: a reason long enough to count\n', 'na.yaml'), /na\.yaml: entry 1: id 1\.1 is not a check id/);
  assert.throws(() => parseNotApplicable("- id: '1.1.1'\n", 'na.yaml'), /na\.yaml: 1\.1\.1: give the reason/);
  assert.throws(() => parseNotApplicable("- { id: '1.1.1', reason: a reason long enough to count }\n- { id: '1.1.1', reason: a reason long enough to count }\n", 'na.yaml'), /1\.1\.1 is listed twice/);
  assert.throws(() => parseNotApplicable('id: 1.1.1\n', 'na.yaml'), /na\.yaml: want a list/);
});
