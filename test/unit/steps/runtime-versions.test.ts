/**
 * The version checks of preflight (lib/steps/preflight/runtime-versions.ts) against fake command answers (pure
 * unit: the checks only read `--version` texts, a file's existence and a unit's state). The answers
 * are the real binaries' texts (Debian 12's etcd 3.4.23 and containerd 1.6.20, the bed's builds).
 * The bed proves the same on real hosts: test/integration/runtime-stack.test.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { containerRuntimeVersionCheck, etcdDataDirVersionCheck, etcdVersionCheck, kubernetesVersionSupportCheck, versionIn } from '../../../lib/steps/preflight/runtime-versions.ts';
import type { Check } from '../../../lib/steps/preflight/preflight.ts';
import type { Context } from '../../../lib/context.ts';
import { sampleConfig } from '../pki/fixtures.ts';

const ETCD_34 = 'etcd Version: 3.4.23\nGit SHA: Not provided (use ./build instead of go build)\nGo Version: go1.19.8\nGo OS/Arch: linux/amd64\n';
const ETCD_36 = 'etcd Version: 3.6.16\nGit SHA: GitNotFound\nGo Version: go1.26.8\nGo OS/Arch: linux/amd64\n';
const CTR_16 = 'Client:\n  Version:  1.6.20~ds1\n  Revision: 1.6.20~ds1-1+deb12u3\n  Go version: go1.19.8\n\nServer:\n  Version:  1.6.20~ds1\n  Revision: 1.6.20~ds1-1+deb12u3\n  UUID: 5c1f\n';
const CTR_24 = 'Client:\n  Version:  v2.4.2\n  Revision: kubeception-bed\n  Go version: go1.26.8\n\nServer:\n  Version:  v2.4.2\n  Revision: kubeception-bed\n  UUID: 7a2e\n';

interface Host {
  etcd?: string;
  kubelet?: string;
  ctr?: string;
  files?: string[];
}

async function run(check: Check, host: Host, kubernetesVersion = 'v1.37.2') {
  const warnings: string[] = [];
  const answers: Record<string, string | undefined> = { etcd: host.etcd, kubelet: host.kubelet, ctr: host.ctr };
  const ctx = {
    config: { ...sampleConfig(), kubernetesVersion },
    files: { exists: async (p: string) => (host.files ?? []).includes(p) },
    systemd: { activeState: async () => 'inactive' },
    sh: {
      which: async (bin: string) => (answers[bin] === undefined ? undefined : `/usr/bin/${bin}`),
      read: async (argv: string[]) => ({ code: 0, stdout: answers[argv[0]!.split('/').pop()!] ?? '', stderr: '' }),
    },
    log: { info() {}, warn: (m: string) => warnings.push(m) },
  } as unknown as Context;
  return { failure: await check.run(ctx), warnings };
}

test('versionIn reads the version of each --version text', () => {
  assert.deepEqual(versionIn(ETCD_34), { major: 3, minor: 4, patch: 23 });
  assert.deepEqual(versionIn('Kubernetes v1.37.2\n'), { major: 1, minor: 37, patch: 2 });
  assert.deepEqual(versionIn(' 1.6.20~ds1 1.6.20~ds1-1+deb12u3'), { major: 1, minor: 6, patch: 20 });
  assert.equal(versionIn('no version here'), undefined);
});

test('KubernetesVersionSupport: a new 1.34 cluster is refused (ignorable); an existing one passes with a warning; supported minors pass', async () => {
  const fresh = await run(kubernetesVersionSupportCheck, {}, 'v1.34.4');
  assert.match(fresh.failure?.message ?? '', /Kubernetes 1\.34 \(kubernetesVersion v1\.34\.4\) is past upstream end of life: kubeception bootstraps new clusters at 1\.35, 1\.36, 1\.37 only/);
  assert.match(fresh.failure?.fix ?? '', /--ignore-preflight-errors KubernetesVersionSupport/);
  assert.notEqual(kubernetesVersionSupportCheck.ignorable, false);
  const existing = await run(kubernetesVersionSupportCheck, { files: [`${sampleConfig().certificatesDir}/ca.key`] }, 'v1.34.4');
  assert.equal(existing.failure, undefined);
  assert.match(existing.warnings.join('\n'), /existing cluster is still served/);
  for (const v of ['v1.35.4', 'v1.36.3', 'v1.37.2']) assert.deepEqual(await run(kubernetesVersionSupportCheck, {}, v), { failure: undefined, warnings: [] }, v);
});

test('EtcdVersion warns (never fails): 3.4 is below kubeadm\'s 3.5.24; 3.6 is an older minor than 1.37\'s 3.7 pairing; 3.6 under 1.36 is silent', async () => {
  const old = await run(etcdVersionCheck, { etcd: ETCD_34 }, 'v1.36.3');
  assert.equal(old.failure, undefined);
  assert.match(old.warnings.join('\n'), /\[EtcdVersion\] etcd 3\.4\.23 is older than 3\.5\.24.*Kubernetes 1\.36 pairs with etcd 3\.6\.8.*one minor at a time \(3\.4 → 3\.5 → …/);
  const minor = await run(etcdVersionCheck, { etcd: ETCD_36 }, 'v1.37.2');
  assert.equal(minor.failure, undefined);
  assert.match(minor.warnings.join('\n'), /\[EtcdVersion\] etcd 3\.6\.16 is of an older minor than the etcd 3\.7\.0 kubeadm pairs with Kubernetes 1\.37/);
  assert.deepEqual(await run(etcdVersionCheck, { etcd: ETCD_36 }, 'v1.36.3'), { failure: undefined, warnings: [] });
  assert.deepEqual(await run(etcdVersionCheck, {}, 'v1.37.2'), { failure: undefined, warnings: [] }, 'no etcd: FileExisting-etcd reports it');
});

test('EtcdDataDirVersion is silent when etcd is not running (its dir is not read then); the bed test covers a running 3.4', async () => {
  assert.deepEqual(await run(etcdDataDirVersionCheck, { etcd: ETCD_36 }), { failure: undefined, warnings: [] });
});

test('ContainerRuntimeVersion warns on containerd 1.x under a 1.37 kubelet, naming 1.38\'s need; not under 1.36, not on containerd 2', async () => {
  const r = await run(containerRuntimeVersionCheck, { kubelet: 'Kubernetes v1.37.2\n', ctr: CTR_16 });
  assert.equal(r.failure, undefined);
  assert.match(r.warnings.join('\n'), /\[ContainerRuntimeVersion\] containerd 1\.6\.20 has no CRI RuntimeConfig call: the kubelet v1\.37 falls back to its own cgroupDriver, a fallback Kubernetes 1\.38 removes; 1\.38 will need containerd 2\.0 or newer/);
  assert.deepEqual(await run(containerRuntimeVersionCheck, { kubelet: 'Kubernetes v1.36.3\n', ctr: CTR_16 }), { failure: undefined, warnings: [] });
  assert.deepEqual(await run(containerRuntimeVersionCheck, { kubelet: 'Kubernetes v1.37.2\n', ctr: CTR_24 }), { failure: undefined, warnings: [] });
});
