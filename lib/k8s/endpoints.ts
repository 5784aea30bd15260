/**
 * Where the two apiservers answer and where the kubeconfigs live: pure functions of the config, used
 * by the steps and the manifest builders alike.
 */
import { join } from 'node:path';
import { KUBECONFIG, KUBELET_KUBECONFIG } from '../constants.ts';
import { url } from '../net/cidr.ts';
import type { ResolvedConfig } from '../types.ts';

/** `https://<advertiseAddress>:<port>` of the final and the bootstrap apiserver. */
export function apiserverUrls(config: ResolvedConfig) {
  const adv = config.localAPIEndpoint.advertiseAddress;
  return { final: url('https', adv, config.localAPIEndpoint.bindPort), bootstrap: url('https', adv, config.bootstrapAPIEndpoint.bindPort) };
}

/** Paths of every kubeconfig this step writes. */
export function kubeconfigPaths(config: ResolvedConfig) {
  const s = config.distro.paths.secretsDir;
  return {
    admin: join(s, KUBECONFIG.admin),
    controllerManager: join(s, KUBECONFIG.controllerManager),
    scheduler: join(s, KUBECONFIG.scheduler),
    bootstrapAdmin: join(s, `bootstrap-${KUBECONFIG.admin}`),
    bootstrapControllerManager: join(s, `bootstrap-${KUBECONFIG.controllerManager}`),
    bootstrapScheduler: join(s, `bootstrap-${KUBECONFIG.scheduler}`),
    kubelet: join(config.distro.paths.kubeletConfigDir, KUBELET_KUBECONFIG),
  };
}

