/**
 * Shared fixtures for the PKI tests: a resolved config, temp dirs, a cached fresh PKI (RSA key
 * generation is the slow part, so tests copy one generated tree instead of generating their own),
 * and an `openssl` runner — the independent checker.
 */
import { execFile } from 'node:child_process';
import { cp, mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { RealFiles } from '../../../lib/host/files.ts';
import { reconcilePki, type PkiReport } from '../../../lib/pki/reconcile.ts';
import type { ResolvedConfig } from '../../../lib/types.ts';

const execFileAsync = promisify(execFile);

/**
 * A resolved config as the config loader would produce for a Debian node; override fields per test.
 * `distro.etcdUser` is the current user, so the etcd keys' chown works without root.
 */
/** Fields of a {@link sampleConfig} to override; `apiServer` merges field by field. */
export type ConfigOverrides = Partial<Omit<ResolvedConfig, 'apiServer'>> & { apiServer?: Partial<ResolvedConfig['apiServer']> };

export function sampleConfig(over: ConfigOverrides = {}): ResolvedConfig {
  const { apiServer, ...rest } = over;
  return {
    distro: {
      name: 'debian',
      paths: {
        kubeletConfigDir: '/var/lib/kubelet', staticPodPath: '/etc/kubernetes/manifests', secretsDir: '/etc/kubernetes',
        certificatesDir: '/etc/kubernetes/pki', etcdEnvironmentFile: '/etc/default/etcd', etcdDataDir: '/var/lib/etcd/default',
        systemdDir: '/etc/systemd/system',
      },
      units: { etcd: 'etcd.service', kubelet: 'kubelet.service', containerRuntime: 'containerd.service' },
      etcdUser: userInfo().username,
      binaries: { etcd: 'etcd', kubelet: 'kubelet', kubectl: 'kubectl' },
      criSocket: 'unix:///run/containerd/containerd.sock',
    },
    kubernetesVersion: 'v1.34.4',
    nodeName: 'cp-1',
    localAPIEndpoint: { advertiseAddress: '10.250.0.2', bindPort: 6443 },
    bootstrapAPIEndpoint: { bindPort: 6444 },
    networking: { podSubnet: '10.244.0.0/16', serviceSubnet: '10.96.0.0/12', dnsDomain: 'cluster.local' },
    certificatesDir: '/etc/kubernetes/pki',
    encryptionAlgorithm: 'RSA-2048',
    imageRepository: 'registry.k8s.io',
    apiServer: {
      extraSANs: [],
      extraArgs: {},
      auditLog: { disabled: false, dir: '/var/log/kubernetes/audit', maxAgeDays: 30, maxBackups: 10, maxSizeMB: 100 },
      secretsEncryption: { disabled: false },
      podSecurity: { disabled: false, enforce: 'baseline', warn: 'restricted', audit: 'restricted', exemptNamespaces: ['kube-system'] },
      ...apiServer,
    },
    controllerManager: { extraArgs: {} },
    scheduler: { extraArgs: {} },
    etcd: { dataDir: '/var/lib/etcd/default', extraArgs: {}, snapshots: { dir: '/var/lib/kubeception/snapshots', retention: 5, interval: '12h', intervalMs: 43_200_000, disabled: false, keyFile: '/etc/kubeception/snapshot.key' } },
    kubelet: { cgroupDriver: 'systemd', criSocket: 'unix:///run/containerd/containerd.sock', extraConfig: {} },
    ignorePreflightErrors: [],
    joinService: { image: 'localhost/kubeception:v0.1.0' },
    podNetwork: { plugin: 'flannel', flannel: { backend: 'vxlan', image: 'ghcr.io/flannel-io/flannel:v0.28.4', cniPluginImage: 'ghcr.io/flannel-io/flannel-cni-plugin:v1.9.1-flannel1' } },
    dns: { disabled: false, image: 'registry.k8s.io/coredns/coredns:v1.12.1' },
    proxy: { disabled: false },
    ...rest,
  };
}

/** A fresh temp dir; remove it with {@link removeDir}. */
export function tempDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'kubeception-pki-'));
}

export function removeDir(dir: string): Promise<void> {
  return rm(dir, { recursive: true, force: true });
}

let fresh: Promise<{ dir: string; report: PkiReport }> | undefined;

/** One PKI generated from scratch for {@link sampleConfig} in a temp dir, shared by the tests of one file. */
export function freshPki(): Promise<{ dir: string; report: PkiReport }> {
  fresh ??= (async () => {
    const dir = await tempDir();
    const report = await reconcilePki(sampleConfig({ certificatesDir: dir }), new RealFiles());
    return { dir, report };
  })();
  return fresh;
}

/** A copy of {@link freshPki}'s tree in a new temp dir (modes preserved). */
export async function copyOfFreshPki(): Promise<string> {
  const { dir } = await freshPki();
  const copy = await tempDir();
  await cp(dir, copy, { recursive: true, preserveTimestamps: true });
  return copy;
}

/** Every regular file under `dir` (relative path → bytes and mode), for byte-identity checks. */
export async function snapshot(dir: string): Promise<Map<string, { bytes: string; mode: number }>> {
  const out = new Map<string, { bytes: string; mode: number }>();
  for (const entry of await readdir(dir, { recursive: true })) {
    const p = join(dir, entry);
    const st = await stat(p);
    if (st.isFile()) out.set(entry, { bytes: await readFile(p, 'latin1'), mode: st.mode & 0o7777 });
  }
  return out;
}

/** Runs `openssl <args>`; resolves with stdout, rejects (with stderr) on a non-zero exit. */
export async function openssl(...args: string[]): Promise<string> {
  const { stdout } = await execFileAsync('openssl', args);
  return stdout;
}

/** Runs a `sh -c` script (for openssl pipelines); resolves with stdout. */
export async function shell(script: string): Promise<string> {
  const { stdout } = await execFileAsync('sh', ['-c', script]);
  return stdout;
}
