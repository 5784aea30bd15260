/**
 * What the self-hosted control plane reads from the control-plane node it runs on: its PKI files
 * under `certificatesDir` and the controllers' kubeconfigs, mounted read-only from the host (hostPath,
 * at the same paths: kubeadm's way), plus one ServiceAccount per component (no token mounted: they
 * authenticate with client certificates).
 *
 * No private key of the control plane is stored in the API. bootkube kept them in Secrets, which the
 * Node authorizer lets any holder of a control-plane node's kubelet identity read (the Secrets of the
 * pods bound to that node): one stolen or wrongly issued node certificate was the cluster CA key.
 * Each control-plane node has these files anyway (bootstrap writes them; a control-plane join gets the
 * shared keys through the certificate-key path and issues its own leaves), so every apiserver serves
 * with its own node's certificate. A change of the files rolls the workload through a digest of them
 * on the pod template ({@link FILES_DIGEST}).
 * @see https://kubernetes.io/docs/reference/access-authn-authz/node/ (what the Node authorizer allows)
 * @see kubernetes/cmd/kubeadm/app/phases/controlplane/volumes.go
 */
import { createHash } from 'node:crypto';
import type { V1ServiceAccount } from '@kubernetes/client-node';
import { KubeceptionError } from '../lib/errors.ts';
import { parseKubeconfig } from '../lib/k8s/kubeconfig.ts';
import { apiserverUrls } from '../lib/k8s/endpoints.ts';
import type { ResolvedConfig } from '../lib/types.ts';
import { MANAGED_BY, NAMESPACE, type Manifest } from './common.ts';
import { PKI_FILES, type PkiFile } from './flags.ts';
import { hardeningFiles } from './apiserver-hardening.ts';

/**
 * The files this node's self-hosted components read, as read by the caller (only for the digest and
 * the checks: none of it goes into an object). `pki`: PEM text of each file under `certificatesDir`
 * (every {@link PkiFile} is required). `kubeconfigs`: the text of `controller-manager.conf` and
 * `scheduler.conf` (`kubeconfigPaths(config)`), whose server must be the node-local final apiserver.
 */
export interface SelfHostedInputs {
  pki: Record<PkiFile, string>;
  kubeconfigs: { controllerManager: string; scheduler: string };
  /** The text of each of the apiserver's hardening files, by absolute path (every `hardeningFiles(config)` entry is required). */
  apiServerFiles?: Record<string, string>;
}

/** The PKI files each component reads (from the host's `certificatesDir`); every component also gets a ServiceAccount of its name. */
export const COMPONENT_PKI_FILES = {
  'kube-apiserver': [
    'ca.crt', 'apiserver.crt', 'apiserver.key', 'apiserver-kubelet-client.crt', 'apiserver-kubelet-client.key',
    'front-proxy-ca.crt', 'front-proxy-client.crt', 'front-proxy-client.key',
    'etcd/ca.crt', 'apiserver-etcd-client.crt', 'apiserver-etcd-client.key', 'sa.pub', 'sa.key',
  ],
  'kube-controller-manager': ['ca.crt', 'ca.key', 'sa.key', 'front-proxy-ca.crt'],
  'kube-scheduler': [],
} as const satisfies Record<string, readonly PkiFile[]>;

/** A self-hosted component: the name of its ServiceAccount, workload and container. */
export type SelfHostedComponent = keyof typeof COMPONENT_PKI_FILES;
export const SELF_HOSTED_COMPONENTS = Object.keys(COMPONENT_PKI_FILES) as SelfHostedComponent[];

/** Annotation on each self-hosted pod template: SHA-256 of the files its component reads on the applying node. */
export const FILES_DIGEST = 'kubeception.io/files-sha256';

/**
 * Secrets older kubeception versions kept the control plane's keys in (`kube-system/<component>`):
 * deleted once the workloads no longer mount them.
 */
export const LEGACY_KEY_SECRETS = SELF_HOSTED_COMPONENTS;

function inputError(what: string, why: string): KubeceptionError {
  return new KubeceptionError('self-hosted-input', { what, why, fix: 'run the certs and kubeconfig steps, then pass the files they wrote' });
}

/**
 * Checks the inputs: every PKI file present and PEM, each kubeconfig's server the node-local final
 * apiserver (`https://127.0.0.1:<bindPort>`: a bootstrap-*.conf in its place would strand the
 * controllers when the bootstrap apiserver goes).
 * @throws KubeceptionError `self-hosted-input` naming the file.
 */
export function checkInputs(config: ResolvedConfig, inputs: SelfHostedInputs): void {
  for (const file of PKI_FILES)
    if (!inputs.pki[file]?.includes('-----BEGIN ')) throw inputError(`inputs.pki['${file}']`, 'missing or not PEM');
  for (const path of hardeningFiles(config))
    if (inputs.apiServerFiles?.[path] === undefined) throw inputError(`inputs.apiServerFiles['${path}']`, 'missing: the kube-apiserver reads it (apiServer.auditLog, podSecurity, secretsEncryption)');
  const final = apiserverUrls(config).loopback;
  for (const [name, text] of Object.entries(inputs.kubeconfigs)) {
    const { server } = parseKubeconfig(text, `inputs.kubeconfigs.${name}`);
    if (server !== final) throw inputError(`inputs.kubeconfigs.${name}`, `server is ${server ?? '(unreadable)'}, not the node-local final apiserver ${final}`);
  }
}

/** SHA-256 (hex) over the files `component` reads, in a fixed order (name, then content). */
export function filesDigest(component: SelfHostedComponent, inputs: SelfHostedInputs): string {
  const h = createHash('sha256');
  for (const file of COMPONENT_PKI_FILES[component]) h.update(`${file}\0${inputs.pki[file]}\0`);
  // The hardening files (their paths, so turning one on or off rolls too): kube-apiserver only.
  if (component === 'kube-apiserver') for (const [path, text] of Object.entries(inputs.apiServerFiles ?? {}).sort(([a], [b]) => (a < b ? -1 : 1))) h.update(`${path}\0${text}\0`);
  if (component === 'kube-controller-manager') h.update(`kubeconfig\0${inputs.kubeconfigs.controllerManager}\0`);
  if (component === 'kube-scheduler') h.update(`kubeconfig\0${inputs.kubeconfigs.scheduler}\0`);
  return h.digest('hex');
}

/** One ServiceAccount per component, tokens not mounted (the pods use client certificates). */
export function selfHostedServiceAccounts(): (Manifest<V1ServiceAccount>)[] {
  return SELF_HOSTED_COMPONENTS.map((name) => ({
    apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace: NAMESPACE, labels: { ...MANAGED_BY } }, automountServiceAccountToken: false,
  }));
}
