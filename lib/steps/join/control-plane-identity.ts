/**
 * A joining control-plane node's own identity. It comes through the certificate-key path only, never
 * through a bootstrap token's CSR:
 * - before `control-plane-certs` writes anything, the node's name is held for control-plane nodes in
 *   the node identity record (lib/join/node-identities.ts), as an admin whose client certificate is
 *   made from the uploaded CA in memory and never written; a name a bootstrap token ever bought is
 *   refused (exit 2), and once held no token can buy it;
 * - its kubelet's client certificate is signed here with the cluster CA the join was given (kubeadm
 *   signs the first control-plane node's the same way), so no CSR for a control-plane name is ever
 *   approved by kubeception's approver.
 * @see kubernetes/cmd/kubeadm/app/phases/kubeconfig/kubeconfig.go (the kubelet kubeconfig of kubeadm init)
 */
import { kubeconfigClientSpecs } from '../../pki/certs.ts';
import { reconcileLeaf } from '../../pki/leaf.ts';
import { renderKubeconfig } from '../../k8s/kubeconfig.ts';
import { controlPlaneClaim, holdControlPlaneNames, readIdentities } from '../../join/node-identities.ts';
import { InputError } from '../../errors.ts';
import type { Cluster } from '../../k8s/client.ts';
import type { Context } from '../../context.ts';

/** A client of `server` as `kubernetes-admin`, its certificate issued from `ca` in memory for this call only. */
async function memoryAdmin(ctx: Context, server: string, ca: { certPem: string; keyPem: string }): Promise<Cluster> {
  const spec = kubeconfigClientSpecs(ctx.config).find((s) => s.name === 'admin');
  if (!spec) throw new Error('no admin identity in the kubeconfig client table');
  const leaf = await reconcileLeaf({ ...spec, validityDays: 1 }, {}, ca, ctx.config);
  const { Cluster } = await import('../../k8s/client.ts'); // on first use: `plan` must not load client-node
  return new Cluster(renderKubeconfig({ server, caPem: ca.certPem, user: spec.commonName, certPem: leaf.certPem, keyPem: leaf.keyPem }), 'an admin certificate in memory (from the uploaded CA)');
}

/**
 * Holds this node's name for a control-plane node, through `server` with an in-memory admin made
 * from `ca` (PEM certificate and key). Under `--dry-run` only checks.
 * @throws InputError `node-name-issued` when a bootstrap token bought the name (before any write).
 */
export async function holdJoiningName(ctx: Context, server: string, ca: { certPem: string; keyPem: string }): Promise<void> {
  const api = await memoryAdmin(ctx, server, ca);
  if (!ctx.dryRun) {
    await holdControlPlaneNames(api, [ctx.config.nodeName]);
    return;
  }
  const c = controlPlaneClaim(await readIdentities(api), [ctx.config.nodeName], Date.now());
  if ('issued' in c)
    throw new InputError('node-name-issued', { what: `node name ${c.issued.name}`, why: `bootstrap token ${c.issued.token ?? '(unknown)'} bought a kubelet certificate for it`, fix: 'give this control-plane node another name (nodeName in kubeception.config.ts)' });
}

/**
 * The kubelet client certificate of a joining control-plane node, signed with the cluster CA now on
 * this host (`ca`), for the kubelet kubeconfig's `server`.
 * @returns the PEM pair and the kubeconfig text naming `certFile`.
 */
export async function signKubeletClient(ctx: Context, ca: { certPem: string; keyPem: string }, server: string, certFile: string): Promise<{ certPem: string; keyPem: string; kubeconfig: string }> {
  const spec = kubeconfigClientSpecs(ctx.config).find((s) => s.name === 'kubelet');
  if (!spec) throw new Error('no kubelet identity in the kubeconfig client table');
  const leaf = await reconcileLeaf(spec, {}, ca, ctx.config);
  return { certPem: leaf.certPem, keyPem: leaf.keyPem, kubeconfig: renderKubeconfig({ server, caPem: ca.certPem, user: spec.commonName, certFile }) };
}
