/**
 * Fixtures for the manifest tests: IPv4 and IPv6 configs, the self-hosted control plane's inputs (fake
 * PEM text, real kubeconfig rendering), and helpers that read flags and walk objects.
 */
import type { V1Container, V1DaemonSet, V1Deployment, V1PodSpec } from '@kubernetes/client-node';
import { renderKubeconfig } from '../../../lib/k8s/kubeconfig.ts';
import { apiserverUrls } from '../../../lib/k8s/endpoints.ts';
import type { ResolvedConfig } from '../../../lib/types.ts';
import type { Manifest, ManifestObject } from '../../../manifests/common.ts';
import { PKI_FILES, type PkiFile } from '../../../manifests/flags.ts';
import type { SelfHostedInputs } from '../../../manifests/self-hosted.ts';
import { hardeningFiles } from '../../../manifests/apiserver-hardening.ts';
import { sampleConfig, type ConfigOverrides } from '../pki/fixtures.ts';

export { sampleConfig };

/** An IPv6 single-stack control plane on fd00:20::2. */
export function ipv6Config(over: ConfigOverrides = {}): ResolvedConfig {
  return sampleConfig({
    localAPIEndpoint: { advertiseAddress: 'fd00:20::2', bindPort: 6443 },
    networking: { podSubnet: 'fd00:244::/56', serviceSubnet: 'fd00:96::/108', dnsDomain: 'cluster.local' },
    ...over,
  });
}

/** Distinct fake PEM text per file, so a test can tell which file landed where. */
export const pem = (file: string) => `-----BEGIN TEST-----\n${file}\n-----END TEST-----\n`;

/** The self-hosted inputs as the caller would pass them: every PKI file, kubeconfigs for `server` (default: the final apiserver). */
export function sampleInputs(config: ResolvedConfig, server = apiserverUrls(config).loopback): SelfHostedInputs {
  const pki = Object.fromEntries(PKI_FILES.map((f) => [f, pem(f)])) as Record<PkiFile, string>;
  const kubeconfig = (user: string) => renderKubeconfig({ server, caPem: pem('ca.crt'), user, certPem: pem(user), keyPem: pem(`${user}.key`) });
  const apiServerFiles = Object.fromEntries(hardeningFiles(config).map((f) => [f, `text of ${f}\n`]));
  return { pki, kubeconfigs: { controllerManager: kubeconfig('system:kube-controller-manager'), scheduler: kubeconfig('system:kube-scheduler') }, apiServerFiles };
}

/** `--name=value` flags of a container's command → map (the first element, the binary, skipped). */
export function flagsOf(container: V1Container): Map<string, string> {
  const out = new Map<string, string>();
  for (const arg of container.command?.slice(1) ?? []) {
    const m = /^--([^=]+)=(.*)$/.exec(arg);
    if (m) out.set(m[1]!, m[2]!);
  }
  return out;
}

/** The pod spec of a workload object (DaemonSet/Deployment template), if it has one. */
export function podSpecOf(o: ManifestObject): V1PodSpec | undefined {
  return o.kind === 'DaemonSet' || o.kind === 'Deployment' ? (o as Manifest<V1DaemonSet | V1Deployment>).spec?.template.spec : undefined;
}

/** The object of `kind`/`name` in `objects`; fails the test if absent. */
export function find<K extends ManifestObject['kind']>(objects: ManifestObject[], kind: K, name: string): ManifestObject {
  const o = objects.find((x) => x.kind === kind && x.metadata.name === name);
  if (!o) throw new Error(`${kind}/${name} not in ${objects.map((x) => `${x.kind}/${x.metadata.name}`).join(', ')}`);
  return o;
}

/** Every string anywhere in `value` (object values, array items), plus decoded Secret `data`. */
export function allStrings(value: unknown, out: string[] = []): string[] {
  if (typeof value === 'string') out.push(value);
  else if (Array.isArray(value)) for (const v of value) allStrings(v, out);
  else if (value && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    if (o.kind === 'Secret' && o.data) for (const v of Object.values(o.data as Record<string, string>)) out.push(Buffer.from(v, 'base64').toString('utf8'));
    for (const v of Object.values(o)) allStrings(v, out);
  }
  return out;
}
