/**
 * Bootstrap tokens in the cluster: list, create, and the join command a worker runs.
 */
import { join } from 'node:path';
import { JOIN_NODE_PORT } from '../constants.ts';
import { url } from '../net/cidr.ts';
import { spkiSha256 } from '../pki/x509.ts';
import { generateToken, remainingMs, tokenInfo, tokenSecret, type TokenInfo } from './token.ts';
import { tokenReaderRole } from '../../manifests/join-service.ts';
import type { Cluster } from '../k8s/client.ts';
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

/**
 * Creates a new token Secret and lets the join service read it (the token-reader Role names every
 * token Secret; a new one must be added before a worker can use it).
 * @returns the token (`<id>.<secret>`; never log it).
 */
export async function createToken(api: Cluster, ttlMs: number, description?: string): Promise<string> {
  const token = generateToken();
  await api.apply([tokenSecret(token, ttlMs, new Date(), description)]);
  await api.apply([tokenReaderRole((await listTokens(api)).map((t) => t.secretName))]);
  return token;
}

/** Deletes kubeception's tokens that expired more than `graceMs` ago (the job tokencleaner would do at once). */
export async function deleteStaleTokens(api: Cluster, graceMs: number, description: string): Promise<string[]> {
  const now = new Date();
  const stale = (await listTokens(api)).filter((t) => t.description === description && remainingMs(t, now) < -graceMs);
  for (const t of stale) await api.delete({ apiVersion: 'v1', kind: 'Secret', metadata: { name: t.secretName, namespace: 'kube-system' } });
  return stale.map((t) => t.id);
}

/** The URL of the join service on this control-plane node. */
export const joinUrl = (config: ResolvedConfig) => url('https', config.localAPIEndpoint.advertiseAddress, JOIN_NODE_PORT);

/** `sha256:<hex>` of the cluster CA, read from `certificatesDir/ca.crt`. */
export async function caCertHash(config: ResolvedConfig, files: HostFiles): Promise<string> {
  const path = join(config.certificatesDir, 'ca.crt');
  return spkiSha256((await files.read(path)) ?? '', path);
}

/** The full join command, as `kubeadm token create --print-join-command` prints it. */
export function joinCommand(config: ResolvedConfig, token: string, hash: string): string {
  return `npx kubeception run join --url ${joinUrl(config)} --token ${token} --ca-cert-hash ${hash}`;
}
