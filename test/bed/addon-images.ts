/**
 * The addon images of the bed (CoreDNS, flannel, the flannel CNI plugin) and a small test image with a
 * shell and DNS/HTTP tools (Debian's busybox-static), built locally from the binaries of
 * test/bed/build-addons.sh at the versions pinned in manifests/addons/versions.ts, cached by version.
 */
import { existsSync } from 'node:fs';
import process from 'node:process';
import { join } from 'node:path';
import { CACHE_DIR, K8S_VERSION, REPO_ROOT } from './bed.ts';
import { runOk } from './proc.ts';
import { COREDNS_VERSIONS, FLANNEL_VERSION, kubernetesMinor } from '../../manifests/addons/versions.ts';

/** The version of containernetworking/plugins whose `plugins/meta/flannel` the bed builds (flannel-io/cni-plugin is not served by the Go module proxy). */
export const CNI_PLUGINS_VERSION = 'v0.9.1';
export const COREDNS_VERSION = COREDNS_VERSIONS[kubernetesMinor(K8S_VERSION) ?? ''] ?? 'v1.12.1';

/** Image names as kubeception's manifests ask for them (CoreDNS, flannel) or as a test config names them. */
export const COREDNS_IMAGE = `registry.k8s.io/coredns/coredns:${COREDNS_VERSION}`;
export const FLANNEL_IMAGE = `ghcr.io/flannel-io/flannel:${FLANNEL_VERSION}`;
/** Not the upstream name: it holds the older plugin above, so a flannel test sets `networking.flannel.cniPluginImage` to it. */
export const BED_FLANNEL_CNI_PLUGIN_IMAGE = `localhost/flannel-cni-plugin:${CNI_PLUGINS_VERSION}`;
/** busybox-static: sh, nslookup, wget, httpd, nc, ping. */
export const TEST_IMAGE = 'localhost/bed-tools:busybox';

const env = () => ({ ...process.env, COREDNS_VERSION, FLANNEL_VERSION, CNI_PLUGINS_VERSION });

/** Archive paths of the addon and test images (what images.sh writes). */
export function addonImageArchives(): string[] {
  const dir = join(CACHE_DIR, 'images', 'addons');
  return [`coredns-${COREDNS_VERSION}`, `flannel-${FLANNEL_VERSION}`, `flannel-cni-plugin-${CNI_PLUGINS_VERSION}`, 'bed-tools-busybox'].map((n) => join(dir, `${n}.tar`));
}

let building: Promise<unknown> | undefined;

/** Builds the addon binaries and images if any archive is missing (cached by version). @returns the archives. */
export async function ensureAddonImages(): Promise<string[]> {
  const archives = addonImageArchives();
  if (!archives.every((a) => existsSync(a))) {
    building ??= (async () => {
      await runOk(['bash', join(REPO_ROOT, 'test', 'bed', 'build-addons.sh')], { timeoutMs: 1_800_000, env: env() });
      await runOk(['bash', join(REPO_ROOT, 'test', 'bed', 'images.sh')], { timeoutMs: 600_000, env: env() });
    })().finally(() => {
      building = undefined;
    });
    await building;
  }
  return archives;
}
