/**
 * Bootstrap tokens in the cluster: list, create, delete, the public token index the join service
 * reads, the cluster-info ConfigMap, and the join command a worker runs.
 */
import { join } from 'node:path';
import { JOIN_NODE_PORT, SECRET_ENV } from '../constants.ts';
import { url } from '../net/cidr.ts';
import { spkiSha256 } from '../pki/x509.ts';
import { controlPlaneHost } from '../k8s/endpoints.ts';
import { generateToken, remainingMs, tokenInfo, tokenSecret, type TokenInfo } from './token.ts';
import { entryFor, nextIndex, parseIndex, renderIndex, TOKEN_INDEX_NAME, type IndexEntry } from './token-index.ts';
import type { Cluster, KubernetesObject } from '../k8s/client.ts';
import type { HostFiles } from '../host/files.ts';
import type { ResolvedConfig } from '../types.ts';

/** The bootstrap tokens in kube-system (public facts only), soonest expiry first. */
export async function listTokens(api: Cluster): Promise<TokenInfo[]> {
  const secrets = await api.list<{ type?: string; data?: Record<string, string>; metadata?: { name?: string } }>('v1', 'Secret', 'kube-system', undefined);
  return secrets
    .map((s) => tokenInfo(s))
    .filter((t): t is TokenInfo => t !== undefined)
    .sort((a, b) => (a.expiration ?? '9').localeCompare(b.expiration ?? '9'));
}

const indexRef = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: TOKEN_INDEX_NAME, namespace: 'kube-system' } };

/**
 * Rewrites the token index from the token Secrets (ids and expirations only): entries of gone tokens
 * stay while in their grace, `set` entries override, `drop` ids are removed (a deleted token is
 * "unknown" at once). @returns the tokens listed.
 */
export async function syncTokenIndex(api: Cluster, change: { set?: [string, IndexEntry]; drop?: string } = {}): Promise<TokenInfo[]> {
  const tokens = await listTokens(api);
  const current = await api.read<KubernetesObject & { data?: Record<string, string> }>(indexRef);
  const index = nextIndex(parseIndex(current?.data), tokens, Date.now());
  if (change.set) index.set(...change.set);
  if (change.drop) index.delete(change.drop);
  await api.apply([{ ...indexRef, metadata: { ...indexRef.metadata, labels: { 'app.kubernetes.io/managed-by': 'kubeception' } }, data: renderIndex(index) } as KubernetesObject]);
  return tokens;
}

/**
 * Creates a new token Secret (kubeadm's format, usages authentication + signing) and its index entry.
 * @returns the token (`<id>.<secret>`; never log it).
 */
export async function createToken(api: Cluster, ttlMs: number, description?: string): Promise<string> {
  const token = generateToken();
  const now = new Date();
  await api.apply([tokenSecret(token, ttlMs, now, description)]);
  await syncTokenIndex(api, { set: [token.slice(0, 6), entryFor(Date.parse(new Date(now.getTime() + ttlMs).toISOString().replace(/\.\d{3}Z$/, 'Z')), ttlMs)] });
  return token;
}

/** Deletes token `id` (its Secret and index entry). @returns false if there was no such Secret. */
export async function deleteToken(api: Cluster, id: string): Promise<boolean> {
  const gone = await api.delete({ apiVersion: 'v1', kind: 'Secret', metadata: { name: `bootstrap-token-${id}`, namespace: 'kube-system' } });
  await syncTokenIndex(api, { drop: id });
  return gone;
}

/** Deletes every expired token Secret the tokencleaner has not removed yet (any creator, as it does). */
export async function deleteExpiredTokens(api: Cluster): Promise<string[]> {
  const now = new Date();
  const expired = (await listTokens(api)).filter((t) => remainingMs(t, now) <= 0);
  for (const t of expired) await api.delete({ apiVersion: 'v1', kind: 'Secret', metadata: { name: t.secretName, namespace: 'kube-system' } });
  return expired.map((t) => t.id);
}

/** The URL of the join service: the controlPlaneEndpoint host (or the advertise address), NodePort 30000. */
export const joinUrl = (config: ResolvedConfig) => url('https', controlPlaneHost(config), JOIN_NODE_PORT);

/** `sha256:<hex>` of the cluster CA, read from `certificatesDir/ca.crt`. */
export async function caCertHash(config: ResolvedConfig, files: HostFiles): Promise<string> {
  const path = join(config.certificatesDir, 'ca.crt');
  return spkiSha256((await files.read(path)) ?? '', path);
}

/**
 * The full join command, as `kubeadm token create --print-join-command` prints it, except that the
 * secrets are environment assignments before the command, not flags: a process's command line is
 * readable by every local user (`/proc/<pid>/cmdline`, `ps`) for as long as the join runs, a root
 * process's environment by root only. With `certificateKey`, the control-plane join.
 * @returns `KUBECEPTION_TOKEN=<token> [KUBECEPTION_CERTIFICATE_KEY=<key>] npx kubeception run join
 *   --url <join URL> --ca-cert-hash <hash> [--control-plane]` (holds the secrets: print it once, never log it).
 */
export function joinCommand(config: ResolvedConfig, token: string, hash: string, opts: { certificateKey?: string } = {}): string {
  const env = [`${SECRET_ENV.token}=${token}`, ...(opts.certificateKey ? [`${SECRET_ENV.certificateKey}=${opts.certificateKey}`] : [])];
  return `${env.join(' ')} npx kubeception run join --url ${joinUrl(config)} --ca-cert-hash ${hash}${opts.certificateKey ? ' --control-plane' : ''}`;
}
