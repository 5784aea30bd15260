/**
 * The kube-apiserver's hardening defaults (manifests/apiserver-hardening.ts): flags and mounts on
 * both apiservers, each default turned off alone, the audit policy evaluated the way the apiserver
 * does (first matching rule), the AdmissionConfiguration.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { admissionConfiguration, auditPolicy, hardeningFiles, hardeningFlags, hardeningPaths } from '../../../manifests/apiserver-hardening.ts';
import { bootstrapStaticPods } from '../../../manifests/static-pods.ts';
import { apiServerDaemonSet } from '../../../manifests/self-hosted.ts';
import { flagsOf, sampleConfig } from './fixtures.ts';

const config = sampleConfig();
const off = (which: 'auditLog' | 'secretsEncryption' | 'podSecurity') => sampleConfig({ apiServer: { ...config.apiServer, [which]: { ...config.apiServer[which], disabled: true } } });
const bootstrapApiserver = (c = config) => bootstrapStaticPods(c)[0]!.pod.spec!;
const selfHostedApiserver = (c = config) => apiServerDaemonSet(c).spec!.template.spec!;

/** The level the policy gives a request (first matching rule; `*` suffix wildcards as the apiserver's). */
function levelOf(req: { user?: string; groups?: string[]; verb: string; group?: string; resource?: string; path?: string }): string {
  for (const r of auditPolicy().rules) {
    if (r.users && !r.users.includes(req.user ?? '')) continue;
    if (r.userGroups && !r.userGroups.some((g) => req.groups?.includes(g))) continue;
    if (r.verbs && !r.verbs.includes(req.verb)) continue;
    if (r.nonResourceURLs && (req.path === undefined || !r.nonResourceURLs.some((u) => (u.endsWith('*') ? req.path!.startsWith(u.slice(0, -1)) : req.path === u)))) continue;
    if (r.resources && (req.resource === undefined || !r.resources.some((g) => g.group === (req.group ?? '') && g.resources.includes(req.resource!)))) continue;
    return r.level;
  }
  return 'None';
}

describe('hardening flags and mounts', () => {
  it('both apiservers: audit log with the benchmark\'s rotation, the policy, the admission config, the encryption config', () => {
    const p = hardeningPaths(config);
    for (const [instance, spec] of [['bootstrap', bootstrapApiserver()], ['self-hosted', selfHostedApiserver()]] as const) {
      const f = flagsOf(spec.containers[0]!);
      assert.deepEqual(
        ['audit-log-path', 'audit-log-maxage', 'audit-log-maxbackup', 'audit-log-maxsize', 'audit-policy-file', 'admission-control-config-file', 'encryption-provider-config'].map((n) => f.get(n)),
        [p.auditLog(instance), '30', '10', '100', '/etc/kubernetes/audit-policy.yaml', '/etc/kubernetes/admission-config.yaml', '/etc/kubernetes/pki/encryption-config.yaml'],
        instance,
      );
    }
    assert.notEqual(p.auditLog('bootstrap'), p.auditLog('self-hosted'), 'the two apiservers run side by side: one log file each');
  });

  it('each default turned off alone drops only its flags and mounts', () => {
    const names = (c: ReturnType<typeof sampleConfig>) => [...flagsOf(selfHostedApiserver(c).containers[0]!).keys()].filter((k) => /^audit|admission-control|encryption/.test(k)).sort();
    const vols = (c: ReturnType<typeof sampleConfig>) => bootstrapApiserver(c).volumes!.map((v) => v.name);
    assert.deepEqual(names(off('auditLog')), ['admission-control-config-file', 'encryption-provider-config']);
    assert.deepEqual(vols(off('auditLog')), ['k8s-certs', 'admission-config']);
    assert.deepEqual(names(off('podSecurity')), ['audit-log-maxage', 'audit-log-maxbackup', 'audit-log-maxsize', 'audit-log-path', 'audit-policy-file', 'encryption-provider-config']);
    assert.deepEqual(vols(off('podSecurity')), ['k8s-certs', 'audit-policy', 'audit-log']);
    assert.ok(!names(off('secretsEncryption')).includes('encryption-provider-config'));
    assert.deepEqual(hardeningFiles(off('secretsEncryption')), ['/etc/kubernetes/audit-policy.yaml', '/etc/kubernetes/admission-config.yaml']);
  });

  it('extraArgs still override a default (e.g. a shorter maxage) and the config\'s limits reach the flags', () => {
    const c = sampleConfig({ apiServer: { ...config.apiServer, extraArgs: { 'audit-log-maxage': '7' }, auditLog: { ...config.apiServer.auditLog, maxBackups: 3, dir: '/srv/audit' } } });
    const f = flagsOf(selfHostedApiserver(c).containers[0]!);
    assert.deepEqual([f.get('audit-log-maxage'), f.get('audit-log-maxbackup'), f.get('audit-log-path')], ['7', '3', '/srv/audit/audit.log']);
    assert.deepEqual(hardeningFlags(c, 'bootstrap')['audit-log-path'], '/srv/audit/bootstrap-audit.log');
  });
});

