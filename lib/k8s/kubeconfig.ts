/**
 * Kubeconfig files with embedded credentials (kubeadm's shape: one cluster `kubernetes`, one user,
 * one context `<user>@kubernetes`). Rendering is deterministic, so a re-run writes nothing.
 * @see https://kubernetes.io/docs/concepts/configuration/organize-cluster-access-kubeconfig/
 */
import { fromYaml, toYaml } from '../util/yaml.ts';

/** What a kubeconfig holds. PEM strings; `server` an https URL. */
export interface KubeconfigSpec {
  server: string;
  caPem: string;
  user: string;
  certPem: string;
  keyPem: string;
}

/** A kubeconfig that authenticates with a bearer token (a bootstrap kubeconfig for TLS bootstrapping). */
export interface TokenKubeconfigSpec {
  server: string;
  caPem: string;
  user: string;
  token: string;
}

/**
 * A kubeconfig whose client certificate and key are one PEM file the kubelet rotates
 * (`<kubeletConfigDir>/pki/kubelet-client-current.pem`), never inline data (kubeadm#1317).
 */
export interface FileKubeconfigSpec {
  server: string;
  caPem: string;
  user: string;
  certFile: string;
}

const b64 = (s: string) => Buffer.from(s).toString('base64');
const unb64 = (s: unknown) => (typeof s === 'string' ? Buffer.from(s, 'base64').toString('utf8') : undefined);

/** Renders a kubeconfig as YAML. */
export function renderKubeconfig(k: KubeconfigSpec | TokenKubeconfigSpec | FileKubeconfigSpec): string {
  const context = `${k.user}@kubernetes`;
  const user = 'token' in k ? { token: k.token } : 'certFile' in k ? { 'client-certificate': k.certFile, 'client-key': k.certFile } : { 'client-certificate-data': b64(k.certPem), 'client-key-data': b64(k.keyPem) };
  return toYaml({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'kubernetes', cluster: { 'certificate-authority-data': b64(k.caPem), server: k.server } }],
    contexts: [{ name: context, context: { cluster: 'kubernetes', user: k.user } }],
    'current-context': context,
    users: [{ name: k.user, user }],
    preferences: {},
  });
}

/**
 * What can be read back from an existing kubeconfig; fields absent if unreadable. `certFile` is the
 * `client-certificate` path a kubelet writes after TLS bootstrapping. `error` says why the text is
 * not a kubeconfig at all (YAML error, not a mapping): callers must not treat that as "no key yet".
 */
export function parseKubeconfig(text: string, source: string): Partial<KubeconfigSpec> & { certFile?: string; error?: string } {
  let doc: any;
  try {
    doc = fromYaml(text, source);
  } catch (err) {
    return { error: (err as Error).message.split('\n')[0] };
  }
  if (!doc || typeof doc !== 'object' || Array.isArray(doc)) return { error: 'not a YAML mapping' };
  const cluster = doc?.clusters?.[0]?.cluster ?? {};
  const user = doc?.users?.[0] ?? {};
  return {
    server: typeof cluster.server === 'string' ? cluster.server : undefined,
    caPem: unb64(cluster['certificate-authority-data']),
    user: typeof user.name === 'string' ? user.name : undefined,
    certPem: unb64(user.user?.['client-certificate-data']),
    keyPem: unb64(user.user?.['client-key-data']),
    certFile: typeof user.user?.['client-certificate'] === 'string' ? user.user['client-certificate'] : undefined,
  };
}
