/**
 * The addon images of the bed (CoreDNS, flannel, the flannel CNI plugin) and a small test image with a
 * shell and DNS/HTTP tools (Debian's busybox-static), built locally from the binaries of
 * test/bed/build-addons.sh at the versions pinned in manifests/addons/versions.ts, cached by version.
 */
import { existsSync } from 'node:fs';
import process from 'node:process';
import { join } from 'node:path';
import { CACHE_DIR, K8S_VERSION, REPO_ROOT } from './bed-host.ts';
import { runOk } from './proc.ts';
import { COREDNS_VERSIONS, FLANNEL_VERSION, kubernetesMinor } from '../../manifests/addons/versions.ts';

/** The version of containernetworking/plugins whose `plugins/meta/flannel` the bed builds (flannel-io/cni-plugin is not served by the Go module proxy). */
export const CNI_PLUGINS_VERSION = 'v0.9.1';
/** The CoreDNS kubeadm pairs with Kubernetes `version` (the bed's default version unless given). */
export const corednsFor = (version: string = K8S_VERSION) => COREDNS_VERSIONS[kubernetesMinor(version) ?? ''] ?? 'v1.12.1';
export const COREDNS_VERSION = corednsFor();

/** Image names as kubeception's manifests ask for them (CoreDNS, flannel) or as a test config names them. */
export const COREDNS_IMAGE = `registry.k8s.io/coredns/coredns:${COREDNS_VERSION}`;
export const FLANNEL_IMAGE = `ghcr.io/flannel-io/flannel:${FLANNEL_VERSION}`;
/** Not the upstream name: it holds the older plugin above, so a flannel test sets `networking.flannel.cniPluginImage` to it. */
export const BED_FLANNEL_CNI_PLUGIN_IMAGE = `localhost/flannel-cni-plugin:${CNI_PLUGINS_VERSION}`;
/** busybox-static: sh, nslookup, wget, httpd, nc, ping. */
export const TEST_IMAGE = 'localhost/bed-tools:busybox';

const env = (version: string) => ({ ...process.env, COREDNS_VERSION: corednsFor(version), FLANNEL_VERSION, CNI_PLUGINS_VERSION });

/**
 * Archive paths of the addon and test images (what images.sh writes), with the CoreDNS of Kubernetes
 * `version`: a host booted at another version (the upgrade suites' v1.34.4) runs that version's CoreDNS.
 */
export function addonImageArchives(version: string = K8S_VERSION): string[] {
  const dir = join(CACHE_DIR, 'images', 'addons');
  return [`coredns-${corednsFor(version)}`, `flannel-${FLANNEL_VERSION}`, `flannel-cni-plugin-${CNI_PLUGINS_VERSION}`, 'bed-tools-busybox'].map((n) => join(dir, `${n}.tar`));
}

const building = new Map<string, Promise<unknown>>();

/** Builds the addon binaries and images of `version` if any archive is missing (cached by version). @returns the archives. */
export async function ensureAddonImages(version: string = K8S_VERSION): Promise<string[]> {
  const archives = addonImageArchives(version);
  if (!archives.every((a) => existsSync(a))) {
    const coredns = corednsFor(version);
    if (!building.has(coredns))
      building.set(coredns, (async () => {
        await runOk(['bash', join(REPO_ROOT, 'test', 'bed', 'build-addons.sh')], { timeoutMs: 1_800_000, env: env(version) });
        await runOk(['bash', join(REPO_ROOT, 'test', 'bed', 'images.sh')], { timeoutMs: 600_000, env: { ...env(version), K8S_VERSION: version } });
      })().finally(() => building.delete(coredns)));
    await building.get(coredns);
  }
  return archives;
}
