/**
 * kubeception's approver of new-node client CSRs (`kubeception approve-csrs`, the
 * kubeception-csr-approver Deployment). It replaces kubeadm's blanket auto-approval binding for
 * bootstrap tokens (`kubeadm:node-autoapprove-bootstrap`): a CSR posted with a bootstrap token
 * (user `system:bootstrap:<id>`) for signer `kubernetes.io/kube-apiserver-client-kubelet` is
 * approved only if it is a well-formed kubelet client request (CN `system:node:<name>`, O exactly
 * `system:nodes`, client usages only) AND `<name>` is neither a control-plane node nor a Ready Node;
 * otherwise it is denied with a reason. Renewals by nodes themselves are left to the
 * controller-manager's csrapprover (kubeadm's `node-autoapprove-certificate-rotation`).
 * @see kubernetes/pkg/controller/certificates/approver/sarapprove.go (isNodeClientCert)
 */
import { csrSubject, preloadCsrParser, type CsrSubject } from '../pki/x509.ts';
import { Cluster } from '../k8s/client.ts';
import { nameTakenReason, type NodeLike } from './node-name.ts';

import { KUBELET_CLIENT_SIGNER } from '../constants.ts';

export { KUBELET_CLIENT_SIGNER };
const ALLOWED_USAGES = new Set(['digital signature', 'key encipherment', 'client auth']);

/** A CSR as far as the approver reads it (`spec.request` is base64 of the PEM). */
export interface CsrLike {
  metadata?: { name?: string };
  spec?: { signerName?: string; username?: string; request?: string; usages?: string[] };
  status?: { conditions?: { type?: string }[] };
}

/** What to do with a CSR; undefined = not ours to decide (other signer or requester, or decided). */
export type Decision = { approve: boolean; reason: string; message: string } | undefined;

/** The decision for one CSR given the Nodes as cached (no apiserver call; async only to load the CSR parser). */
export async function decide(csr: CsrLike, node: (name: string) => NodeLike | undefined): Promise<Decision> {
  const user = csr.spec?.username ?? '';
  if (csr.spec?.signerName !== KUBELET_CLIENT_SIGNER || !user.startsWith('system:bootstrap:')) return undefined;
  if (csr.status?.conditions?.some((c) => c.type === 'Approved' || c.type === 'Denied' || c.type === 'Failed')) return undefined;
  const deny = (reason: string, message: string): Decision => ({ approve: false, reason, message: `kubeception: ${message}` });
  let subject: CsrSubject;
  try {
    subject = await csrSubject(Buffer.from(csr.spec.request ?? '', 'base64').toString('utf8'));
  } catch (err) {
    return deny('KubeceptionInvalidRequest', `the request does not parse: ${(err as Error).message}`);
  }
  const name = /^system:node:(.+)$/.exec(subject.commonName ?? '')?.[1];
  if (!name || subject.organizations.length !== 1 || subject.organizations[0] !== 'system:nodes')
    return deny('KubeceptionNotNodeClient', `subject CN=${subject.commonName ?? ''} O=${subject.organizations.join(',')} is not a kubelet client (CN=system:node:<name>, O=system:nodes)`);
  const usages = csr.spec.usages ?? [];
  if (!usages.includes('client auth') || usages.some((u) => !ALLOWED_USAGES.has(u))) return deny('KubeceptionNotNodeClient', `usages ${usages.join(',')} are not those of a kubelet client`);
  const taken = nameTakenReason(name, node(name));
  if (taken) return deny('KubeceptionNodeNameTaken', `${taken}; a bootstrap token buys one new node, never an existing identity`);
  return { approve: true, reason: 'KubeceptionAutoApproved', message: `kubeception: ${user} joins new node ${name}` };
}

/** Runs the approver until `signal` aborts: informers on CSRs and Nodes; decisions as they come. */
export function runApprover(log: (line: string) => void, kubeconfig = 'in-cluster', signal?: AbortSignal): void {
  const api = new Cluster(kubeconfig, kubeconfig === 'in-cluster' ? 'service account' : 'kubeconfig');
  // Loaded now, not when the first node's CSR arrives (which would wait for the modules to load).
  preloadCsrParser().catch((err: Error) => log(`loading the CSR parser: ${err.message}`));
  const inFlight = new Set<string>();
  const nodes = api.watch<NodeLike & { metadata?: { name?: string } }>({ apiVersion: 'v1', kind: 'Node', path: '/api/v1/nodes' }, () => sweep(), { log });
  const csrs = api.watch<CsrLike & { metadata?: { name?: string } }>({ apiVersion: 'certificates.k8s.io/v1', kind: 'CertificateSigningRequest', path: '/apis/certificates.k8s.io/v1/certificatesigningrequests' }, () => sweep(), { log });
  function sweep() {
    if (!nodes.synced() || !csrs.synced()) return;
    for (const csr of csrs.list()) {
      const name = csr.metadata?.name ?? '';
      if (inFlight.has(name)) continue;
      inFlight.add(name); // until decided: a sweep while the parser loads must not decide twice
      decide(csr, (n) => nodes.get(n))
        .then(async (d) => {
          if (!d) return void inFlight.delete(name);
          await api.decideCsr(csr as never, d.approve, d.reason, d.message);
          log(`CSR ${name} from ${csr.spec?.username}: ${d.approve ? 'approved' : 'denied'} (${d.reason}: ${d.message})`);
        })
        .catch((err) => {
          inFlight.delete(name);
          log(`CSR ${name}: ${(err as Error).message.split('\n')[0]}`);
        });
    }
  }
  signal?.addEventListener('abort', () => {
    nodes.stop();
    csrs.stop();
  });
}
