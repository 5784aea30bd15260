/**
 * openSUSE Kubic overrides of the package's tasks: what differs from a Debian host with containerd.
 * The paths and unit names (etcd's environment in /etc/sysconfig/etcd, CRI-O's socket and unit, the
 * kubelet's directory) are data in kubic.toml; the steps below differ in what they do:
 *
 * - CRI-O is not started by default: preflight also checks that its unit exists, and a
 *   `container-runtime` step enables and starts it before the kubelet (bootstrap and join).
 * - Images are inspected and pulled through the CRI with crictl (cri-tools; `ctr` is containerd's):
 *   preflight `ImagePull` is {@link criImagePullCheck}.
 * - reset removes CRI-O's pods and containers through the CRI ({@link removeCriContainers}:
 *   `crictl rmp --force --all`; CRI-O releases their namespaces, mounts and CNI attachments).
 * - `upgrade node` installs the kubelet itself, the transactional way ({@link installKubeletTransactional}):
 *   after the drain, `transactional-update pkg install kubernetes<X.Y>-kubelet` and a reboot into the new
 *   snapshot; run again after the boot, it goes on. So its preflight accepts an older kubelet binary.
 *
 * A site adds a distro by copying this directory to `<site>/distros/<name>/` (renaming the TOML to
 * `<name>.toml`) and editing both files: docs/configuration.md, "A distro of your own".
 */
import { overrides, step } from 'kubeception/dsl';
import {
  containerRuntimeCheck,
  controlPlaneChecks,
  criImagePullCheck,
  ensureContainerRuntime,
  networkChecks,
  pkiPreflightCheck,
  installKubeletTransactional,
  kubeletBinaryAtTarget,
  removeCriContainers,
  runPreflight,
  upgradeNodePreflight,
  type Check,
  type Context,
  type UpgradeNodeContext,
} from 'kubeception/steps';
import type bootstrap from '../../tasks/bootstrap.ts';
import type join from '../../tasks/join.ts';
import type reset from '../../tasks/reset.ts';
import type upgradeNode from '../../tasks/upgrade-node.ts';

/** The control-plane checks with the image check done through the CRI. */
const kubicControlPlaneChecks = (ctx: Context): Check[] => controlPlaneChecks(ctx).map((c) => (c.id === 'ImagePull' ? criImagePullCheck : c));

const containerRuntime = () => step('container-runtime').needs('preflight').title('container-runtime: enable and start CRI-O').run(ensureContainerRuntime);

export default {
  bootstrap: overrides<typeof bootstrap>()
    .replace(
      'preflight',
      step('preflight')
        .title('preflight (kubic): host, ports, binaries, CRI-O and its images, etcd data dir, PKI, DNS and pod network')
        .run((ctx) => runPreflight(ctx, [...kubicControlPlaneChecks(ctx), pkiPreflightCheck, containerRuntimeCheck, ...networkChecks])),
    )
    .insertBefore('kubelet-start', containerRuntime()),
  join: overrides<typeof join>().insertBefore('kubelet-start', containerRuntime()),
  'upgrade-node': overrides<typeof upgradeNode>()
    .replace(
      'upgrade-node-preflight',
      step('upgrade-node-preflight').title("upgrade-node-preflight (kubic): the kubelet binary is the cluster's version or older (installed after the drain)").run((ctx: UpgradeNodeContext) => upgradeNodePreflight(ctx, { installedLater: true })),
    )
    .insertAfter(
      'drain',
      step('kubelet-install').needs('drain').title('kubelet-install: transactional-update pkg install the cluster\'s kubelet, reboot into the snapshot').skipIf(kubeletBinaryAtTarget).timeout(1_800_000).run(installKubeletTransactional),
    ),
  reset: overrides<typeof reset>().replace(
    'remove-containers',
    step('remove-containers').needs('stop-kubelet').title("remove-containers: the kubelet's pods and containers in CRI-O (crictl rmp)").timeout(300_000).run(removeCriContainers),
  ),
};
