/**
 * The recovery static pod (pure data from a DaemonSet) and the watcher script, run for real with
 * `sh` against fake `curl` and `ctr` (a unit: the real runtime is exercised in test/e2e/recovery.test.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { mkdtempSync, readFileSync, existsSync, writeFileSync, mkdirSync, chmodSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { apiServerDaemonSet } from '../../../manifests/self-hosted.ts';
import { projectedVolumes, recoveryStaticPod } from '../../../manifests/recovery.ts';
import { recoveryWatcherScript } from '../../../manifests/recovery-watcher.ts';
import { sampleConfig } from './fixtures.ts';

test('the recovery pod is the DaemonSet pod, with its hostPath volumes as they are, and no API-only fields', () => {
  const ds = apiServerDaemonSet(sampleConfig());
  const vols = projectedVolumes(ds, '/etc/kubernetes/recovery/volumes');
  assert.deepEqual(vols, [], 'the apiserver reads the host\'s PKI: nothing to copy from the API');
  const pod = recoveryStaticPod(ds, vols);
  assert.equal(pod.metadata.name, 'recovery-kube-apiserver');
  assert.deepEqual(pod.spec?.containers, ds.spec!.template.spec?.containers);
  assert.ok(pod.spec?.containers[0]?.command?.includes('--permit-port-sharing=true'));
  // The PKI (with the encryption config in it), the audit policy and log directory, the admission config: the recovery copy keeps every hardening default.
  assert.deepEqual(pod.spec?.volumes, [
    { name: 'k8s-certs', hostPath: { path: '/etc/kubernetes/pki', type: 'Directory' } },
    { name: 'audit-policy', hostPath: { path: '/etc/kubernetes/audit-policy.yaml', type: 'File' } },
    { name: 'audit-log', hostPath: { path: '/var/log/kubernetes/audit', type: 'DirectoryOrCreate' } },
    { name: 'admission-config', hostPath: { path: '/etc/kubernetes/admission-config.yaml', type: 'File' } },
  ]);
  for (const flag of ['--audit-policy-file=/etc/kubernetes/audit-policy.yaml', '--audit-log-path=/var/log/kubernetes/audit/audit.log', '--encryption-provider-config=/etc/kubernetes/pki/encryption-config.yaml', '--admission-control-config-file=/etc/kubernetes/admission-config.yaml'])
    assert.ok(pod.spec?.containers[0]?.command?.includes(flag), flag);
  for (const f of ['serviceAccountName', 'automountServiceAccountToken', 'nodeSelector', 'tolerations']) assert.equal(f in (pod.spec ?? {}), false, f);
  const selector = ds.spec!.selector.matchLabels ?? {};
  assert.ok(Object.entries(selector).some(([k, v]) => pod.metadata.labels?.[k] !== v), 'the DaemonSet selector must not match the mirror pod');
});

test('a Secret volume (a DaemonSet an older kubeception or an operator made) still becomes a host directory', () => {
  const ds = apiServerDaemonSet(sampleConfig());
  ds.spec!.template.spec!.volumes!.push({ name: 'secrets', secret: { secretName: 'kube-apiserver' } });
  const vols = projectedVolumes(ds, '/etc/kubernetes/recovery/volumes');
  assert.deepEqual(vols, [{ volume: 'secrets', kind: 'Secret', name: 'kube-apiserver', hostDir: '/etc/kubernetes/recovery/volumes/secrets' }]);
  assert.deepEqual(recoveryStaticPod(ds, vols).spec?.volumes?.at(-1), { name: 'secrets', hostPath: { path: '/etc/kubernetes/recovery/volumes/secrets', type: 'Directory' } });
});

test('with this node\'s IP, the recovery pod needs no downward API: $(HOST_IP) resolved, probes given the host', () => {
  const ds = apiServerDaemonSet(sampleConfig());
  const pod = recoveryStaticPod(ds, projectedVolumes(ds, '/r'), '10.250.0.7');
  const c = pod.spec!.containers[0]!;
  assert.ok(c.command!.includes('--advertise-address=10.250.0.7'), c.command!.join(' '));
  assert.ok(!c.command!.some((a) => a.includes('$(')));
  assert.deepEqual(c.env, [{ name: 'HOST_IP', value: '10.250.0.7' }]);
  for (const p of [c.livenessProbe, c.readinessProbe, c.startupProbe]) assert.equal(p!.httpGet!.host, '10.250.0.7');
  assert.equal(ds.spec!.template.spec!.containers[0]!.readinessProbe!.httpGet!.host, undefined, 'the DaemonSet itself is not changed');
});

test('a volume the recovery pod cannot stand in for is refused by name', () => {
  const ds = apiServerDaemonSet(sampleConfig());
  ds.spec!.template.spec!.volumes!.push({ name: 'scratch', emptyDir: {} });
  assert.throws(() => projectedVolumes(ds, '/x'), (e: any) => e.code === 'recovery-unsupported-volume' && e.what.includes('scratch'));
});

/**
 * A sandbox: fake curl (status from a file), fake ctr and crictl (containers/tasks from files: `containers`
 * holds `<id> <pod name>`, `tasks` `<id> <pid> <state>`), a static pod dir; `runtime` picks which one
 * the script asks.
 */
