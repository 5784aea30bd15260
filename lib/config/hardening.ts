/**
 * The kube-apiserver's CIS Kubernetes Benchmark defaults, resolved: `apiServer.auditLog`,
 * `apiServer.secretsEncryption`, `apiServer.podSecurity`. Pure; called by ./validate.ts. Each is on
 * unless `disabled` (docs/configuration.md, "Hardening defaults", says when to turn one off).
 * @see https://kubernetes.io/docs/tasks/debug/debug-cluster/audit/
 * @see https://kubernetes.io/docs/tasks/administer-cluster/encrypt-data/
 * @see https://kubernetes.io/docs/tasks/configure-pod-container/enforce-standards-admission-controller/
 */
import { ConfigError } from '../errors.ts';
import { dedicatedDir, inside } from './limits.ts';
import type { AuditLogSettings, DistroSettings, KubeceptionConfig, PodSecuritySettings } from '../types.ts';

/**
 * Defaults of `apiServer.auditLog`: the benchmark's values (1.2.17–1.2.19: at least 30 days, 10
 * files, 100 MB), so up to 1.1 GB of log per control-plane node.
 */
export const AUDIT_LOG_DEFAULTS = { dir: '/var/log/kubernetes/audit', maxAgeDays: 30, maxBackups: 10, maxSizeMB: 100 } as const;

/** Namespace exempt from Pod Security Admission whatever the config says: the control plane's and the addons' (flannel runs privileged). */
export const PSA_EXEMPT_NAMESPACES = ['kube-system'] as const;

const LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

function bad(field: string, file: string, why: string, fix: string): never {
  throw new ConfigError('config-invalid', { what: `${file}: apiServer.${field}`, why, fix });
}

function count(field: string, value: number | undefined, fallback: number, max: number, file: string): number {
  const v = value ?? fallback;
  if (!Number.isInteger(v) || v < 1 || v > max) bad(`auditLog.${field}`, file, `${v} is not a whole number from 1 to ${max}`, `set auditLog.${field} to e.g. ${fallback} (the CIS benchmark's value)`);
  return v;
}

/**
 * `apiServer.auditLog`: `dir` a dedicated directory (./limits.ts) outside certificatesDir and
 * etcd.dataDir; the three limits whole numbers (days ≤ 3650, files ≤ 1000, MB ≤ 100000).
 * @throws ConfigError `config-invalid` naming `apiServer.auditLog.<field>`.
 */
export function resolveAuditLog(cfg: KubeceptionConfig, distro: DistroSettings, dirs: { certificatesDir: string; dataDir: string }, file: string): AuditLogSettings {
  const a = cfg.apiServer?.auditLog ?? {};
  const example = AUDIT_LOG_DEFAULTS.dir;
  const dir = a.dir === undefined ? example : dedicatedDir('apiServer.auditLog.dir', a.dir, distro, file, { writes: 'the audit log', example });
  for (const [name, d] of [['certificatesDir', dirs.certificatesDir], ['etcd.dataDir', dirs.dataDir]] as const)
    if (inside(dir, d) || inside(d, dir)) bad('auditLog.dir', file, `${dir} ${inside(dir, d) ? 'is inside' : 'holds'} ${name} ${d}: the audit log needs a directory of its own`, `use a dedicated directory such as ${example}`);
  return {
    disabled: a.disabled === true,
    dir,
    maxAgeDays: count('maxAgeDays', a.maxAgeDays, AUDIT_LOG_DEFAULTS.maxAgeDays, 3650, file),
    maxBackups: count('maxBackups', a.maxBackups, AUDIT_LOG_DEFAULTS.maxBackups, 1000, file),
    maxSizeMB: count('maxSizeMB', a.maxSizeMB, AUDIT_LOG_DEFAULTS.maxSizeMB, 100_000, file),
  };
}

/**
 * `apiServer.podSecurity`: levels default enforce `baseline`, warn and audit `restricted`;
 * `exemptNamespaces` DNS-1123 labels, `kube-system` always among them.
 * @throws ConfigError `config-invalid` naming `apiServer.podSecurity.exemptNamespaces[i]`.
 */
export function resolvePodSecurity(cfg: KubeceptionConfig, file: string): PodSecuritySettings {
  const p = cfg.apiServer?.podSecurity ?? {};
  (p.exemptNamespaces ?? []).forEach((ns, i) => {
    if (!LABEL.test(ns) || ns.length > 63) bad(`podSecurity.exemptNamespaces[${i}]`, file, `"${ns}" is not a namespace name (a DNS-1123 label)`, 'use lower-case letters, digits and "-", e.g. monitoring');
  });
  return {
    disabled: p.disabled === true,
    enforce: p.enforce ?? 'baseline',
    warn: p.warn ?? 'restricted',
    audit: p.audit ?? 'restricted',
    exemptNamespaces: [...new Set([...PSA_EXEMPT_NAMESPACES, ...(p.exemptNamespaces ?? [])])].sort(),
  };
}

/** The three settings as `ResolvedConfig.apiServer` carries them. */
export function resolveApiServerHardening(cfg: KubeceptionConfig, distro: DistroSettings, dirs: { certificatesDir: string; dataDir: string }, file: string) {
  return {
    auditLog: resolveAuditLog(cfg, distro, dirs, file),
    secretsEncryption: { disabled: cfg.apiServer?.secretsEncryption?.disabled === true },
    podSecurity: resolvePodSecurity(cfg, file),
  };
}
