/**
 * kubeception's own image in the bed: built from this checkout by kubeception-image.sh (no container
 * engine, no registry) and imported into a host's containerd, where the join service's Deployment
 * finds it (`imagePullPolicy: IfNotPresent`).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Host } from './bed.ts';
import { REPO_ROOT } from './bed.ts';
import { runOk } from './proc.ts';
import { importImageArchives } from './kubelet.ts';

const VERSION = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;

/** The image's name as containerd and the kubelet see it: `localhost/kubeception:v<package.json version>`. */
export const KUBECEPTION_IMAGE = `localhost/kubeception:v${VERSION}`;

/**
 * Builds the image archive if this checkout's runtime files changed since the last build (≈15 s),
 * else returns the cached one at once.
 * @returns absolute path of a docker-archive under `$KUBECEPTION_CACHE/images/kubeception/`.
 */
export async function ensureKubeceptionImage(): Promise<string> {
  const out = await runOk(['bash', join(REPO_ROOT, 'test', 'bed', 'kubeception-image.sh')], { timeoutMs: 600_000 });
  const path = out.trim().split('\n').pop();
  if (!path?.startsWith('/')) throw new Error(`bed: kubeception-image.sh printed no archive path (stdout: ${out.trim()})`);
  return path;
}

/**
 * Imports {@link KUBECEPTION_IMAGE} into the host's containerd (namespace `k8s.io`, the kubelet's), or
 * into CRI-O's storage on a kubic host (test/bed/kubic.ts). The host must run its runtime
 * (`bootHost({ kubelet: true })` or `flavour: 'kubic'`); the archive is read through the read-only
 * cache bind every host has.
 */
export async function importKubeceptionImage(host: Host): Promise<void> {
  const archive = await ensureKubeceptionImage();
  if (host.flavour === 'kubic') return (await import('./kubic.ts')).importArchive(host, archive);
  await importImageArchives(host, [archive]);
}
