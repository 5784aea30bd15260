/**
 * distros/kubic's `kubelet-install` of `upgrade node` (lib/steps/upgrade/kubelet-install.ts) against a
 * recording shell (pure unit: the step runs two commands and decides on their exit codes). The bed runs
 * it for real on a kubic host: test/e2e/kubic.test.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { installKubeletTransactional, kubeletBinaryAtTarget, kubicKubeletPackage } from '../../../lib/steps/upgrade/kubelet-install.ts';
import type { UpgradeNodeContext } from '../../../lib/steps/contexts.ts';
import { sampleConfig } from '../pki/fixtures.ts';

function ctx(binary: string, installCode: number, dryRun = false) {
  const ran: string[] = [];
  const c = {
    config: sampleConfig(),
    dryRun,
    state: { upgradeNode: { target: 'v1.37.2', binary, running: binary, worker: true } },
    sh: { exec: async (argv: string[]) => (ran.push(argv.join(' ')), { code: argv[0] === 'transactional-update' ? installCode : 0, stdout: '', stderr: installCode ? "Package 'kubernetes1.37-kubelet' not found." : '' }) },
  } as unknown as UpgradeNodeContext;
  return { c, ran };
}

test('the package is openSUSE\'s name for the minor', () => {
  assert.equal(kubicKubeletPackage('v1.37.2'), 'kubernetes1.37-kubelet');
  assert.equal(kubicKubeletPackage('v1.35.0-rc.1'), 'kubernetes1.35-kubelet');
});

test('skipped when the binary already is the cluster\'s version, run when it is older', () => {
  assert.equal(kubeletBinaryAtTarget(ctx('v1.37.2', 0).c), 'the kubelet binary is v1.37.2');
  assert.equal(kubeletBinaryAtTarget(ctx('v1.34.4', 0).c), false);
});

test('installs into a snapshot, queues the reboot, stops the run with reboot-required', async () => {
  const { c, ran } = ctx('v1.34.4', 0);
  await assert.rejects(installKubeletTransactional(c), (e: any) => e.code === 'reboot-required' && /kubeception upgrade node/.test(e.fix));
  assert.deepEqual(ran, ['transactional-update --non-interactive pkg install kubernetes1.37-kubelet', 'systemctl reboot --no-block']);
});

test('a failed install says why and does not reboot', async () => {
  const { c, ran } = ctx('v1.34.4', 104);
  await assert.rejects(installKubeletTransactional(c), (e: any) => e.code === 'kubelet-install' && /exit 104: Package 'kubernetes1\.37-kubelet' not found\./.test(e.why));
  assert.deepEqual(ran, ['transactional-update --non-interactive pkg install kubernetes1.37-kubelet']);
});

test('under --dry-run: the install is recorded, no reboot, no error', async () => {
  const { c, ran } = ctx('v1.34.4', 0, true);
  assert.equal((await installKubeletTransactional(c)).changed, true);
  assert.deepEqual(ran, ['transactional-update --non-interactive pkg install kubernetes1.37-kubelet']);
});