describe('audit policy', () => {
  it('no request on a Secret, ConfigMap, token or TokenReview is logged beyond Metadata (no bytes), whoever sends it', () => {
    for (const verb of ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection'])
      for (const [group, resource] of [['', 'secrets'], ['', 'configmaps'], ['', 'serviceaccounts/token'], ['authentication.k8s.io', 'tokenreviews']] as const)
        for (const who of [{ user: 'kubernetes-admin' }, { user: 'system:kube-proxy' }, { user: 'system:node:cp-1', groups: ['system:nodes'] }])
          assert.equal(levelOf({ ...who, verb, group, resource }), 'Metadata', `${who.user} ${verb} ${resource}`);
  });

  it('no rule logs response bodies; the first stage is omitted', () => {
    assert.ok(auditPolicy().rules.every((r) => r.level !== 'RequestResponse'));
    assert.deepEqual(auditPolicy().omitStages, ['RequestReceived']);
  });

  it('health, metrics and discovery URLs, lease renewals, Events and kube-proxy\'s watches are not logged', () => {
    for (const path of ['/healthz', '/livez?verbose', '/readyz', '/version', '/metrics', '/openapi/v3', '/apis/apps/v1']) assert.equal(levelOf({ verb: 'get', path }), 'None', path);
    assert.equal(levelOf({ verb: 'update', group: 'coordination.k8s.io', resource: 'leases' }), 'None');
    assert.equal(levelOf({ verb: 'create', resource: 'events' }), 'None');
    assert.equal(levelOf({ user: 'system:kube-proxy', verb: 'watch', group: 'discovery.k8s.io', resource: 'endpointslices' }), 'None');
  });

  it('writes are logged with their request, reads with their metadata', () => {
    assert.equal(levelOf({ user: 'kubernetes-admin', verb: 'create', resource: 'pods' }), 'Request');
    assert.equal(levelOf({ user: 'kubernetes-admin', verb: 'delete', group: 'apps', resource: 'daemonsets' }), 'Request');
    assert.equal(levelOf({ user: 'kubernetes-admin', verb: 'list', resource: 'pods' }), 'Metadata');
    assert.equal(levelOf({ user: 'kubernetes-admin', verb: 'get', path: '/logs' }), 'Metadata');
  });
});

describe('AdmissionConfiguration (Pod Security)', () => {
  it('enforce baseline, warn and audit restricted at latest; kube-system exempt, and what the config adds', () => {
    const pss = admissionConfiguration(sampleConfig({ apiServer: { ...config.apiServer, podSecurity: { ...config.apiServer.podSecurity, exemptNamespaces: ['kube-system', 'monitoring'] } } })).plugins[0]!;
    assert.equal(pss.name, 'PodSecurity');
    assert.equal(pss.configuration.apiVersion, 'pod-security.admission.config.k8s.io/v1');
    assert.deepEqual(pss.configuration.defaults, { enforce: 'baseline', 'enforce-version': 'latest', audit: 'restricted', 'audit-version': 'latest', warn: 'restricted', 'warn-version': 'latest' });
    assert.deepEqual(pss.configuration.exemptions, { usernames: [], runtimeClasses: [], namespaces: ['kube-system', 'monitoring'] });
  });
});
