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
 * Network: one POST and then a GET every 100 ms of the CSR, to the verified apiserver only. The
 * private key never leaves this process (the caller writes it 0600); no key or token bytes are logged.
 * @see k8s.io/client-go/util/certificate/csr/csr.go (RequestCertificate, WaitForCertificate)
 * @see kubernetes/pkg/kubelet/certificate/bootstrap/bootstrap.go (LoadClientCert)
 */
import { createHash } from 'node:crypto';
import { KubeceptionError, TimeoutError } from '../errors.ts';
import { KUBELET_CLIENT_SIGNER } from '../constants.ts';
import { certSignedBy, generatePrivateKey, loadPrivateKey, publicKeyDer } from '../pki/keys.ts';
import { certMatchesKey, createCsr } from '../pki/x509.ts';
import { pollUntil } from '../util/poll.ts';
import { withRetry } from '../util/retry.ts';
import { isTransient } from '../net/transient.ts';
import { call, JoinRefused, tokenRejected } from './client.ts';

const CSR_PATH = '/apis/certificates.k8s.io/v1/certificatesigningrequests';
/** The kubelet's usages for an ECDSA client key (no key encipherment). */
export const KUBELET_CLIENT_USAGES = ['digital signature', 'client auth'] as const;

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
}

type Csr = { status?: { certificate?: string; conditions?: { type?: string; reason?: string; message?: string }[] } };

/**
 * Posts the CSR and waits for its certificate.
 * @returns the certificate (chained to `caPem`, for this key) and the key.
 * @throws JoinRefused `join-token-rejected` (401: the token expired or was deleted), `join-csr-denied`
 * (the approver denied it; its reason and message are quoted) — exit 2; KubeceptionError
 * `join-csr-request` (any other answer to the POST), `join-csr-bad-certificate` (the issued
 * certificate does not chain to the verified CA or is not for this key); TimeoutError
 * `join-tls-bootstrap` (not approved and signed within `timeoutMs`).
 */
export async function requestKubeletClientCert(r: KubeletCsrRequest): Promise<KubeletClientCert> {
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

  const url = new URL(`${CSR_PATH}/${csrName}`, r.server);
  const certPem = await pollUntil(
    async () => {
      const a = await call(url, opts).catch(() => undefined); // a dropped connection: ask again
      if (!a || a.status === 429 || a.status >= 500) return undefined;
      if (a.status === 401) throw tokenRejected(r.token);
      if (a.status !== 200) return undefined;
      const csr = JSON.parse(a.body) as Csr;
      const refused = csr.status?.conditions?.find((c) => c.type === 'Denied' || c.type === 'Failed');
      if (refused)
        throw new JoinRefused('join-csr-denied', {
          what: `CertificateSigningRequest ${csrName} for ${commonName}`,
          why: `${refused.type} (${refused.reason ?? 'no reason'}): ${(refused.message ?? '').slice(0, 300)}`,
          fix: 'see the reason; for a taken node name give this host another name or delete the old Node (`kubectl delete node <name>`) if that machine is gone',
        });
      return csr.status?.certificate ? Buffer.from(csr.status.certificate, 'base64').toString('utf8') : undefined;
    },
    { timeoutMs: r.timeoutMs ?? 180_000, intervalMs: 100, ...(r.signal && { signal: r.signal }) },
  );
  if (!certPem)
    throw new TimeoutError('join-tls-bootstrap', {
      what: `CertificateSigningRequest ${csrName} for ${commonName}`,
      why: `not approved and signed within ${Math.round((r.timeoutMs ?? 180_000) / 1000)} s`,
      fix: 'check `kubectl get csr` and the kubeception-csr-approver and kube-controller-manager pods on the control plane',
    });
  const leaf = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n?/.exec(certPem)?.[0];
  if (!leaf || !certSignedBy(leaf, r.caPem) || !certMatchesKey(leaf, key, csrName))
    throw new KubeceptionError('join-csr-bad-certificate', {
      what: `CertificateSigningRequest ${csrName}`,
      why: 'the issued certificate does not chain to the verified cluster CA or is not for the key this host generated',
      fix: 'check the controller-manager\'s cluster-signing certificate (it must be the cluster CA), then re-run the join',
    });
  return { certPem: leaf.endsWith('\n') ? leaf : `${leaf}\n`, keyPem, csrName };
}
