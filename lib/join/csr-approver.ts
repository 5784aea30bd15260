/**
 * kubeception's approver of new-node client CSRs (`kubeception approve-csrs`, the
 * kubeception-csr-approver Deployment). It replaces kubeadm's blanket auto-approval binding for
 * bootstrap tokens (`kubeadm:node-autoapprove-bootstrap`): a CSR posted with a bootstrap token
 * (user `system:bootstrap:<id>`) for signer `kubernetes.io/kube-apiserver-client-kubelet` is approved
 * only if
 * 1. it is a well-formed kubelet client request (CN `system:node:<name>`, O exactly `system:nodes`,
 *    client usages only), and
 * 2. the node identity record (lib/join/node-identities.ts) lets the token buy `<name>`: no Node of
 *    that name exists (Ready or not; read live), the name is not held by a control-plane node, and
 *    the token has bought no other name — the record is written (conditionally on its resourceVersion)
 *    *before* the approval, so two CSRs of one token cannot both win.
 * Otherwise it is denied with a reason (`KubeceptionNotNodeClient`, `KubeceptionInvalidRequest`,
 * `KubeceptionNodeNameTaken`, `KubeceptionNameReserved`, `KubeceptionTokenUsed`). Decisions run one at
 * a time. Renewals by nodes themselves are left to the controller-manager's csrapprover (kubeadm's
 * `node-autoapprove-certificate-rotation`); control-plane nodes never ask it (their joins sign their
 * kubelet certificate with the CA they were given).
 *
 * It also decides every kubelet serving CSR (signer `kubernetes.io/kubelet-serving`, which kubeadm
 * leaves pending): approved only for a node's own request for the addresses its own Node lists,
 * none of them another Node's or the apiserver's (lib/join/serving-csr.ts; the Node read live, the
 * Nodes listed live); otherwise denied (`KubeceptionNotNode`, `KubeceptionNotKubeletServing`,
 * `KubeceptionNodeUnknown`, `KubeceptionSANNotNodeAddress`, `KubeceptionSANOfOtherNode`,
 * `KubeceptionSANReserved`).
 * @see kubernetes/pkg/controller/certificates/approver/sarapprove.go (isNodeClientCert)
 */
import { csrSubject, preloadCsrParser, type CsrSubject } from '../pki/x509.ts';
import { Cluster } from '../k8s/client.ts';
import { tokenClaim, updateIdentities, type TokenRefusal } from './node-identities.ts';
import { servingRequest, servingSansVerdict, type NodeLike, type ReservedSans, type Verdict } from './serving-csr.ts';

import { KUBELET_CLIENT_SIGNER, KUBELET_SERVING_SIGNER } from '../constants.ts';

export { KUBELET_CLIENT_SIGNER, KUBELET_SERVING_SIGNER, type Verdict };
const ALLOWED_USAGES = new Set(['digital signature', 'key encipherment', 'client auth']);

/** A CSR as far as the approver reads it (`spec.request` is base64 of the PEM). */
export interface CsrLike {
  metadata?: { name?: string };
  spec?: { signerName?: string; username?: string; groups?: string[]; request?: string; usages?: string[] };
  status?: { conditions?: { type?: string }[] };
}

/**
 * The request-only part of the decision (no apiserver call; async only to load the CSR parser):
 * undefined = not ours to decide (other signer or requester, or decided already); a denial; the
 * name and token id whose purchase the identity record must allow; or a serving request whose SANs
 * the node's addresses must allow (lib/join/serving-csr.ts).
 */
export type Decision = undefined | { deny: Verdict } | { claim: { name: string; token: string; csr: string } } | { serving: { node: string; subject: CsrSubject } };

export async function decide(csr: CsrLike): Promise<Decision> {
  const user = csr.spec?.username ?? '';
  const serving = csr.spec?.signerName === KUBELET_SERVING_SIGNER;
  if (!serving && (csr.spec?.signerName !== KUBELET_CLIENT_SIGNER || !user.startsWith('system:bootstrap:'))) return undefined;
  if (csr.status?.conditions?.some((c) => c.type === 'Approved' || c.type === 'Denied' || c.type === 'Failed')) return undefined;
  const deny = (reason: string, message: string): Decision => ({ deny: { approve: false, reason, message: `kubeception: ${message}` } });
  let subject: CsrSubject;
  try {
    subject = await csrSubject(Buffer.from(csr.spec?.request ?? '', 'base64').toString('utf8'));
  } catch (err) {
    return deny('KubeceptionInvalidRequest', `the request does not parse: ${(err as Error).message}`);
  }
  if (serving) {
    const r = servingRequest(csr.spec ?? {}, subject);
    return 'deny' in r ? r : { serving: { node: r.node, subject } };
  }
  const name = /^system:node:(.+)$/.exec(subject.commonName ?? '')?.[1];
  if (!name || subject.organizations.length !== 1 || subject.organizations[0] !== 'system:nodes')
    return deny('KubeceptionNotNodeClient', `subject CN=${subject.commonName ?? ''} O=${subject.organizations.join(',')} is not a kubelet client (CN=system:node:<name>, O=system:nodes)`);
  const usages = csr.spec?.usages ?? [];
  if (!usages.includes('client auth') || usages.some((u) => !ALLOWED_USAGES.has(u))) return deny('KubeceptionNotNodeClient', `usages ${usages.join(',')} are not those of a kubelet client`);
  return { claim: { name, token: user.slice('system:bootstrap:'.length), csr: csr.metadata?.name ?? '' } };
}

