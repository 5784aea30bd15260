/**
 * The second Kubernetes version of the bed, for upgrade tests: `K8S_UPGRADE_VERSION` (default
 * v1.35.4) binaries and images built like the first (build-k8s.sh, build-addons.sh, images.sh, all
 * cached by version), its CoreDNS from kubeadm's pairing (manifests/addons/versions.ts). A host
 * "gets the distro's new kubelet" by a bind mount of that version's kubelet over /usr/local/bin/kubelet.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import process from 'node:process';
import { CACHE_DIR, REPO_ROOT, type Host } from './bed.ts';
import { runOk } from './proc.ts';
import { CONTROL_PLANE_IMAGES, importImageArchives } from './kubelet.ts';
import { coreDNSVersion } from '../../manifests/addons/versions.ts';

export const UPGRADE_VERSION = process.env.K8S_UPGRADE_VERSION ?? 'v1.35.4';
export const UPGRADE_COREDNS = coreDNSVersion(UPGRADE_VERSION) ?? 'v1.13.1';

const env = () => ({ ...process.env, K8S_VERSION: UPGRADE_VERSION, COREDNS_VERSION: UPGRADE_COREDNS }) as Record<string, string>;
const archives = () => [
  ...CONTROL_PLANE_IMAGES.map((i) => join(CACHE_DIR, 'images', UPGRADE_VERSION, `${i}.tar`)),
  join(CACHE_DIR, 'images', 'addons', `coredns-${UPGRADE_COREDNS}.tar`),
];
const kubeletOf = (v: string) => join(CACHE_DIR, 'k8s', v, 'bin', 'kubelet');

/** Builds what is missing of the upgrade version (a no-op when cached). @returns the image archives. */
export async function ensureUpgradeVersion(): Promise<string[]> {
  if (!existsSync(kubeletOf(UPGRADE_VERSION)) || !archives().every((a) => existsSync(a))) {
    await runOk(['bash', join(REPO_ROOT, 'test', 'bed', 'build-k8s.sh')], { timeoutMs: 3_600_000, env: env() });
    await runOk(['bash', join(REPO_ROOT, 'test', 'bed', 'build-addons.sh')], { timeoutMs: 1_800_000, env: env() });
    await runOk(['bash', join(REPO_ROOT, 'test', 'bed', 'images.sh')], { timeoutMs: 600_000, env: env() });
  }
  return archives();
}

/** Imports the upgrade version's control-plane images and its CoreDNS into the host's containerd. */
export async function importUpgradeImages(host: Host): Promise<void> {
  const list = await ensureUpgradeVersion();
  await importImageArchives(host, list);
}

/** What a distro package upgrade does to the host: /usr/local/bin/kubelet becomes `version`'s (the running kubelet is not restarted). */
export async function installKubelet(host: Host, version = UPGRADE_VERSION): Promise<void> {
  await host.execOk(['mount', '--bind', '-o', 'ro', kubeletOf(version), '/usr/local/bin/kubelet']);
}