function sandbox(port: number, runtime: 'containerd' | 'cri' = 'containerd') {
  const d = mkdtempSync(join(tmpdir(), 'kc-watch-'));
  const bin = join(d, 'bin');
  mkdirSync(bin);
  mkdirSync(join(d, 'manifests'));
  writeFileSync(join(d, 'status'), '000');
  writeFileSync(join(d, 'containers'), '');
  writeFileSync(join(d, 'tasks'), '');
  writeFileSync(join(bin, 'curl'), `#!/bin/sh\ncat ${d}/status\n`);
  // containers ls -q FILTER: ids whose pod name matches the filter's ~="regexp"; tasks ls: the tasks file.
  writeFileSync(join(bin, 'ctr'), `#!/bin/sh
echo "$*" >> ${d}/ctr-calls
case "$*" in
  *"containers ls"*) re=$(echo "$*" | sed -n 's/.*~="\\([^"]*\\)".*/\\1/p'); while read -r id pod; do echo "$pod" | grep -qE "$re" && echo "$id"; done < ${d}/containers ;;
  *"tasks ls"*) echo "TASK PID STATUS"; cat ${d}/tasks ;;
  *"containers delete"*|*"tasks delete"*) echo "$*" >> ${d}/deleted ;;
esac
`);
  // crictl ps -q --state running --name '^kube-apiserver$': the ids with a RUNNING task (every fake container is
  // a kube-apiserver); crictl inspect … ID: "<pid> <pod name>" as the go-template asks.
  writeFileSync(join(bin, 'crictl'), `#!/bin/sh
echo "$*" >> ${d}/crictl-calls
case "$*" in
  *" ps "*) awk '$3 == "RUNNING" { print $1 }' ${d}/tasks ;;
  *" inspect "*) for id; do :; done; pid=$(awk -v id="$id" '$1 == id { print $2 }' ${d}/tasks); pod=$(awk -v id="$id" '$1 == id { print $2 }' ${d}/containers); echo "$pid $pod" ;;
esac
`);
  for (const f of ['curl', 'ctr', 'crictl']) chmodSync(join(bin, f), 0o755);
  writeFileSync(join(d, 'lkg.yaml'), 'kind: Pod # last known good\n');
  const script = recoveryWatcherScript({
    lkgManifest: join(d, 'lkg.yaml'), staticPodPath: join(d, 'manifests'), activeFile: 'recovery-kube-apiserver.yaml', readyzUrl: 'https://x/readyz',
    caFile: '/dev/null', port, containerdSocket: '/nonexistent', bootFlag: join(d, 'flag'), intervalS: 0.05, failsBeforeRecovery: 3, readyInARow: 4, hungAfterS: 1, runtime,
  });
  writeFileSync(join(d, 'watch.sh'), script);
  const child = spawn('sh', [join(d, 'watch.sh')], { env: { PATH: `${bin}:/usr/bin:/bin` }, stdio: ['ignore', 'pipe', 'inherit'] });
  let log = '';
  child.stdout.on('data', (b) => (log += b));
  const active = join(d, 'manifests', 'recovery-kube-apiserver.yaml');
  return {
    d, active, set: (f: string, v: string) => writeFileSync(join(d, f), v), log: () => log, stop_watch: () => child.kill('SIGKILL'),
    stop: () => { child.kill('SIGKILL'); rmSync(d, { recursive: true, force: true }); },
  };
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function eventually(check: () => boolean, ms = 20_000) {
  const end = Date.now() + ms;
  while (Date.now() < end) { if (check()) return true; await sleep(25); }
  return false;
}

test('watcher: no answer and no apiserver container → activates; a bootstrap in progress → stands down', async () => {
  const s = sandbox(6443);
  try {
    s.set('manifests/bootstrap-kube-apiserver.yaml', 'x');
    await sleep(600);
    assert.equal(existsSync(s.active), false, 'a bootstrap owns the control plane');
    rmSync(join(s.d, 'manifests/bootstrap-kube-apiserver.yaml'));
    assert.ok(await eventually(() => existsSync(s.active)), s.log());
    assert.equal(readFileSync(s.active, 'utf8'), 'kind: Pod # last known good\n');
    // The script moves the manifest into place, then logs: wait for the line too.
    assert.ok(await eventually(() => /activated: .* no kube-apiserver container runs/.test(s.log())), s.log());
  } finally { s.stop(); }
});

test('watcher: a running apiserver container that is starting is left alone until it hangs', async () => {
  const s = sandbox(6443);
  try {
    s.set('containers', 'c1 kube-apiserver-abcde\n');
    s.set('tasks', `c1 ${process.pid} RUNNING\n`);
    await sleep(500);
    assert.equal(existsSync(s.active), false);
    assert.ok(await eventually(() => existsSync(s.active), 30_000), 'activated once it did not serve for hungAfterS');
    assert.ok(await eventually(() => /runs but does not serve/.test(s.log())), s.log());
  } finally { s.stop(); }
});

test('watcher: hands back only when a self-hosted apiserver listens on the port and /readyz passes N times in a row', async () => {
  const server = createServer().listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const port = (server.address() as { port: number }).port;
  const s = sandbox(port);
  try {
    s.set('manifests/recovery-kube-apiserver.yaml', 'active');
    s.set('status', '200');
    s.set('containers', `r1 recovery-kube-apiserver-node\ns1 kube-apiserver-xyz\n`);
    s.set('tasks', `r1 ${process.pid} RUNNING\ns1 1 RUNNING\n`); // the self-hosted pid (1) does not listen on the port
    await sleep(600);
    assert.equal(existsSync(s.active), true, 'kept while the self-hosted apiserver does not listen');
    s.set('tasks', `r1 1 RUNNING\ns1 ${process.pid} RUNNING\n`); // this process listens on the port
    assert.ok(await eventually(() => !existsSync(s.active)), s.log());
    // The script removes the manifest, then logs (seen under load: the line not yet there): wait for it too.
    assert.ok(await eventually(() => /hand-back/.test(s.log())), s.log());
  } finally {
    s.stop();
    server.close();
  }
});

test('watcher on a CRI runtime (CRI-O, crictl): hands back only when the self-hosted apiserver listens; ctr is never asked', async () => {
  const server = createServer().listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const port = (server.address() as { port: number }).port;
  const s = sandbox(port, 'cri');
  try {
    s.set('manifests/recovery-kube-apiserver.yaml', 'active');
    s.set('status', '200');
    s.set('containers', `r1 recovery-kube-apiserver-node\ns1 kube-apiserver-xyz\n`);
    s.set('tasks', `r1 ${process.pid} RUNNING\ns1 1 RUNNING\n`);
    await sleep(600);
    assert.equal(existsSync(s.active), true, 'kept while the self-hosted apiserver does not listen');
    s.set('tasks', `r1 1 RUNNING\ns1 ${process.pid} RUNNING\n`);
    assert.ok(await eventually(() => !existsSync(s.active)), s.log());
    assert.ok(await eventually(() => /hand-back/.test(s.log())), s.log());
    const calls = readFileSync(join(s.d, 'crictl-calls'), 'utf8');
    assert.match(calls, /--runtime-endpoint unix:\/\/\/nonexistent ps -q --state running --name \^kube-apiserver\$/);
    assert.equal(existsSync(join(s.d, 'ctr-calls')), false, 'ctr was called');
  } finally {
    s.stop();
    server.close();
  }
});

test('watcher boot cleanup on a CRI runtime: deletes nothing (CRI-O wipes the last boot\'s containers itself), hands the recovery pod over', async () => {
  const s = sandbox(6443, 'cri');
  try {
    s.stop_watch();
    s.set('containers', 'dead1 kube-apiserver-y\n');
    s.set('tasks', 'dead1 0 STOPPED\n');
    const code = await new Promise<number>((r) => spawn('sh', [join(s.d, 'watch.sh'), 'boot-cleanup'], { env: { PATH: `${join(s.d, 'bin')}:/usr/bin:/bin` }, stdio: 'ignore' }).on('exit', (c) => r(c ?? -1)));
    assert.equal(code, 0);
    assert.equal(existsSync(join(s.d, 'deleted')), false);
    assert.equal(readFileSync(s.active, 'utf8'), 'kind: Pod # last known good\n');
  } finally { s.stop(); }
});

test('watcher boot cleanup: once per boot, removes only containers without a RUNNING task', async () => {
  const s = sandbox(6443);
  try {
    s.stop_watch();
    s.set('containers', 'live kube-proxy-x\ndead1 kube-apiserver-y\ndead2 coredns-z\n');
    s.set('tasks', 'live 4242 RUNNING\ndead1 0 STOPPED\n');
    const run = () => new Promise<number>((r) => spawn('sh', [join(s.d, 'watch.sh'), 'boot-cleanup'], { env: { PATH: `${join(s.d, 'bin')}:/usr/bin:/bin` }, stdio: 'ignore' }).on('exit', (c) => r(c ?? -1)));
    assert.equal(await run(), 0);
    const deleted = readFileSync(join(s.d, 'deleted'), 'utf8');
    assert.match(deleted, /containers delete dead1/);
    assert.match(deleted, /containers delete dead2/);
    assert.doesNotMatch(deleted, /live/);
    assert.equal(readFileSync(s.active, 'utf8'), 'kind: Pod # last known good\n', 'the recovery pod is handed to the kubelet at boot');
    rmSync(join(s.d, 'deleted'));
    rmSync(s.active);
    assert.equal(await run(), 0);
    assert.equal(existsSync(join(s.d, 'deleted')), false, 'the flag makes it once per boot');
    assert.equal(existsSync(s.active), false);
  } finally { s.stop(); }
});

test('watcher unit: sandboxed (read-only system, no home, private /tmp and /dev, no new privileges, CAP_SYS_PTRACE only), a fixed PATH, no kubeception variables; it may write only where the script writes', async () => {
  const { recoveryWatcherFiles } = await import('../../../lib/steps/recovery/recovery.ts');
  const config = sampleConfig();
  const { script, unit } = recoveryWatcherFiles(config);
  const service = unit.slice(unit.indexOf('[Service]'), unit.indexOf('[Install]'));
  const keys = new Map<string, string[]>();
  for (const line of service.split('\n').slice(1).filter((l) => l.includes('='))) {
    const [k, ...v] = line.split('=');
    keys.set(k!, [...(keys.get(k!) ?? []), v.join('=')]);
  }
  const one = (k: string) => {
    assert.equal(keys.get(k)?.length, 1, `${k} set once in:\n${service}`);
    return keys.get(k)![0]!;
  };
  for (const [k, v] of Object.entries({
    NoNewPrivileges: 'yes', ProtectSystem: 'strict', ProtectHome: 'yes', PrivateTmp: 'yes', PrivateDevices: 'yes',
    CapabilityBoundingSet: 'CAP_SYS_PTRACE', AmbientCapabilities: '', RestrictSUIDSGID: 'yes', RestrictNamespaces: 'yes',
    ProtectKernelTunables: 'yes', ProtectKernelModules: 'yes', ProtectControlGroups: 'yes', SystemCallFilter: '@system-service',
    RestrictAddressFamilies: 'AF_UNIX AF_INET AF_INET6', RuntimeDirectory: 'kubeception', RuntimeDirectoryPreserve: 'yes',
  })) assert.equal(one(k), v, k);
  assert.equal(one('Environment'), 'PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C');
  assert.doesNotMatch(one('Environment'), /local/, 'no /usr/local on the PATH');
  assert.deepEqual(one('UnsetEnvironment').split(' ').sort(), ['KUBECEPTION_CERTIFICATE_KEY', 'KUBECEPTION_CRASH_AT', 'KUBECEPTION_FROM_SOURCE', 'KUBECEPTION_TOKEN']);
  // Every path the script writes (the active copy, its temp file, the boot flag) is writable in the sandbox.
  const writable = [...one('ReadWritePaths').split(' ').map((p) => p.replace(/^-/, '')), `/run/${one('RuntimeDirectory')}`];
  const staticPodPath = config.distro.paths.staticPodPath;
  const flag = /\[ -e '([^']+)' \] && exit 0/.exec(script)?.[1];
  assert.ok(flag, 'the boot flag path is in the script');
  for (const target of [join(staticPodPath, '.recovery.tmp'), join(staticPodPath, 'recovery-kube-apiserver.yaml'), flag])
    assert.ok(writable.some((w) => target.startsWith(`${w}/`)), `${target} is not under ${writable.join(', ')}`);
  assert.match(script, new RegExp(`^STATIC='${staticPodPath}'$`, 'm'));
  // The script itself, its manifest and the CA must be readable: none under /home, /root or /run/user (ProtectHome).
  for (const p of [/^LKG='([^']+)'/m, /^CA='([^']+)'/m].map((re) => re.exec(script)?.[1] ?? '')) assert.doesNotMatch(p, /^\/(home|root|run\/user)\//, p);
});
