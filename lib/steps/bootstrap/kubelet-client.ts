/**
 * The control-plane kubelet's client certificate as the kubelet's own certificate store keeps it:
 * `<kubeletConfigDir>/pki/kubelet-client-<YYYY-MM-DD-HH-MM-SS>.pem` (certificate, then key; 0600) and
 * the symlink `kubelet-client-current.pem` to it, which the kubelet kubeconfig names (never inline
 * data, kubeadm#1317). With `rotateCertificates: true` the kubelet renews it by CSR and moves the
 * symlink itself; kubeception writes a new file only when its certificate must be (re-)issued.
 *
 * Host effects: the PEM file (0600, dir 0700) and the symlink (`ln -sfn`); `state.kubeletRestart` set
 * when the certificate changed (the kubelet reads it at start).
 * @see k8s.io/client-go/util/certificate/certificate_store.go (the file store the kubelet uses)
 */
import { join } from 'node:path';
import { firstCertificatePem } from '../../pki/keys.ts';
import { parseKubeconfig } from '../../k8s/kubeconfig.ts';
import { kubeconfigPaths } from '../../k8s/endpoints.ts';
import type { Context } from '../../context.ts';
import type { KubeletState } from '../contexts.ts';
import type { ResolvedConfig } from '../../types.ts';

/** The symlink the kubelet kubeconfig names. */
export const kubeletClientCurrent = (config: ResolvedConfig) => join(config.distro.paths.kubeletConfigDir, 'pki', 'kubelet-client-current.pem');

const block = (pem: string, re: RegExp) => pem.match(re)?.[0];
/** Splits a combined PEM into its certificate and private key. */
export function splitPem(pem: string): { certPem?: string; keyPem?: string } {
  const certPem = firstCertificatePem(pem);
  const keyPem = block(pem, /-----BEGIN (?:RSA |EC )?PRIVATE KEY-----[\s\S]*?-----END (?:RSA |EC )?PRIVATE KEY-----\n?/);
  return { ...(certPem && { certPem }), ...(keyPem && { keyPem: keyPem.endsWith('\n') ? keyPem : `${keyPem}\n` }) };
}

/** The kubelet's current client certificate and key: from the file its kubeconfig names, or inline (older kubeconfigs). */
export async function readKubeletClient(ctx: Pick<Context, 'files' | 'config'>): Promise<{ certPem?: string; keyPem?: string; server?: string }> {
  const path = kubeconfigPaths(ctx.config).kubelet;
  const text = await ctx.files.read(path);
  if (text === undefined) return {};
  const k = parseKubeconfig(text, path);
  if (k.certFile) return { ...splitPem((await ctx.files.read(k.certFile)) ?? ''), server: k.server };
  return { certPem: k.certPem, keyPem: k.keyPem, server: k.server };
}

/** Writes a new store file and points the symlink at it, unless the current file already holds this pair. @returns true if changed. */
export function writeKubeletClient(ctx: Context<object, KubeletState>, certPem: string, keyPem: string, now = new Date()): Promise<boolean> {
  return writeKubeletStorePair(ctx, 'client', certPem, keyPem, now);
}

/**
 * The kubelet's file store for `kind` (`client`: its client certificate; `server`: its serving
 * certificate, lib/steps/bootstrap/kubelet-serving.ts): a new `kubelet-<kind>-<stamp>.pem` (0600) and
 * the `kubelet-<kind>-current.pem` symlink to it, unless the current file holds this pair already.
 * Sets `state.kubeletRestart` when it changed (the kubelet reads its store at start).
 * @returns true if changed.
 */
export async function writeKubeletStorePair(ctx: Context<object, KubeletState>, kind: 'client' | 'server', certPem: string, keyPem: string, now = new Date()): Promise<boolean> {
  const current = join(ctx.config.distro.paths.kubeletConfigDir, 'pki', `kubelet-${kind}-current.pem`);
  const pem = `${certPem}${keyPem}`;
  const now_ = splitPem((await ctx.files.read(current)) ?? '');
  // Compare the PEM blocks, not the bytes: line endings may differ between our writer and the kubelet's.
  const norm = (s?: string) => s?.replace(/\s+/g, '');
  if (norm(now_.certPem) === norm(certPem) && norm(now_.keyPem) === norm(keyPem)) return false;
  const stamp = now.toISOString().slice(0, 19).replace(/[T:]/g, '-');
  const file = join(ctx.config.distro.paths.kubeletConfigDir, 'pki', `kubelet-${kind}-${stamp}.pem`);
  await ctx.files.write(file, pem, { mode: 0o600, dirMode: 0o700 });
  await ctx.sh.exec(['ln', '-sfn', file, current]);
  ctx.state.kubeletRestart = true;
  return true;
}
