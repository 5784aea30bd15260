/**
 * Kubelet serving certificates from the cluster CA, verified by the apiserver (CIS 1.2.5; issue 26),
 * on the bed: control plane klcp, worker klw1 (hosts `kl…`, one cluster).
 * - bootstrap: klcp's kubelet serves with a certificate kubeception signed on the host before the
 *   kubelet started (no serving CSR of klcp exists), and both apiservers verify kubelet certificates
 *   (`--kubelet-certificate-authority`): `kubectl logs` works through the bootstrap apiserver of a
 *   bootstrap stopped before any CSR approver exists (`--only` up to self-hosted-control-plane);
 * - the worker's join first stops at preflight (exit 2, host unchanged) while a kernel tunable the
 *   kubelet checks (`protectKernelDefaults`) differs and cannot be set; then it joins, its kubelet's
 *   serving CSR approved by kubeception's approver, and the join ends once the certificate is in place;
 * - each kubelet's port 10250, asked from inside its own host with openssl, presents a certificate that
 *   verifies against the cluster CA, with the node's own SANs;
 * - `kubectl logs` and `kubectl exec` work for pods on both nodes;
 * - serving CSRs posted with the worker's own kubelet credential for a foreign SAN (the control plane's
 *   IP, a Service name, a name its Node does not list) are denied with a reason, no certificate issued;
 *   one in another node's name is refused by the apiserver itself (NodeRestriction).
 */
import { after, before, describe } from 'node:test';
import assert from 'node:assert/strict';
import { bootHost, type Host } from '../bed/bed.ts';
import { importKubeceptionImage } from '../bed/kubeception-image.ts';
import { addonImageArchives, ensureAddonImages, TEST_IMAGE } from '../bed/addon-images.ts';
import { importImageArchives } from '../bed/kubelet.ts';
import { assertSameTree, kc, snapshot, writeConfig } from '../helpers/bed-cli.ts';
import { ADMIN, apply, getJson, kubectl, pod, podsReady, sleep, timed, waitFor } from '../helpers/cluster.ts';

const CA = '/etc/kubernetes/pki/ca.crt';
const PANIC = '/proc/sys/kernel/panic';
const SHADOW = '/usr/local/lib/kubeception-bed/sysctl/kernel.panic';

