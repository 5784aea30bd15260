/**
 * Shape validation of the operator's config and the distro settings: the one wrapper around `zod`.
 * Only shapes and types are checked here; meaning (DNS-1123, CIDR overlaps, ports) is checked in
 * {@link ./validate.ts}. Unknown keys are errors, so a typo such as `podSubnett` is caught.
 */
import { z } from 'zod';
import { ConfigError } from '../errors.ts';
import type { DistroSettings, KubeceptionConfig } from '../types.ts';

const extraArgs = z.record(z.string(), z.string());
const port = z.number().int();
const str = z.string();

const configSchema = z.strictObject({
  distro: str.optional(),
  kubernetesVersion: str.optional(),
  nodeName: str.optional(),
  localAPIEndpoint: z.strictObject({ advertiseAddress: str.optional(), bindPort: port.optional() }).optional(),
  bootstrapAPIEndpoint: z.strictObject({ bindPort: port.optional() }).optional(),
  controlPlaneEndpoint: str.optional(),
  networking: z
    .strictObject({ podSubnet: str.optional(), serviceSubnet: str.optional(), dnsDomain: str.optional() })
    .optional(),
  certificatesDir: str.optional(),
  encryptionAlgorithm: z.enum(['RSA-2048', 'RSA-3072', 'RSA-4096', 'ECDSA-P256']).optional(),
  imageRepository: str.optional(),
  apiServer: z.strictObject({ extraSANs: z.array(str).optional(), extraArgs: extraArgs.optional() }).optional(),
  controllerManager: z.strictObject({ extraArgs: extraArgs.optional() }).optional(),
  scheduler: z.strictObject({ extraArgs: extraArgs.optional() }).optional(),
  etcd: z.strictObject({ dataDir: str.optional(), extraArgs: extraArgs.optional() }).optional(),
  kubelet: z
    .strictObject({ cgroupDriver: z.enum(['systemd', 'cgroupfs']).optional(), criSocket: str.optional(), extraConfig: z.record(z.string(), z.unknown()).optional() })
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

function fail(file: string, err: z.ZodError): never {
  const first = err.issues[0]!;
  const field = first.path.join('.') || '(root)';
  const all = err.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
  throw new ConfigError('config-invalid', {
    what: `${file}: ${field}`,
    why: all,
    fix:
      first.code === 'unrecognized_keys'
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
  if (!r.success) fail(file, r.error);
  return r.data as KubeceptionConfig;
}

/**
 * Checks the shape of a distro's TOML settings.
 * @throws ConfigError `config-invalid` naming the TOML key.
 */
export function parseDistro(value: unknown, name: string, file: string): DistroSettings {
  const r = distroSchema.safeParse(value);
  if (!r.success) fail(file, r.error);
  return { name, ...r.data };
}
