/**
 * `kubeception certs upload [--ttl 2h]` (kubeadm's `init phase upload-certs --upload-certs`): encrypts
 * this control-plane node's shared keys (and its encryption config, if any) under a new certificate key into the Secret
 * `kube-system/kubeception-certs` (see ./certificate-key.ts), creates a bootstrap token valid as long
 * as the key, and returns the control-plane join command. The certificate key and the token are in
 * the returned command only: the caller prints it once, on purpose, and registers both as secrets so
 * no log shows them.
 *
 * API effects: Secret `bootstrap-token-<id>` (TTL proxy: no usages, expires with the key), Secret
 * `kubeception-certs` (owned by that token Secret, so the garbage collector removes it once the token
 * cleaner removed the token), Role/RoleBinding `kubeception:control-plane-certs`, a join token.
 * @throws HostStateError `pki-missing` if a shared file is missing on this node.
 * @throws InputError `usage` for a TTL above 2 h; ConfigError `config-invalid` (controlPlaneEndpoint) when
 *   the config has none: all before any API call.
 */
import { holdControlPlaneNames } from './node-identities.ts';
import { join } from 'node:path';
import { ConfigError, HostStateError, InputError } from '../errors.ts';
import { generateToken, tokenSecret } from './token.ts';
import { caCertHash, createToken, joinCommand } from './tokens-api.ts';
import { CERTS_SECRET, certsRbac, ETCD_CLIENT_URLS_ANNOTATION, encryptFiles, EXPIRES_ANNOTATION, generateCertificateKey, MAX_CERTIFICATE_KEY_TTL_MS, OPTIONAL_SHARED_FILES, SHARED_FILES } from './certificate-key.ts';
import type { Cluster, KubernetesObject } from '../k8s/client.ts';
import type { HostFiles } from '../host/files.ts';
import type { ResolvedConfig } from '../types.ts';

export interface Uploaded {
  /** The certificate key (64 hex digits). Never log it. */
  certificateKey: string;
  /** RFC 3339 instant after which the key is refused. */
  expires: string;
  /** `KUBECEPTION_TOKEN=T KUBECEPTION_CERTIFICATE_KEY=K npx kubeception run join … --control-plane` (holds the token and the key). */
  command: string;
  /** The join token in the command. */
  token: string;
}

/**
 * Uploads the shared keys under a new certificate key.
 * @param etcdClientUrls the members' client URLs (annotated on the Secret: not secret).
 * @param holdNodeNames node names held for control-plane joins (lib/join/node-identities.ts) once the
 *   inputs are checked, before anything is uploaded. @throws InputError `node-name-issued` for one a token bought.
 */
export async function uploadCerts(api: Cluster, config: ResolvedConfig, files: HostFiles, ttlMs: number, etcdClientUrls: readonly string[], now = new Date(), holdNodeNames: readonly string[] = []): Promise<Uploaded> {
  if (!config.controlPlaneEndpoint)
    throw new ConfigError('config-invalid', {
      what: 'controlPlaneEndpoint',
      why: 'it is not set: further control-plane nodes need one stable address that reaches every apiserver (kubeadm refuses the same)',
      fix: 'set controlPlaneEndpoint (a load balancer or DNS name, host:port) in kubeception.config.ts and re-run `kubeception run bootstrap` here (it re-issues the apiserver certificate and kubeconfigs), then upload',
    });
  if (!(ttlMs > 0 && ttlMs <= MAX_CERTIFICATE_KEY_TTL_MS))
    throw new InputError('usage', { what: '--ttl', why: 'a certificate key may live at most 2 h (kubeadm\'s limit): the Secret holds the cluster CA keys', fix: 'pass --ttl 2h or less' });
  const plain: Record<string, Uint8Array> = {};
  for (const [file, name] of SHARED_FILES) {
    const path = join(config.certificatesDir, file);
    const text = await files.read(path);
    if (text === undefined) throw new HostStateError('pki-missing', { what: path, why: 'a shared key of the cluster is missing on this node', fix: 'run `kubeception certs upload` on a control-plane node that has the full PKI' });
    plain[name] = Buffer.from(text);
  }
  for (const [file, name] of OPTIONAL_SHARED_FILES) {
    const text = await files.read(join(config.certificatesDir, file));
    if (text !== undefined) plain[name] = Buffer.from(text);
  }
  if (holdNodeNames.length) await holdControlPlaneNames(api, holdNodeNames);
  const expires = new Date(now.getTime() + ttlMs).toISOString().replace(/\.\d{3}Z$/, 'Z');
  const certificateKey = generateCertificateKey();
  // The TTL proxy: a token Secret that cannot authenticate (no usages), deleted by the token cleaner at expiry.
  const proxy = tokenSecret(generateToken(), ttlMs, now, 'proxy for the TTL of the kubeception-certs Secret');
  for (const k of ['usage-bootstrap-authentication', 'usage-bootstrap-signing', 'auth-extra-groups']) delete proxy.data[k];
  // Its uid from the apply's response: with a TTL of seconds the token cleaner may delete it before a
  // second read (the certs Secret it then owns is collected at once, which a join reports as expired).
  const owner = await api.applyObject<KubernetesObject & { metadata: { uid?: string } }>(proxy);
  if (!owner.metadata.uid) throw new Error(`the apiserver's answer to the apply of Secret kube-system/${proxy.metadata?.name} has no metadata.uid`);
  const secret = {
    apiVersion: 'v1', kind: 'Secret', type: 'Opaque',
    metadata: {
      name: CERTS_SECRET, namespace: 'kube-system', labels: { 'app.kubernetes.io/managed-by': 'kubeception' }, annotations: { [EXPIRES_ANNOTATION]: expires, [ETCD_CLIENT_URLS_ANNOTATION]: etcdClientUrls.join(',') },
      ownerReferences: [{ apiVersion: 'v1', kind: 'Secret', name: proxy.metadata!.name!, uid: owner.metadata.uid }],
    },
    data: encryptFiles(certificateKey, plain, expires),
  };
  await api.apply([secret as KubernetesObject, ...(certsRbac() as KubernetesObject[])]);
  const token = await createToken(api, ttlMs, 'kubeception control-plane join');
  const command = joinCommand(config, token, await caCertHash(config, files), { certificateKey });
  return { certificateKey, expires, command, token };
}
