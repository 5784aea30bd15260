/**
 * The kubelet's TLS bootstrap, done by `run join` before the kubelet starts: the same request the
 * kubelet would post with its bootstrap kubeconfig (an ECDSA P-256 key made on this host; a
 * CertificateSigningRequest for signer `kubernetes.io/kube-apiserver-client-kubelet`, subject
 * `O=system:nodes, CN=system:node:<nodeName>`, usages `digital signature` and `client auth`),
 * authenticated with the bootstrap token against the *verified* apiserver (TLS trusting only the
 * verified CA). The cluster approves it exactly as a kubelet's (kubeception's CSR approver) and the
 * controller-manager signs it. The kubelet then starts once, with its certificate: it never runs
 * as `system:anonymous` waiting for its next 10-second certificate check, and the token is never
 * written to this host's disk.
 *
 * Network: one POST (retried on connection errors, 429 and 5xx) and then a GET of the CSR every
 * 100 ms for 5 s, then every second, to the verified apiserver only; answers cut off past 256 KiB. The
 * private key never leaves this process (the caller writes it 0600); no key or token bytes are logged.
 * @see k8s.io/client-go/util/certificate/csr/csr.go (RequestCertificate, WaitForCertificate)
 * @see kubernetes/pkg/kubelet/certificate/bootstrap/bootstrap.go (LoadClientCert)
 */
import { createHash } from 'node:crypto';
import { KubeceptionError, TimeoutError } from '../errors.ts';
import { KUBELET_CLIENT_SIGNER } from '../constants.ts';
import { certSignedBy, firstCertificatePem, generatePrivateKey, loadPrivateKey, publicKeyDer } from '../pki/keys.ts';
import { certMatchesKey, createCsr, parseCert } from '../pki/x509.ts';
import { pollUntil } from '../util/poll.ts';
import { withRetry } from '../util/retry.ts';
import { isTransient } from '../net/transient.ts';
import { call, JoinRefused, tokenRejected } from './client.ts';

const CSR_PATH = '/apis/certificates.k8s.io/v1/certificatesigningrequests';
/** How far in the future an issued certificate's notBefore may be (clock skew; kubeadm backdates 5 minutes). */
const CLOCK_SKEW_MS = 5 * 60_000;
/** An issued certificate must be valid for at least this long: the kubelet rotates well before expiry, and a shorter one would leave a node that cannot start. */
const MIN_VALIDITY_MS = 3_600_000;

/** The kubelet's usages for an ECDSA client key (no key encipherment). */
const KUBELET_CLIENT_USAGES = ['digital signature', 'client auth'] as const;

