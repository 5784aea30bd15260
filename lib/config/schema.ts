/**
 * Shape validation of the operator's config and the distro settings: the one wrapper around `zod`.
 * Only shapes and types are checked here; meaning (DNS-1123, CIDR overlaps, ports) is checked in
 * {@link ./validate.ts}. Unknown keys are errors, so a typo such as `podSubnett` is caught.
 */
import { z } from 'zod';
import { ConfigError } from '../errors.ts';
import { closestName, didYouMean } from '../util/suggest.ts';
import type { DistroSettings, KubeceptionConfig } from '../types.ts';

const extraArgs = z.record(z.string(), z.string());
const port = z.number().int();
const str = z.string();
const psaLevel = z.enum(['privileged', 'baseline', 'restricted']);

/**
 * `kubelet.extraConfig`: KubeletConfiguration (kubelet.config.k8s.io/v1beta1) fields, typed where the
 * type is plain, so a wrong type is refused here and not by the kubelet after its files were
 * written. Other fields pass as they are (the kubelet checks them); fields kubeception owns are
 * refused by ./limits.ts.
 */
const kubeletExtraConfig = (() => {
  const int = z.number().int().nonnegative();
  const percent = z.number().int().min(0).max(100);
  const tcpPort = z.number().int().min(0).max(65535);
  const strings = z.record(z.string(), z.string());
  const fields: Record<string, z.ZodType> = {
    ...Object.fromEntries(['maxPods', 'podPidsLimit', 'maxOpenFiles', 'registryPullQPS', 'registryBurst', 'eventRecordQPS', 'eventBurst', 'kubeAPIQPS', 'kubeAPIBurst', 'containerLogMaxFiles', 'maxParallelImagePulls', 'nodeStatusMaxImages', 'podsPerCore'].map((k) => [k, int])),
    ...Object.fromEntries(['imageGCHighThresholdPercent', 'imageGCLowThresholdPercent'].map((k) => [k, percent])),
    ...Object.fromEntries(['healthzPort', 'port'].map((k) => [k, tcpPort])),
    ...Object.fromEntries(['failSwapOn', 'failCgroupV1', 'rotateCertificates', 'serverTLSBootstrap', 'protectKernelDefaults', 'serializeImagePulls', 'makeIPTablesUtilChains', 'enableServer', 'enableControllerAttachDetach', 'cgroupsPerQOS', 'cpuCFSQuota', 'enableDebuggingHandlers', 'enableProfilingHandler', 'enableSystemLogHandler', 'localStorageCapacityIsolation', 'registerNode'].map((k) => [k, z.boolean()])),
    ...Object.fromEntries(['resolvConf', 'healthzBindAddress', 'address', 'containerLogMaxSize', 'cpuManagerPolicy', 'topologyManagerPolicy', 'memoryManagerPolicy', 'hairpinMode', 'providerID', 'tlsCertFile', 'tlsPrivateKeyFile', 'tlsMinVersion', 'volumePluginDir', 'cgroupRoot', 'kubeletCgroups', 'systemCgroups', 'shutdownGracePeriod', 'shutdownGracePeriodCriticalPods', 'imageMinimumGCAge', 'nodeStatusUpdateFrequency', 'syncFrequency', 'streamingConnectionIdleTimeout', 'runtimeRequestTimeout', 'evictionPressureTransitionPeriod'].map((k) => [k, str])),
    ...Object.fromEntries(['evictionHard', 'evictionSoft', 'evictionSoftGracePeriod', 'evictionMinimumReclaim', 'systemReserved', 'kubeReserved'].map((k) => [k, strings])),
    featureGates: z.record(z.string(), z.boolean()),
    ...Object.fromEntries(['tlsCipherSuites', 'allowedUnsafeSysctls', 'enforceNodeAllocatable'].map((k) => [k, z.array(str)])),
  };
  return z.looseObject(Object.fromEntries(Object.entries(fields).map(([k, t]) => [k, t.optional()])));
})();

