/**
 * Reads what the self-hosted control plane needs from the host (PKI files, the final kubeconfigs of
 * kube-controller-manager and kube-scheduler) and builds the objects to apply, in apply order,
 * with the manifests/ builders.
 */
import { join } from 'node:path';
import { HostStateError } from '../errors.ts';
import { PKI_FILES, type PkiFile } from '../../manifests/flags.ts';
import { selfHostedObjects } from '../../manifests/self-hosted.ts';
import { kubeconfigPaths } from '../k8s/endpoints.ts';
import type { KubernetesObject } from '../k8s/client.ts';
import type { Context } from '../context.ts';

async function mustRead(ctx: Pick<Context, 'files'>, path: string): Promise<string> {
  const text = await ctx.files.read(path);
  if (text === undefined) throw new HostStateError('self-hosted-input', { what: path, why: 'the file is missing', fix: 'run the certs and kubeconfig steps' });
  return text;
}

/** Every object of the self-hosted control plane, in apply order (kube-proxy is the `addon/kube-proxy` step's). */
export async function selfHostedManifests(ctx: Context): Promise<KubernetesObject[]> {
  const { config } = ctx;
  const pki = {} as Record<PkiFile, string>;
  for (const file of Object.keys(PKI_FILES) as PkiFile[]) pki[file] = await mustRead(ctx, join(config.certificatesDir, file));
  const paths = kubeconfigPaths(config);
  const kubeconfigs = { controllerManager: await mustRead(ctx, paths.controllerManager), scheduler: await mustRead(ctx, paths.scheduler) };
  return selfHostedObjects(config, { pki, kubeconfigs });
}
