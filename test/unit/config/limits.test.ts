/**
 * Config values that passed validation although they turn the config against the host or the
 * cluster (issue 24, F9): every one is a ConfigError naming the field, before anything runs. Next to
 * each refusal, the nearest value that is accepted, so a rule cannot simply refuse everything.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { resolveConfig, type HostFacts } from '../../../lib/config/validate.ts';
import { parseConfig, parseDistro } from '../../../lib/config/schema.ts';
import { parseToml } from '../../../lib/config/toml.ts';
import { ConfigError } from '../../../lib/errors.ts';
import type { DistroSettings } from '../../../lib/types.ts';

const load = (name: string): DistroSettings => parseDistro(parseToml(readFileSync(new URL(`../../../distros/${name}/${name}.toml`, import.meta.url), 'utf8'), `${name}.toml`), name, `${name}.toml`);
const debian = load('debian');
const kubic = load('kubic');
const facts: HostFacts = { hostname: 'node-a', addresses: [{ address: '10.250.0.2', cidr: '10.250.0.2/16' }] };
const resolve = (cfg: unknown, distro = debian) => resolveConfig(parseConfig(cfg, 'cfg.ts'), distro, facts, 'cfg.ts');

function rejects(cfg: unknown, field: RegExp, why: RegExp, distro = debian) {
  assert.throws(() => resolve(cfg, distro), (e: unknown) => {
    assert.ok(e instanceof ConfigError, `expected ConfigError, got ${e}`);
    assert.equal(e.badInput, true);
    assert.match(e.what, field);
    assert.match(e.why, why);
    assert.ok(e.fix.length > 10, 'a fix');
    return true;
  });
}

const refused: [string, unknown, RegExp, RegExp][] = [
  ['controlPlaneEndpoint port above 65535', { controlPlaneEndpoint: 'cp.example.com:99999' }, /^cfg\.ts: controlPlaneEndpoint$/, /port 99999 is not a TCP port \(1–65535\)/],
  ['controlPlaneEndpoint port 0', { controlPlaneEndpoint: '10.250.0.9:0' }, /controlPlaneEndpoint/, /port 0 is not a TCP port/],
  ['controlPlaneEndpoint IPv6 port out of range', { controlPlaneEndpoint: '[fd00::9]:70000' }, /controlPlaneEndpoint/, /port 70000/],
  ['controlPlaneEndpoint host that is no DNS name', { controlPlaneEndpoint: '-cp-.example:6443' }, /controlPlaneEndpoint/, /"-cp-\.example" is neither an IP address nor a DNS name/],
  ['CA validity beyond 100 years', { caCertificateValidityPeriod: '99999999999999999h' }, /caCertificateValidityPeriod/, /at most 876000h \(100 years\)/],
  ['leaf validity beyond 100 years', { certificateValidityPeriod: '1000000h' }, /certificateValidityPeriod/, /at most 876000h/],
  ['leaf outliving the (default) CA', { certificateValidityPeriod: '175200h' }, /certificateValidityPeriod/, /longer than the CAs' 87600h/],
  ['leaf outliving the configured CA', { certificateValidityPeriod: '9000h', caCertificateValidityPeriod: '8760h' }, /certificateValidityPeriod/, /longer than the CAs' 8760h/],
  ['renewal window as long as the validity', { certificateValidityPeriod: '8760h', certificateRenewalWindow: '8760h' }, /certificateRenewalWindow/, /not shorter than the leaves' validity 8760h: every run would re-issue every leaf/],
  ['short leaves under the default renewal window', { certificateValidityPeriod: '1h' }, /certificateRenewalWindow/, /2160h .* validity 1h/],
  ['kubelet.extraConfig re-enabling the read-only port', { kubelet: { extraConfig: { readOnlyPort: 10255 } } }, /kubelet\.extraConfig\.readOnlyPort/, /unauthenticated/],
  ['kubelet.extraConfig maxPods not a number', { kubelet: { extraConfig: { maxPods: 'many' } } }, /kubelet\.extraConfig\.maxPods/, /expected number/],
  ['kubelet.extraConfig failSwapOn not a boolean', { kubelet: { extraConfig: { failSwapOn: 'no' } } }, /kubelet\.extraConfig\.failSwapOn/, /expected boolean/],
  ['kubelet.extraConfig healthzPort out of range', { kubelet: { extraConfig: { healthzPort: 70000 } } }, /kubelet\.extraConfig\.healthzPort/, /65535/],
  ['kubelet.extraConfig resolvConf not a string', { kubelet: { extraConfig: { resolvConf: 5 } } }, /kubelet\.extraConfig\.resolvConf/, /expected string/],
  ['etcd.extraArgs turning client certificates off', { etcd: { extraArgs: { 'client-cert-auth': 'false' } } }, /etcd\.extraArgs\.client-cert-auth/, /kubeception sets --client-cert-auth itself/],
  ['etcd.extraArgs turning peer certificates off', { etcd: { extraArgs: { 'peer-client-cert-auth': 'false' } } }, /etcd\.extraArgs\.peer-client-cert-auth/, /sets --peer-client-cert-auth itself/],
  ['etcd.extraArgs moving the client listener', { etcd: { extraArgs: { 'listen-client-urls': 'http://0.0.0.0:2379' } } }, /etcd\.extraArgs\.listen-client-urls/, /itself/],
  ['etcd.extraArgs replacing the trusted CA', { etcd: { extraArgs: { 'trusted-ca-file': '/tmp/ca.crt' } } }, /etcd\.extraArgs\.trusted-ca-file/, /itself/],
  ['etcd.extraArgs self-signed TLS', { etcd: { extraArgs: { 'auto-tls': 'true' } } }, /etcd\.extraArgs\.auto-tls/, /no certificate check/],
  ['etcd.extraArgs value with a newline (a second variable in the environment file)', { etcd: { extraArgs: { 'quota-backend-bytes': '8589934592\nETCD_CLIENT_CERT_AUTH=false' } } }, /etcd\.extraArgs\.quota-backend-bytes/, /line break or control character/],
  ['apiServer.extraArgs value with a newline', { apiServer: { extraArgs: { v: '2\n' } } }, /apiServer\.extraArgs\.v/, /line break/],
  ['certificatesDir /etc/ssl (the system trust store)', { certificatesDir: '/etc/ssl' }, /^cfg\.ts: certificatesDir$/, /\/etc\/ssl/],
  ['certificatesDir inside /etc/ssl', { certificatesDir: '/etc/ssl/kubernetes' }, /certificatesDir/, /inside \/etc\/ssl/],
  ["certificatesDir the kubelet's directory", { certificatesDir: '/var/lib/kubelet' }, /certificatesDir/, /\/var\/lib\/kubelet/],
  ["certificatesDir inside the kubelet's directory", { certificatesDir: '/var/lib/kubelet/pki' }, /certificatesDir/, /inside \/var\/lib\/kubelet/],
  ['certificatesDir the static pod directory', { certificatesDir: '/etc/kubernetes/manifests' }, /certificatesDir/, /static pod/],
  ['etcd.dataDir /usr/local', { etcd: { dataDir: '/usr/local' } }, /etcd\.dataDir/, /inside \/usr/],
  ['etcd.dataDir /var/lib (a parent of other components\' directories)', { etcd: { dataDir: '/var/lib' } }, /etcd\.dataDir/, /system directory/],
  ['etcd.dataDir /etc/systemd/system', { etcd: { dataDir: '/etc/systemd/system/etcd' } }, /etcd\.dataDir/, /inside \/etc\/systemd/],
  ['etcd.dataDir under /tmp', { etcd: { dataDir: '/tmp/etcd' } }, /etcd\.dataDir/, /inside \/tmp/],
  ['etcd.dataDir a parent of /etc/kubernetes/manifests', { etcd: { dataDir: '/etc/kubernetes' } }, /etcd\.dataDir/, /system directory/],
  ['certificatesDir inside the etcd data dir (it is given to the etcd user)', { certificatesDir: '/var/lib/etcd/default/pki' }, /certificatesDir/, /etcd\.dataDir/],
  ['etcd.dataDir inside certificatesDir', { etcd: { dataDir: '/etc/kubernetes/pki/etcd-data' } }, /etcd\.dataDir/, /certificatesDir/],
  ['etcd.dataDir equal to certificatesDir', { certificatesDir: '/srv/k8s', etcd: { dataDir: '/srv/k8s' } }, /etcd\.dataDir/, /certificatesDir/],
  ['certificatesDir written with //', { certificatesDir: '//etc//ssl/' }, /certificatesDir/, /\/etc\/ssl/],
];
for (const [name, cfg, field, why] of refused) test(`refused: ${name}`, () => rejects(cfg, field, why));

test("kubic's kubelet directory is the kubelet's too", () => {
  rejects({ certificatesDir: '/etc/kubernetes/kubelet/pki' }, /certificatesDir/, /inside \/etc\/kubernetes\/kubelet/, kubic);
  assert.equal(resolve({}, kubic).etcd.dataDir, '/var/lib/etcd');
});

test('accepted: the values next to each refusal', () => {
  for (const cpe of ['cp.example.com:6443', 'cp.example.com:65535', 'cp.example.com:1', '10.250.0.9', '[fd00::9]:6443', 'cp-1.example.com']) assert.equal(resolve({ controlPlaneEndpoint: cpe }).controlPlaneEndpoint, cpe);
  assert.equal(resolve({ caCertificateValidityPeriod: '876000h', certificateValidityPeriod: '876000h', certificateRenewalWindow: '8760h' }).caCertificateValidityDays, 36500);
  assert.equal(resolve({ certificateValidityPeriod: '87600h' }).certificateValidityDays, 3650);
  const short = resolve({ certificateValidityPeriod: '8m', certificateRenewalWindow: '3m' }); // test/e2e/certs.test.ts
  assert.equal(short.certificateRenewBeforeDays! < short.certificateValidityDays!, true);
  assert.deepEqual(resolve({ kubelet: { extraConfig: { maxPods: 50, failSwapOn: true, resolvConf: '/run/systemd/resolve/resolv.conf', healthzPort: 10248, evictionHard: { 'memory.available': '100Mi' }, somethingNew: 'kept' } } }).kubelet.extraConfig, { maxPods: 50, failSwapOn: true, resolvConf: '/run/systemd/resolve/resolv.conf', healthzPort: 10248, evictionHard: { 'memory.available': '100Mi' }, somethingNew: 'kept' });
  assert.deepEqual(resolve({ etcd: { extraArgs: { 'quota-backend-bytes': '8589934592', 'snapshot-count': '5000', 'log-level': 'warn' } } }).etcd.extraArgs, { 'quota-backend-bytes': '8589934592', 'snapshot-count': '5000', 'log-level': 'warn' });
  for (const dir of ['/etc/kubernetes/pki', '/srv/pki', '/etc/pki/kubernetes', '/var/lib/kubeception-pki', '/root/pki']) assert.equal(resolve({ certificatesDir: dir }).certificatesDir, dir);
  for (const dir of ['/var/lib/etcd', '/var/lib/etcd/default', '/srv/etcd', '/var/lib/etcd2']) assert.equal(resolve({ etcd: { dataDir: dir } }).etcd.dataDir, dir);
});