const configSchema = z.strictObject({
  distro: str.optional(),
  kubernetesVersion: str.optional(),
  nodeName: str.optional(),
  localAPIEndpoint: z.strictObject({ advertiseAddress: str.optional(), bindPort: port.optional() }).optional(),
  bootstrapAPIEndpoint: z.strictObject({ bindPort: port.optional() }).optional(),
  controlPlaneEndpoint: str.optional(),
  networking: z
    .strictObject({
      podSubnet: str.optional(),
      serviceSubnet: str.optional(),
      dnsDomain: str.optional(),
      plugin: z.enum(['flannel', 'none']).optional(),
      flannel: z.strictObject({ backend: z.enum(['vxlan', 'host-gw']).optional(), image: str.optional(), cniPluginImage: str.optional() }).optional(),
    })
    .optional(),
  dns: z.strictObject({ disabled: z.boolean().optional(), imageRepository: str.optional(), imageTag: str.optional() }).optional(),
  proxy: z.strictObject({ disabled: z.boolean().optional() }).optional(),
  certificatesDir: str.optional(),
  encryptionAlgorithm: z.enum(['RSA-2048', 'RSA-3072', 'RSA-4096', 'ECDSA-P256', 'ECDSA-P384']).optional(),
  imageRepository: str.optional(),
  apiServer: z
    .strictObject({
      extraSANs: z.array(str).optional(),
      extraArgs: extraArgs.optional(),
      auditLog: z.strictObject({ disabled: z.boolean().optional(), dir: str.optional(), maxAgeDays: z.number().optional(), maxBackups: z.number().optional(), maxSizeMB: z.number().optional() }).optional(),
      secretsEncryption: z.strictObject({ disabled: z.boolean().optional() }).optional(),
      podSecurity: z.strictObject({ disabled: z.boolean().optional(), enforce: psaLevel.optional(), warn: psaLevel.optional(), audit: psaLevel.optional(), exemptNamespaces: z.array(str).optional() }).optional(),
    })
    .optional(),
  controllerManager: z.strictObject({ extraArgs: extraArgs.optional() }).optional(),
  scheduler: z.strictObject({ extraArgs: extraArgs.optional() }).optional(),
  etcd: z
    .strictObject({
      dataDir: str.optional(),
      extraArgs: extraArgs.optional(),
      snapshots: z.strictObject({ dir: str.optional(), retention: z.number().optional(), interval: str.optional(), disabled: z.boolean().optional(), keyFile: str.optional() }).optional(),
    })
    .optional(),
  kubelet: z
    .strictObject({ cgroupDriver: z.enum(['systemd', 'cgroupfs']).optional(), criSocket: str.optional(), extraConfig: kubeletExtraConfig.optional() })
    .optional(),
  ignorePreflightErrors: z.array(str).optional(),
  joinService: z.strictObject({ image: str.optional() }).optional(),
  certificateValidityPeriod: str.optional(),
  caCertificateValidityPeriod: str.optional(),
  certificateRenewalWindow: str.optional(),
});

const absPath = z.string().startsWith('/', 'must be an absolute path');
const distroSchema = z.strictObject({
  paths: z.strictObject({
    kubeletConfigDir: absPath,
    staticPodPath: absPath,
    secretsDir: absPath,
    certificatesDir: absPath,
    etcdEnvironmentFile: absPath,
    etcdDataDir: absPath,
    systemdDir: absPath,
  }),
  units: z.strictObject({ etcd: str, kubelet: str, containerRuntime: str }),
  etcdUser: str,
  binaries: z.strictObject({ etcd: str, kubelet: str, kubectl: str }),
  criSocket: str,
});

/** Field names the object schema at `path` accepts (for "did you mean"). */
function keysAt(schema: z.ZodType, path: readonly PropertyKey[]): string[] {
  // biome-ignore lint/suspicious/noExplicitAny: walking zod's optional/object wrappers structurally
  const unwrap = (x: any) => {
    while (x && typeof x.unwrap === 'function') x = x.unwrap();
    return x;
  };
  let s = unwrap(schema);
  for (const p of path) s = unwrap(s?.shape?.[p]);
  return s?.shape ? Object.keys(s.shape) : [];
}

/** One issue as `field: message`, with "did you mean" for an unknown key. */
function issueText(schema: z.ZodType, i: z.core.$ZodIssue): string {
  const at = i.path.join('.');
  if (i.code !== 'unrecognized_keys') return `${at || '(root)'}: ${i.message}`;
  const known = keysAt(schema, i.path);
  return `${at ? `${at}: ` : ''}unknown field${i.keys.length > 1 ? 's' : ''} ${i.keys.map((k) => `"${k}"${didYouMean(k, known)}`).join(', ')}`;
}

function fail(file: string, err: z.ZodError, schema: z.ZodType): never {
  const first = err.issues[0]!;
  const field = first.code === 'unrecognized_keys' ? [...first.path, first.keys[0]].join('.') : first.path.join('.') || '(root)';
  const all = err.issues.map((i) => issueText(schema, i)).join('; ');
  throw new ConfigError('config-invalid', {
    what: `${file}: ${field}`,
    why: all,
    fix:
      first.code === 'unrecognized_keys' && closestName(first.keys[0]!, keysAt(schema, first.path))
        ? `rename ${field} to ${[...first.path, closestName(first.keys[0]!, keysAt(schema, first.path))].join('.')}`
        : first.code === 'unrecognized_keys'
        ? `remove or correct the key (field names are kubeadm's; see lib/types.ts for the accepted fields)`
        : `correct ${field} in ${file} (see lib/types.ts for the expected type)`,
  });
}

/**
 * Checks the shape of an operator's config.
 * @param file where the value came from, named in errors.
 * @throws ConfigError `config-invalid` naming the first bad field path and listing every issue.
 */
export function parseConfig(value: unknown, file: string): KubeceptionConfig {
  const r = configSchema.safeParse(value);
  if (!r.success) fail(file, r.error, configSchema);
  return r.data as KubeceptionConfig;
}

/**
 * Checks the shape of a distro's TOML settings.
 * @throws ConfigError `config-invalid` naming the TOML key.
 */
export function parseDistro(value: unknown, name: string, file: string): DistroSettings {
  const r = distroSchema.safeParse(value);
  if (!r.success) fail(file, r.error, distroSchema);
  return { name, ...r.data };
}
