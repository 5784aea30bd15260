/**
 * kube-apiserver's hardening defaults (CIS Kubernetes Benchmark): the audit policy and log
 * (1.2.16–1.2.19, 3.2.1), encryption at rest for Secrets (1.2.27, 1.2.28) and Pod Security
 * Admission's cluster-wide defaults — the files each needs, their flags and their mounts, the same
 * for the bootstrap static pod and the self-hosted DaemonSet (and so its recovery copy). Each is on
 * unless the config's `apiServer.<name>.disabled`. Pure data: same config in, deep-equal objects out.
 *
 * Files (written by the `apiserver-config` step, lib/steps/bootstrap/apiserver-config.ts, 0600):
 * `<secretsDir>/audit-policy.yaml` and `<secretsDir>/admission-config.yaml`, each mounted read-only
 * on its own (not the directory: it holds admin.conf); `<certificatesDir>/encryption-config.yaml`
 * (the key; inside the PKI mount the apiserver has anyway). The log directory is the one writable
 * mount (`DirectoryOrCreate`); the bootstrap apiserver writes `bootstrap-audit.log` there, so the two
 * apiservers that run side by side during the hand-off never rotate one file.
 * @see https://kubernetes.io/docs/tasks/debug/debug-cluster/audit/
 * @see https://kubernetes.io/docs/tasks/configure-pod-container/enforce-standards-admission-controller/
 */
import { join } from 'node:path';
import { ENCRYPTION_CONFIG_FILE } from '../lib/pki/encryption-config.ts';
import type { ExtraArgs, ResolvedConfig } from '../lib/types.ts';
import { hostPathMount } from './common.ts';

/** Which apiserver the flags are for (manifests/flags.ts's `Instance`). */
type Instance = 'bootstrap' | 'self-hosted';

/** Where the hardening files live on every control-plane node (absolute paths). */
export function hardeningPaths(config: ResolvedConfig) {
  const secrets = config.distro.paths.secretsDir;
  return {
    auditPolicy: join(secrets, 'audit-policy.yaml'),
    admissionConfig: join(secrets, 'admission-config.yaml'),
    encryptionConfig: join(config.certificatesDir, ENCRYPTION_CONFIG_FILE),
    auditLog: (instance: Instance) => join(config.apiServer.auditLog.dir, instance === 'bootstrap' ? 'bootstrap-audit.log' : 'audit.log'),
  };
}

/** The files the apiserver reads for the defaults that are on, in a fixed order. */
export function hardeningFiles(config: ResolvedConfig): string[] {
  const p = hardeningPaths(config);
  const a = config.apiServer;
  return [...(a.auditLog.disabled ? [] : [p.auditPolicy]), ...(a.podSecurity.disabled ? [] : [p.admissionConfig]), ...(a.secretsEncryption.disabled ? [] : [p.encryptionConfig])];
}

/** kube-apiserver flags of the defaults that are on (`extraArgs` may override each). */
export function hardeningFlags(config: ResolvedConfig, instance: Instance): ExtraArgs {
  const p = hardeningPaths(config);
  const { auditLog: a, podSecurity, secretsEncryption } = config.apiServer;
  return {
    ...(!a.disabled && {
      'audit-log-maxage': String(a.maxAgeDays),
      'audit-log-maxbackup': String(a.maxBackups),
      'audit-log-maxsize': String(a.maxSizeMB),
      'audit-log-path': p.auditLog(instance),
      'audit-policy-file': p.auditPolicy,
    }),
    ...(!podSecurity.disabled && { 'admission-control-config-file': p.admissionConfig }),
    ...(!secretsEncryption.disabled && { 'encryption-provider-config': p.encryptionConfig }),
  };
}

