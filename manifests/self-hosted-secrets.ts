/**
 * What the self-hosted control plane reads from the API instead of the host: one Secret per
 * component with its PKI files and kubeconfig, and one ServiceAccount per component (no token
 * mounted: they authenticate with client certificates). The caller reads the files; this module only
 * shapes them.
 *
 * Secrets carry base64 `data`, not `stringData`: `data` is what the apiserver stores and returns, so
 * a server-side re-apply of the same files is a no-op and a read-back compares equal.
 * @see https://kubernetes.io/docs/concepts/configuration/secret/
 */
import type { V1Secret, V1ServiceAccount } from '@kubernetes/client-node';
import { KubeceptionError } from '../lib/errors.ts';
import { parseKubeconfig } from '../lib/k8s/kubeconfig.ts';
import { apiserverUrls } from '../lib/k8s/endpoints.ts';
import type { ResolvedConfig } from '../lib/types.ts';
import { MANAGED_BY, NAMESPACE, type Manifest } from './common.ts';
import { PKI_FILES, type PkiFile } from './flags.ts';

/**
 * The files the self-hosted Secrets hold, read by the caller.
 * `pki`: PEM text of each file under `certificatesDir` (`certSpecs`/`saKeyPairSpec` paths; every
 * {@link PkiFile} is required). `kubeconfigs`: the text of `controller-manager.conf` and
 * `scheduler.conf` (`kubeconfigPaths(config)`), whose server must be the final apiserver.
 */
export interface SelfHostedSecrets {
  pki: Record<PkiFile, string>;
  kubeconfigs: { controllerManager: string; scheduler: string };
}

/** Where each self-hosted container mounts its Secret (bootkube's path). */
export const SECRET_MOUNT = '/etc/kubernetes/secrets';
/** Key of the kubeconfig in the controller-manager and scheduler Secrets. */
export const KUBECONFIG_KEY = 'kubeconfig';

/** The PKI files of each component's Secret; every component also gets a ServiceAccount of its name. */
export const SECRET_PKI_FILES = {
  'kube-apiserver': [
    'ca.crt', 'apiserver.crt', 'apiserver.key', 'apiserver-kubelet-client.crt', 'apiserver-kubelet-client.key',
    'front-proxy-ca.crt', 'front-proxy-client.crt', 'front-proxy-client.key',
    'etcd/ca.crt', 'apiserver-etcd-client.crt', 'apiserver-etcd-client.key', 'sa.pub', 'sa.key',
  ],
  'kube-controller-manager': ['ca.crt', 'ca.key', 'sa.key', 'front-proxy-ca.crt'],
  'kube-scheduler': [],
} as const satisfies Record<string, readonly PkiFile[]>;

/** A self-hosted component: the name of its Secret, ServiceAccount, workload and container. */
export type SelfHostedComponent = keyof typeof SECRET_PKI_FILES;
export const SELF_HOSTED_COMPONENTS = Object.keys(SECRET_PKI_FILES) as SelfHostedComponent[];

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');

function inputError(what: string, why: string): KubeceptionError {
  return new KubeceptionError('self-hosted-input', { what, why, fix: 'run the certs and kubeconfig steps, then pass the files they wrote' });
}

/**
 * Checks the inputs: every PKI file present and PEM, each kubeconfig's server the node-local final apiserver (`https://127.0.0.1:<bindPort>`)
 * (a bootstrap-*.conf passed by mistake would strand the controllers when the bootstrap apiserver goes).
 * @throws KubeceptionError `self-hosted-input` naming the file.
 */
export function checkSecrets(config: ResolvedConfig, secrets: SelfHostedSecrets): void {
  for (const file of Object.keys(PKI_FILES) as PkiFile[])
    if (!secrets.pki[file]?.includes('-----BEGIN ')) throw inputError(`secrets.pki['${file}']`, 'missing or not PEM');
  const final = apiserverUrls(config).loopback;
  for (const [name, text] of Object.entries(secrets.kubeconfigs)) {
    const { server } = parseKubeconfig(text, `secrets.kubeconfigs.${name}`);
    if (server !== final) throw inputError(`secrets.kubeconfigs.${name}`, `server is ${server ?? '(unreadable)'}, not the node-local final apiserver ${final}`);
  }
}

/** `kube-system/<component>` Secret of type Opaque with the component's files as base64 `data`. */
function componentSecret(component: SelfHostedComponent, secrets: SelfHostedSecrets): Manifest<V1Secret> {
  const data: Record<string, string> = {};
  for (const file of SECRET_PKI_FILES[component]) data[PKI_FILES[file]] = b64(secrets.pki[file]);
  if (component === 'kube-controller-manager') data[KUBECONFIG_KEY] = b64(secrets.kubeconfigs.controllerManager);
  if (component === 'kube-scheduler') data[KUBECONFIG_KEY] = b64(secrets.kubeconfigs.scheduler);
  return { apiVersion: 'v1', kind: 'Secret', metadata: { name: component, namespace: NAMESPACE, labels: { ...MANAGED_BY } }, type: 'Opaque', data };
}

/** The three Secrets, apiserver first. @throws see {@link checkSecrets}. */
export function selfHostedSecrets(config: ResolvedConfig, secrets: SelfHostedSecrets): (Manifest<V1Secret>)[] {
  checkSecrets(config, secrets);
  return SELF_HOSTED_COMPONENTS.map((c) => componentSecret(c, secrets));
}

/** One ServiceAccount per component, tokens not mounted (the pods use client certificates). */
export function selfHostedServiceAccounts(): (Manifest<V1ServiceAccount>)[] {
  return SELF_HOSTED_COMPONENTS.map((name) => ({
    apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace: NAMESPACE, labels: { ...MANAGED_BY } }, automountServiceAccountToken: false,
  }));
}
