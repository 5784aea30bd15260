/**
 * upgrade-node: brings this node's kubelet to the cluster's version, once the distro installed that
 * kubelet. Run as `kubeception upgrade node [--kubeconfig FILE]` on each node after `upgrade apply`.
 * Copy this file to ./tasks/upgrade-node.ts on a site to customise it.
 *
 * upgrade-node-preflight → drain → kubelet-config → kubelet-restart → uncordon
 * (kubelet-restart rolls the kubelet back when the new one does not come up; a site's own
 * kubelet-install step says how to put the previous binary back with onKubeletRollback)
 */
import { step, task, type Task } from 'kubeception/dsl';
import { drainNode, nodeAtTarget, restartUpgradedKubelet, uncordonNode, upgradeKubeletConfig, upgradeNodePreflight, type UpgradeNodeContext } from 'kubeception/steps';

export default task('upgrade-node', [
  step('upgrade-node-preflight').title("upgrade-node-preflight: the kubelet binary is the cluster's version").run(upgradeNodePreflight),
  step('drain').needs('upgrade-node-preflight').title('drain: cordon, evict pods (PodDisruptionBudgets honoured; DaemonSet, static and self-hosted control-plane pods stay)').skipIf(nodeAtTarget).timeout(360_000).run(drainNode),
  step('kubelet-config').needs('drain').title('kubelet-config: config.yaml and unit drop-in').run(upgradeKubeletConfig),
  step('kubelet-restart').needs('kubelet-config').title('kubelet-restart: restart, wait for Node Ready at the new version (else roll back to the previous kubelet)').timeout(330_000).run(restartUpgradedKubelet),
  step('uncordon').needs('kubelet-restart').title('uncordon: lift the cordon drain set').run(uncordonNode),
]) satisfies Task<UpgradeNodeContext>;