describe('kubelet serving certificates on the bed', { timeout: 1_800_000 }, () => {
  let cp: Host;
  let w1: Host;
  let joinFlags: string[];
  let joinOut = '';
  const k = (...args: string[]) => kubectl(cp, ...args);
  /** The certificate the kubelet of `h` presents on its port 10250, asked from inside `h` (openssl s_client verifying against the cluster CA). */
  const served = async (h: Host) => {
    const s = await h.exec(['sh', '-c', `openssl s_client -connect ${h.ip}:10250 -CAfile ${CA} -verify_return_error </dev/null 2>&1`], { timeoutMs: 30_000 });
    const text = await h.execOk(['sh', '-c', `openssl s_client -connect ${h.ip}:10250 </dev/null 2>/dev/null | openssl x509 -noout -issuer -subject -ext subjectAltName`], { timeoutMs: 30_000 });
    return { verified: s.code === 0 && /Verify return code: 0 \(ok\)/.test(s.stdout), handshake: s.stdout, text };
  };

  before(async () => {
    [cp, w1] = (await Promise.all(['klcp', 'klw1'].map((name) => bootHost({ name, kubelet: true })))) as [Host, Host];
    await importKubeceptionImage(cp);
    await ensureAddonImages();
    const busybox = addonImageArchives().find((a) => a.endsWith('/bed-tools-busybox.tar'))!;
    for (const h of [cp, w1]) {
      await importImageArchives(h, [busybox]);
      await writeConfig(h, { distro: 'debian', networking: { plugin: 'none' } });
    }
  });
  after(async () => {
    await Promise.all([cp, w1].map((h) => h?.destroy()));
  });

  timed('bootstrap, stopped before the join service (no CSR approver yet): kubectl logs through the bootstrap apiserver, which verifies the kubelet', async () => {
    // Up to the self-hosted objects: they bring kubeadm's kubeadm:cluster-admins binding, which the
    // kubelet's webhook authorization needs for the apiserver's kubelet client (certs.ts); the join
    // service and its CSR approver come later (join-service).
    const only = 'preflight,certs,kubeconfig,kubelet-config,bootstrap-control-plane,kubelet-start,etcd,wait-bootstrap-control-plane,bootstrap-scheduler,self-hosted-control-plane';
    const r = await kc(cp, ['run', 'bootstrap', '--only', only, '--output', 'json'], { timeoutMs: 600_000 });
    assert.equal(r.code, 0, `partial bootstrap failed:\n${r.stderr}\n${r.stdout.slice(-3000)}`);
    const config = r.events.find((e) => e.event === 'step-done' && e.step === 'kubelet-config');
    assert.match(config?.detail ?? '', /serving certificate created/, JSON.stringify(config));
    const boot = (...args: string[]) => cp.execOk(['kubectl', '--kubeconfig=/etc/kubernetes/bootstrap-admin.conf', ...args], { timeoutMs: 60_000 });
    assert.equal((await cp.exec(['kubectl', '--kubeconfig=/etc/kubernetes/bootstrap-admin.conf', '-n', 'kube-system', 'get', 'deployment', 'kubeception-csr-approver'])).code, 1, 'no approver yet');
    const mirror = await waitFor('the bootstrap apiserver\'s mirror pod', 120_000, async () => (await boot('-n', 'kube-system', 'get', 'pods', '-o', 'name')).split('\n').find((n) => n.includes('kube-apiserver')));
    const flags = await boot('-n', 'kube-system', 'get', mirror, '-o', 'jsonpath={.spec.containers[0].command}');
    assert.match(flags, /--kubelet-certificate-authority=/);
    const logs = await waitFor('kubectl logs through the bootstrap apiserver', 60_000, async () => {
      const l = await cp.exec(['kubectl', '--kubeconfig=/etc/kubernetes/bootstrap-admin.conf', '-n', 'kube-system', 'logs', mirror, '--tail=3'], { timeoutMs: 30_000 });
      return l.code === 0 && l.stdout.trim() ? l.stdout : undefined;
    }, async () => (await cp.exec(['kubectl', '--kubeconfig=/etc/kubernetes/bootstrap-admin.conf', '-n', 'kube-system', 'logs', mirror, '--tail=3'])).stderr);
    console.log(`[measure] logs of ${mirror} through the bootstrap apiserver, before any approver: ${logs.trim().split('\n').length} lines`);
  });

  timed('the whole bootstrap converges from there', async () => {
    const r = await kc(cp, ['run', 'bootstrap'], { timeoutMs: 900_000 });
    assert.equal(r.code, 0, `bootstrap failed:\n${r.stderr}\n${r.stdout.slice(-3000)}`);
    const hash = (await cp.execOk(['sh', '-c', `openssl x509 -pubkey -noout -in ${CA} | openssl pkey -pubin -outform der | sha256sum | cut -d" " -f1`])).trim();
    joinFlags = ['--url', `https://${cp.ip}:30000`, '--ca-cert-hash', `sha256:${hash}`];
  });

  timed("bootstrap: the control plane's kubelet serves a certificate of the cluster CA that kubeception signed (no CSR), and the apiserver verifies it", async () => {
    const s = await served(cp);
    assert.ok(s.verified, `klcp:10250 does not verify against the cluster CA:\n${s.handshake.slice(0, 2000)}`);
    assert.match(s.text, /issuer=CN ?= ?kubernetes/);
    assert.match(s.text, /subject=O ?= ?system:nodes, CN ?= ?system:node:klcp/);
    assert.match(s.text, new RegExp(`DNS:klcp, IP Address:${cp.ip.replace(/\./g, '\\.')}`));
    const csrs = (await getJson(cp, 'csr')).items.filter((c: any) => c.spec.signerName === 'kubernetes.io/kubelet-serving' && c.spec.username === 'system:node:klcp');
    assert.equal(csrs.length, 0, 'the control plane signs its own kubelet serving certificate');
    const apiserver = (await getJson(cp, 'pods', '-n', 'kube-system', '-l', 'component=kube-apiserver')).items;
    assert.ok(apiserver.length > 0);
    for (const p of apiserver) assert.ok(p.spec.containers[0].command.includes(`--kubelet-certificate-authority=${p.spec.containers[0].command.find((a: string) => a.startsWith('--client-ca-file=')).slice('--client-ca-file='.length)}`), `${p.metadata.name}: ${p.spec.containers[0].command.join(' ')}`);
    const recovery = await cp.readFile('/etc/kubernetes/recovery/recovery-kube-apiserver.yaml');
    assert.match(recovery, /--kubelet-certificate-authority=/);
    const config = await cp.readFile('/var/lib/kubelet/config.yaml');
    for (const line of ['serverTLSBootstrap: true', 'protectKernelDefaults: true', 'rotateCertificates: true', 'readOnlyPort: 0']) assert.ok(config.includes(line), `${line} in config.yaml:\n${config}`);
    assert.match(await cp.readFile('/etc/sysctl.d/90-kubeception-kubelet.conf'), /kernel\.panic = 10/);
  });

  timed("join: preflight says which kernel tunable the kubelet would refuse (exit 2, host unchanged); then the worker joins and its serving CSR is approved", async () => {
    // Unshadow kernel.panic inside klw1 only: /proc/sys is read-only there, so the VM's value (not 10) shows and cannot be set.
    await w1.execOk(['umount', PANIC]);
    if ((await w1.exec(['test', '-w', PANIC])).code === 0) {
      await w1.execOk(['mount', '--bind', SHADOW, PANIC]);
      assert.fail(`${PANIC} is writable in the bed host: the join would change the machine's kernel.panic`);
    }
    const vm = (await w1.readFile(PANIC)).trim();
    assert.notEqual(vm, '10', 'the machine has kernel.panic=10 already: nothing to refuse');
    const token = (await kc(cp, ['token', 'create'])).stdout.trim();
    const env = { KUBECEPTION_TOKEN: token };
    const before = await snapshot(w1);
    const refused = await kc(w1, ['run', 'join', ...joinFlags], { timeoutMs: 300_000, env });
    assert.equal(refused.code, 2, `${refused.stderr}\n${refused.stdout.slice(-1500)}`);
    assert.match(refused.stdout + refused.stderr, new RegExp(`KernelTunables.*kernel\\.panic is ${vm} \\(it needs 10\\)`, 's'));
    assertSameTree(before, await snapshot(w1), 'a refused preflight changed the host');
    await w1.execOk(['mount', '--bind', SHADOW, PANIC]);

    const t0 = Date.now();
    const r = await kc(w1, ['run', 'join', ...joinFlags, '--output', 'json'], { timeoutMs: 300_000, env });
    joinOut = r.stdout;
    assert.equal(r.code, 0, `join of klw1:\n${r.stderr}\n${r.stdout.slice(-3000)}`);
    const wait = r.events.find((e) => e.event === 'step-done' && e.step === 'wait-kubelet-serving-cert');
    assert.ok(wait, `wait-kubelet-serving-cert ran: ${JSON.stringify(r.events.filter((e) => e.step === 'wait-kubelet-serving-cert'))}`);
    const done = r.events.find((e) => e.event === 'task-done');
    console.log(`[measure] join ${((Date.now() - t0) / 1000).toFixed(1)} s wall, task ${done?.durationMs} ms; wait-kubelet-serving-cert ${wait.durationMs} ms: ${wait.detail}`);
    const csr = (await getJson(cp, 'csr')).items.find((c: any) => c.spec.signerName === 'kubernetes.io/kubelet-serving' && c.spec.username === 'system:node:klw1');
    assert.ok(csr, 'klw1 asked for its serving certificate by CSR');
    const approved = csr.status.conditions.find((c: any) => c.type === 'Approved');
    assert.equal(approved?.reason, 'KubeceptionAutoApproved', JSON.stringify(csr.status));
    assert.ok(csr.status.certificate, 'signed');
  });

  timed("each kubelet's port 10250, asked from inside its host, presents the cluster CA's certificate for the node's own addresses", async () => {
    const s = await served(w1);
    assert.ok(s.verified, `klw1:10250 does not verify against the cluster CA:\n${s.handshake.slice(0, 2000)}`);
    assert.match(s.text, /issuer=CN ?= ?kubernetes/);
    assert.match(s.text, /subject=O ?= ?system:nodes, CN ?= ?system:node:klw1/);
    assert.match(s.text, new RegExp(`DNS:klw1, IP Address:${w1.ip.replace(/\./g, '\\.')}`));
    console.log(`[measure] klw1:10250 ${s.text.replace(/\n/g, ' | ')}`);
  });

  timed('kubectl logs and kubectl exec work for pods on both nodes', async () => {
    await apply(cp, pod('say-cp', 'klcp', TEST_IMAGE, ['sh', '-c', 'echo hello from klcp; sleep 3600']), pod('say-w1', 'klw1', TEST_IMAGE, ['sh', '-c', 'echo hello from klw1; sleep 3600']));
    await podsReady(cp, ['say-cp', 'say-w1']);
    for (const n of ['cp', 'w1']) {
      assert.match(await waitFor(`logs of say-${n}`, 30_000, async () => (await k('logs', `say-${n}`)) || undefined), new RegExp(`hello from kl${n}`));
      const r = await cp.exec(['kubectl', `--kubeconfig=${ADMIN}`, 'exec', `say-${n}`, '--', 'cat', '/etc/hostname'], { timeoutMs: 60_000 });
      assert.equal(r.code, 0, `exec in say-${n}: ${r.stderr}`);
    }
    // A static pod on the control plane too (the kubelet the bootstrap apiserver talked to).
    assert.ok((await k('-n', 'kube-system', 'logs', '-l', 'component=kube-apiserver', '--tail=1')).length > 0);
  });

  timed("serving CSRs posted with the worker's own kubelet credential for a foreign SAN are denied with a reason, and no certificate is issued", async () => {
    const cred = '/var/lib/kubelet/pki/kubelet-client-current.pem';
    const asNode = ['kubectl', `--server=https://${cp.ip}:6443`, `--certificate-authority=${CA}`, `--client-certificate=${cred}`, `--client-key=${cred}`];
    const post = async (name: string, subj: string, san: string) => {
      const pem = await w1.execOk(['sh', '-c', `mkdir -p /root/attack && openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout /root/attack/${name}.key -subj "${subj}" -addext "subjectAltName=${san}" 2>/dev/null`]);
      const csr = { apiVersion: 'certificates.k8s.io/v1', kind: 'CertificateSigningRequest', metadata: { name: `attack-${name}` }, spec: { request: Buffer.from(pem).toString('base64'), signerName: 'kubernetes.io/kubelet-serving', usages: ['digital signature', 'server auth'] } };
      return w1.exec([...asNode, 'create', '-f', '-'], { input: JSON.stringify(csr) });
    };
    // Another node's name in the CN: the apiserver's NodeRestriction admission refuses it before any approver.
    const cn = await post('other-cn', '/O=system:nodes/CN=system:node:klcp', `DNS:klcp,IP:${cp.ip}`);
    assert.notEqual(cn.code, 0);
    assert.match(cn.stderr, /can only create a node CSR with CN=system:node:klw1/);
    const attempts: [string, string, string][] = [
      ['cp-ip', '/O=system:nodes/CN=system:node:klw1', `DNS:klw1,IP:${w1.ip},IP:${cp.ip}`],
      ['svc', '/O=system:nodes/CN=system:node:klw1', `DNS:klw1,IP:${w1.ip},DNS:kubernetes.default.svc`],
      ['made-up', '/O=system:nodes/CN=system:node:klw1', 'DNS:klw1.example.com'],
    ];
    for (const [name, subj, san] of attempts) {
      const r = await post(name, subj, san);
      assert.equal(r.code, 0, `posting attack-${name} as the node: ${r.stderr}`);
    }
    for (const [name] of attempts) {
      const c = await waitFor(`a decision on attack-${name}`, 60_000, async () => {
        const o = await getJson(cp, 'csr', `attack-${name}`);
        return o.status?.conditions?.length ? o : undefined;
      });
      assert.equal(c.spec.username, 'system:node:klw1', 'posted with the node credential');
      const d = c.status.conditions[0];
      console.log(`[measure] attack-${name}: ${d.type} ${d.reason}: ${d.message}`);
      assert.equal(d.type, 'Denied', JSON.stringify(c.status));
      assert.match(d.reason, /^Kubeception/);
      await sleep(2_000); // a signer would have signed an approved CSR by now
      assert.equal((await getJson(cp, 'csr', `attack-${name}`)).status.certificate, undefined);
    }
    assert.ok(joinOut.length > 0);
  });
});
