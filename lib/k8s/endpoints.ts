/**
 * Where the two apiservers answer and where the kubeconfigs live: pure functions of the config, used
 * by the steps and the manifest builders alike.
 */
import { join } from 'node:path';
import { KUBECONFIG, KUBELET_KUBECONFIG } from '../constants.ts';
import { isIP, url } from '../net/cidr.ts';
import { endpointHost } from '../pki/san.ts';
import type { ResolvedConfig } from '../types.ts';

/**
 * `https://<advertiseAddress>:<port>` of the final and the bootstrap apiserver, and `loopback`:
 * `https://127.0.0.1:<bindPort>`, the final apiserver of whichever control-plane node a client runs
 * on — what the self-hosted controllers' shared kubeconfig names, so a controller-manager or
 * scheduler replica on any control-plane node talks to its own node's apiserver (kubeadm's local
 * endpoint) and none depends on the first node. `127.0.0.1` is in the serving certificate's SANs.
 */
export function apiserverUrls(config: ResolvedConfig) {
  const adv = config.localAPIEndpoint.advertiseAddress;
  return {
    final: url('https', adv, config.localAPIEndpoint.bindPort),
    bootstrap: url('https', adv, config.bootstrapAPIEndpoint.bindPort),
    loopback: url('https', '127.0.0.1', config.localAPIEndpoint.bindPort),
  };
}

/**
 * The cluster's stable apiserver URL, as kubeadm puts it in cluster-info and the kubeconfigs it hands
 * out: `https://<controlPlaneEndpoint>` (port default `localAPIEndpoint.bindPort`) if set, else the
 * final apiserver on the advertise address.
 */
export function controlPlaneUrl(config: ResolvedConfig): string {
  const cpe = config.controlPlaneEndpoint;
  if (!cpe) return apiserverUrls(config).final;
  const port = isIP(cpe) ? undefined : /:(\d+)$/.exec(cpe)?.[1];
  return url('https', endpointHost(cpe), port ? Number(port) : config.localAPIEndpoint.bindPort);
}

/** The host workers reach the cluster by: the `controlPlaneEndpoint` host if set, else the advertise address. */
export const controlPlaneHost = (config: ResolvedConfig) => (config.controlPlaneEndpoint ? endpointHost(config.controlPlaneEndpoint) : config.localAPIEndpoint.advertiseAddress);

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