/** The mounts the defaults add to the apiserver's pod (the encryption config is under certificatesDir, mounted already). */
export function hardeningMounts(config: ResolvedConfig): ReturnType<typeof hostPathMount>[] {
  const p = hardeningPaths(config);
  const { auditLog: a, podSecurity } = config.apiServer;
  const out: ReturnType<typeof hostPathMount>[] = [];
  if (!a.disabled) {
    out.push(hostPathMount('audit-policy', p.auditPolicy, 'File'));
    out.push({ volume: { name: 'audit-log', hostPath: { path: a.dir, type: 'DirectoryOrCreate' } }, mount: { name: 'audit-log', mountPath: a.dir } });
  }
  if (!podSecurity.disabled) out.push(hostPathMount('admission-config', p.admissionConfig, 'File'));
  return out;
}

type Rule = { level: 'None' | 'Metadata' | 'Request' | 'RequestResponse'; users?: string[]; userGroups?: string[]; verbs?: string[]; resources?: { group: string; resources: string[] }[]; nonResourceURLs?: string[] };

/**
 * The audit policy (audit.k8s.io/v1), first matching rule wins, stage RequestReceived omitted:
 * 1. None for health, version, metrics and discovery URLs (probes and clients poll them);
 * 2. Metadata for Secrets, ConfigMaps, service-account tokens and TokenReviews: who did what to
 *    which object, never the bytes (a rule further down cannot log more of them);
 * 3. None for the cluster's own chatter: lease renewals, Events, kube-proxy's watches, the kubelets'
 *    reads of their Node;
 * 4. Request for every other write (the request body: what was changed, by whom);
 * 5. Metadata for the rest (reads). No rule logs response bodies (RequestResponse).
 * @see kubernetes/cluster/gce/gci/configure-helper.sh (create-master-audit-policy: the rules it follows)
 */
export function auditPolicy(): { apiVersion: string; kind: string; omitStages: string[]; rules: Rule[] } {
  return {
    apiVersion: 'audit.k8s.io/v1',
    kind: 'Policy',
    omitStages: ['RequestReceived'],
    rules: [
      { level: 'None', nonResourceURLs: ['/healthz*', '/livez*', '/readyz*', '/version', '/metrics', '/openapi*', '/api', '/api/*', '/apis', '/apis/*', '/.well-known/*', '/openid/*'] },
      {
        level: 'Metadata',
        resources: [{ group: '', resources: ['secrets', 'configmaps', 'serviceaccounts/token'] }, { group: 'authentication.k8s.io', resources: ['tokenreviews'] }],
      },
      { level: 'None', verbs: ['get', 'update'], resources: [{ group: 'coordination.k8s.io', resources: ['leases'] }] },
      { level: 'None', resources: [{ group: '', resources: ['events'] }, { group: 'events.k8s.io', resources: ['events'] }] },
      { level: 'None', users: ['system:kube-proxy'], verbs: ['watch'], resources: [{ group: '', resources: ['endpoints', 'services', 'services/status'] }, { group: 'discovery.k8s.io', resources: ['endpointslices'] }] },
      { level: 'None', userGroups: ['system:nodes'], verbs: ['get'], resources: [{ group: '', resources: ['nodes', 'nodes/status'] }] },
      { level: 'Request', verbs: ['create', 'update', 'patch', 'delete', 'deletecollection'] },
      { level: 'Metadata' },
    ],
  };
}

/**
 * The AdmissionConfiguration (apiserver.config.k8s.io/v1) with Pod Security Admission's defaults
 * for namespaces without `pod-security.kubernetes.io/*` labels (a label still overrides them: the
 * upstream e2e framework labels each test namespace itself), at the `latest` version of the
 * standards, and the exempt namespaces.
 */
export function admissionConfiguration(config: ResolvedConfig) {
  const p = config.apiServer.podSecurity;
  return {
    apiVersion: 'apiserver.config.k8s.io/v1',
    kind: 'AdmissionConfiguration',
    plugins: [{
      name: 'PodSecurity',
      configuration: {
        apiVersion: 'pod-security.admission.config.k8s.io/v1',
        kind: 'PodSecurityConfiguration',
        defaults: { enforce: p.enforce, 'enforce-version': 'latest', audit: p.audit, 'audit-version': 'latest', warn: p.warn, 'warn-version': 'latest' },
        exemptions: { usernames: [], runtimeClasses: [], namespaces: p.exemptNamespaces },
      },
    }],
  };
}