/**
 * The whole decision for one CSR against the live cluster: {@link decide}, then for a claim the Node's
 * existence (a live GET) and the identity record's verdict, stored before it is returned.
 * @returns undefined when the CSR is not ours to decide.
 * @throws KubeceptionError `node-identities-missing` / `-conflict`, `apiserver-request` (the CSR stays pending; the caller retries).
 */
export async function judge(api: Cluster, csr: CsrLike, now = Date.now, reserved: ReservedSans = { dnsNames: [], ipAddresses: [] }): Promise<Verdict | undefined> {
  const d = await decide(csr);
  if (!d || 'deny' in d) return d?.deny;
  if ('serving' in d) {
    const { node, subject } = d.serving;
    const [own, all] = await Promise.all([api.read<NodeLike & { apiVersion: string; kind: string }>({ apiVersion: 'v1', kind: 'Node', metadata: { name: node } }), api.list<NodeLike & { apiVersion: string; kind: string }>('v1', 'Node')]);
    return servingSansVerdict(node, subject, own, all, reserved);
  }
  const { name, token } = d.claim;
  const nodeExists = (await api.read({ apiVersion: 'v1', kind: 'Node', metadata: { name } })) !== undefined;
  const outcome = await updateIdentities<TokenRefusal | undefined>(api, (ids) => {
    const c = tokenClaim(ids, { ...d.claim, nodeExists, now: now() });
    return 'refused' in c ? { result: c.refused } : { next: c.next, result: undefined };
  });
  if (outcome) return { approve: false, reason: outcome.reason, message: `kubeception: ${outcome.message}` };
  return { approve: true, reason: 'KubeceptionAutoApproved', message: `kubeception: system:bootstrap:${token} joins new node ${name} (the one node this token buys)` };
}

/** How long after a failed decision (an apiserver error) the approver tries that CSR again. */
export const RETRY_MS = 5_000;

/**
 * Runs the approver until `signal` aborts: an informer on CSRs; one decision at a time ({@link judge}),
 * each CSR decided once; a decision that failed is tried again after {@link RETRY_MS}.
 * @param kubeconfig `in-cluster` (the pod's ServiceAccount) or kubeconfig text.
 */
export function runApprover(log: (line: string) => void, kubeconfig = 'in-cluster', signal?: AbortSignal, reserved?: ReservedSans): void {
  const api = new Cluster(kubeconfig, kubeconfig === 'in-cluster' ? 'service account' : 'kubeconfig');
  // Loaded now, not when the first node's CSR arrives (which would wait for the modules to load).
  preloadCsrParser().catch((err: Error) => log(`loading the CSR parser: ${err.message}`));
  const handled = new Set<string>();
  let queue = Promise.resolve();
  const csrs = api.watch<CsrLike & { metadata?: { name?: string } }>({ apiVersion: 'certificates.k8s.io/v1', kind: 'CertificateSigningRequest', path: '/apis/certificates.k8s.io/v1/certificatesigningrequests' }, () => sweep(), { log });
  function sweep() {
    if (!csrs.synced() || signal?.aborted) return;
    for (const csr of csrs.list()) {
      const name = csr.metadata?.name ?? '';
      if (handled.has(name)) continue;
      handled.add(name); // queued: a later sweep must not queue it again
      queue = queue.then(() => decideOne(name));
    }
  }
  async function decideOne(name: string) {
    const csr = csrs.get(name);
    if (!csr || signal?.aborted) return;
    try {
      const v = await judge(api, csr, Date.now, reserved);
      if (!v) return;
      await api.decideCsr(csr as never, v.approve, v.reason, v.message);
      log(`CSR ${name} from ${csr.spec?.username}: ${v.approve ? 'approved' : 'denied'} (${v.reason}: ${v.message})`);
    } catch (err) {
      log(`CSR ${name}: ${(err as Error).message.split('\n')[0]}; trying again in ${RETRY_MS / 1000} s`);
      setTimeout(() => {
        handled.delete(name);
        sweep();
      }, RETRY_MS).unref?.();
    }
  }
  signal?.addEventListener('abort', () => csrs.stop());
}
