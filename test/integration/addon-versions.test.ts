/**
 * The CoreDNS, pause and etcd pins (manifests/addons/versions.ts) equal kubeadm's `CoreDNSVersion`,
 * `PauseVersion` and `DefaultEtcdVersion` for every Kubernetes version kubeception deploys and the
 * bed's upgrade chain builds, read from kubeadm's constants.go in the bed's Go module
 * cache, which test/bed/setup.sh (build-k8s.sh) fills. Here, with the bed required, a missing cache
 * is a failure, not a skip (it was skipped silently as a unit test).
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import process from 'node:process';
import { test } from 'node:test';
import { DEFAULT_KUBERNETES_VERSION } from '../../lib/constants.ts';
import siteConfig from '../../kubeception.config.ts';
import { coreDNSVersion, etcdPairing, pauseVersion } from '../../manifests/addons/versions.ts';

const script = readFileSync(new URL('../bed/build-k8s.sh', import.meta.url), 'utf8');
const bedVersion = /K8S_VERSION="\$\{K8S_VERSION:-([^}]+)\}"/.exec(script)?.[1];
const chain = /K8S_UPGRADE_CHAIN="\$\{K8S_UPGRADE_CHAIN:-([^}]+)\}"/.exec(readFileSync(new URL('../bed/setup-upgrade.sh', import.meta.url), 'utf8'))?.[1]?.split(' ') ?? [];
const versions = new Set([DEFAULT_KUBERNETES_VERSION, siteConfig.kubernetesVersion ?? DEFAULT_KUBERNETES_VERSION, bedVersion, ...chain]);
const gomod = process.env.GOMODCACHE ?? `${process.env.KUBECEPTION_CACHE ?? '/var/cache/kubeception'}/go/mod`;

for (const version of versions)
  test(`the pins equal kubeadm ${version}'s CoreDNSVersion, PauseVersion and DefaultEtcdVersion`, () => {
    assert.ok(version, 'no K8S_VERSION default in test/bed/build-k8s.sh');
    const constants = `${gomod}/k8s.io/kubernetes@${version}/cmd/kubeadm/app/constants/constants.go`;
    assert.ok(existsSync(constants), `${constants} is missing: run test/bed/setup.sh (build-k8s.sh downloads the Kubernetes module)`);
    const text = readFileSync(constants, 'utf8');
    const constant = (name: string) => new RegExp(`\\b${name} = "v?([\\d.]+)(?:-0)?"`).exec(text)?.[1];
    assert.ok(constant('CoreDNSVersion'), `no CoreDNSVersion in ${constants}`);
    assert.equal(coreDNSVersion(version), `v${constant('CoreDNSVersion')}`);
    assert.equal(pauseVersion(version), constant('PauseVersion'));
    assert.equal(etcdPairing(version), constant('DefaultEtcdVersion'));
  });
