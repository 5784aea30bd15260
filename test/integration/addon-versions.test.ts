/**
 * The CoreDNS pin (manifests/addons/versions.ts) equals kubeadm's `CoreDNSVersion` for every
 * Kubernetes version kubeception deploys, read from kubeadm's constants.go in the bed's Go module
 * cache, which test/bed/setup.sh (build-k8s.sh) fills. Here, with the bed required, a missing cache
 * is a failure, not a skip (it was skipped silently as a unit test).
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import process from 'node:process';
import { test } from 'node:test';
import { DEFAULT_KUBERNETES_VERSION } from '../../lib/constants.ts';
import siteConfig from '../../kubeception.config.ts';
import { coreDNSVersion } from '../../manifests/addons/versions.ts';

const script = readFileSync(new URL('../bed/build-k8s.sh', import.meta.url), 'utf8');
const bedVersion = /K8S_VERSION="\$\{K8S_VERSION:-([^}]+)\}"/.exec(script)?.[1];
const versions = new Set([DEFAULT_KUBERNETES_VERSION, siteConfig.kubernetesVersion ?? DEFAULT_KUBERNETES_VERSION, bedVersion]);
const gomod = process.env.GOMODCACHE ?? `${process.env.KUBECEPTION_CACHE ?? '/var/cache/kubeception'}/go/mod`;

for (const version of versions)
  test(`the CoreDNS pin equals kubeadm ${version}'s CoreDNSVersion`, () => {
    assert.ok(version, 'no K8S_VERSION default in test/bed/build-k8s.sh');
    const constants = `${gomod}/k8s.io/kubernetes@${version}/cmd/kubeadm/app/constants/constants.go`;
    assert.ok(existsSync(constants), `${constants} is missing: run test/bed/setup.sh (build-k8s.sh downloads the Kubernetes module)`);
    const pinned = /CoreDNSVersion = "(v[\d.]+)"/.exec(readFileSync(constants, 'utf8'))?.[1];
    assert.ok(pinned, `no CoreDNSVersion in ${constants}`);
    assert.equal(coreDNSVersion(version), pinned);
  });