/** Where and as whom to ask. */
export interface KubeletCsrRequest {
  /** The verified apiserver URL (cluster-info). */
  server: string;
  /** The verified CA (PEM): the only trust for the connection, and the issuer the certificate must chain to. */
  caPem: string;
  /** The bootstrap token `<id>.<secret>`. */
  token: string;
  nodeName: string;
  /** How long to wait for approval and signing, ms. Default 180 000. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** The issued pair and the CSR's name. PEM strings; `keyPem` is SEC 1 (`EC PRIVATE KEY`). */
export interface KubeletClientCert {
  certPem: string;
  keyPem: string;
  csrName: string;
  /** ms from the start until the POST was answered, and from then until the certificate was read. */
  postedMs: number;
  signedMs: number;
}

type Csr = { status?: { certificate?: unknown; conditions?: unknown } } | null;

/**
 * Posts the CSR and waits for its certificate.
 * @returns the certificate (chained to `caPem`, for this key) and the key.
 * @throws JoinRefused `join-token-rejected` (401: the token expired or was deleted), `join-csr-denied`
 * (the approver denied it; its reason and message are quoted) — exit 2; KubeceptionError
 * `join-csr-request` (any other answer to the POST; a GET answered other than 200/401/429/5xx, or not
 * a CertificateSigningRequest), `join-csr-bad-certificate` (the issued certificate does not chain to
 * the verified CA, is not for this key, is not a kubelet client certificate for this node — subject,
 * CA flag, client auth — or is not valid from now for at least an hour); TimeoutError
 * `join-tls-bootstrap` (not approved and signed within `timeoutMs`).
 */
export async function requestKubeletClientCert(r: KubeletCsrRequest): Promise<KubeletClientCert> {
  const t0 = Date.now();
  const keyPem = await generatePrivateKey('ECDSA-P256');
  const key = loadPrivateKey(keyPem, 'kubelet client key');
  const commonName = `system:node:${r.nodeName}`;
  const csrPem = await createCsr({ commonName, organizations: ['system:nodes'] }, key, 'kubelet client CSR');
  // Named by the key (as the kubelet names its CSRs by a digest): a retried POST finds its own object.
  const csrName = `node-csr-${createHash('sha256').update(publicKeyDer(key)).update(commonName).digest('base64url').slice(0, 32)}`;
  const opts = { ca: r.caPem, bearer: r.token, timeoutMs: 10_000 };
  const body = {
    apiVersion: 'certificates.k8s.io/v1',
    kind: 'CertificateSigningRequest',
    metadata: { name: csrName },
    spec: { request: Buffer.from(csrPem).toString('base64'), signerName: KUBELET_CLIENT_SIGNER, usages: [...KUBELET_CLIENT_USAGES] },
  };
  await withRetry(
    async () => {
      const a = await call(new URL(CSR_PATH, r.server), { ...opts, json: body });
      if (a.status === 201 || a.status === 409) return; // 409: this key's CSR exists already (a retried POST)
      if (a.status === 401) throw tokenRejected(r.token);
      if (a.status === 429 || a.status >= 500) throw Object.assign(new Error(`HTTP ${a.status}`), { code: a.status });
      throw new KubeceptionError('join-csr-request', {
        what: `POST ${CSR_PATH} at ${r.server}`,
        why: `HTTP ${a.status}: ${a.body.slice(0, 200)}`,
        fix: a.status === 403 ? 'the bootstrap token group needs `create certificatesigningrequests` (ClusterRoleBinding kubeadm:kubelet-bootstrap); re-run bootstrap on the control plane' : 'check the apiserver, then re-run the join',
      });
    },
    { tries: 5, delayMs: 500, backoff: 2 },
    { retryIf: isTransient, ...(r.signal && { signal: r.signal }) },
  ).catch((err: unknown) => {
    if (err instanceof KubeceptionError) throw err;
    throw new KubeceptionError('join-csr-request', { what: `POST ${CSR_PATH} at ${r.server}`, why: `no usable answer (last: ${(err as Error).message})`, fix: 'check that this host reaches the apiserver address in cluster-info, then re-run the join', cause: err });
  });

  const posted = Date.now();
  const url = new URL(`${CSR_PATH}/${csrName}`, r.server);
  const badAnswer = (why: string) =>
    new KubeceptionError('join-csr-request', { what: `GET ${url.pathname} at ${r.server}`, why, fix: 'check the apiserver at the cluster-info address (it must be this cluster\'s), then re-run the join' });
  const check = async (): Promise<string | undefined> => {
    const a = await call(url, opts).catch(() => undefined); // a dropped connection: ask again
    if (!a || a.status === 429 || a.status >= 500) return undefined;
    if (a.status === 401) throw tokenRejected(r.token);
    if (a.status !== 200) throw badAnswer(`HTTP ${a.status} for the CertificateSigningRequest just created${a.status === 404 ? ' (deleted meanwhile?)' : ''}: ${a.body.slice(0, 200)}`);
    let csr: Csr;
    try {
      csr = JSON.parse(a.body) as Csr;
    } catch {
      throw badAnswer('the answer is not JSON');
    }
    if (!csr || typeof csr !== 'object' || Array.isArray(csr)) throw badAnswer('the answer is not a CertificateSigningRequest');
    const conditions = csr.status?.conditions;
    if (conditions !== undefined && !Array.isArray(conditions)) throw badAnswer('status.conditions is not a list');
    const refused = conditions?.find((c) => c?.type === 'Denied' || c?.type === 'Failed');
    if (refused)
      throw new JoinRefused('join-csr-denied', {
        what: `CertificateSigningRequest ${csrName} for ${commonName}`,
        why: `${refused.type} (${String(refused.reason ?? 'no reason').slice(0, 100)}): ${String(refused.message ?? '').slice(0, 300)}`,
        fix: 'see the reason; for a taken node name give this host another name or delete the old Node (`kubectl delete node <name>`) if that machine is gone',
      });
    const cert = csr.status?.certificate;
    if (cert !== undefined && typeof cert !== 'string') throw badAnswer('status.certificate is not a string');
    return cert ? Buffer.from(cert, 'base64').toString('utf8') : undefined;
  };
  // Every 100 ms for the first 5 s (a leading controller-manager signs within a few hundred ms), then
  // every second: a worker left waiting does not ask ten times a second for minutes.
  const timeoutMs = r.timeoutMs ?? 180_000;
  const signal = r.signal && { signal: r.signal };
  const certPem =
    (await pollUntil(check, { timeoutMs: Math.min(5_000, timeoutMs), intervalMs: 100, ...signal })) ??
    (timeoutMs > 5_000 ? await pollUntil(check, { timeoutMs: timeoutMs - 5_000, intervalMs: 1_000, ...signal }) : undefined);
  if (!certPem)
    throw new TimeoutError('join-tls-bootstrap', {
      what: `CertificateSigningRequest ${csrName} for ${commonName}`,
      why: `not approved and signed within ${Math.round(timeoutMs / 1000)} s`,
      fix: 'check `kubectl get csr` and the kubeception-csr-approver and kube-controller-manager pods on the control plane',
    });
  const signed = Date.now();
  const leaf = firstCertificatePem(certPem);
  const bad = (why: string) =>
    new KubeceptionError('join-csr-bad-certificate', {
      what: `CertificateSigningRequest ${csrName}`,
      why,
      fix: "check the controller-manager's cluster signing (it must sign with the cluster CA, for the request as posted) and this host's clock, then re-run the join",
    });
  if (!leaf || !certSignedBy(leaf, r.caPem)) throw bad('the issued certificate does not chain to the verified cluster CA');
  if (!certMatchesKey(leaf, key, csrName)) throw bad('the issued certificate is not for the key this host generated');
  const info = await parseCert(leaf, csrName);
  const now = Date.now();
  const problems = [
    ...(info.commonName !== commonName || info.organizations.join(',') !== 'system:nodes' ? [`its subject is O=${info.organizations.join('+')}, CN=${info.commonName}, not O=system:nodes, CN=${commonName}`] : []),
    ...(info.isCA ? ['it is a CA certificate'] : []),
    ...(info.usages.includes('clientAuth') ? [] : ['it lacks the client auth usage']),
    ...(info.notBefore.getTime() > now + CLOCK_SKEW_MS ? [`it is valid only from ${info.notBefore.toISOString()} (this host's clock says ${new Date(now).toISOString()})`] : []),
    ...(info.notAfter.getTime() < now + MIN_VALIDITY_MS ? [`it expires at ${info.notAfter.toISOString()}, in less than an hour`] : []),
  ];
  if (problems.length) throw bad(`the issued certificate cannot serve as the kubelet's: ${problems.join('; ')}`);
  return { certPem: leaf, keyPem, csrName, postedMs: posted - t0, signedMs: signed - posted };
}
