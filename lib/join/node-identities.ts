/**
 * Which node identities (`system:node:<name>` client certificates) bootstrap tokens have bought, and
 * which node names control-plane nodes hold: the ConfigMap kube-system/{@link NODE_IDENTITIES}. It is
 * the record behind "a token buys at most one new node":
 *
 * - a bootstrap token buys one node name, once (`token.<id>` → the name); a second CSR of the same
 *   token is approved only for the same name while no Node of it exists (a join retried before its
 *   kubelet registered), never for another name;
 * - a name that exists as a Node (Ready or not) is never sold: the operator says a machine is gone by
 *   deleting its Node (`kubectl delete node <name>`);
 * - a name held by a control-plane node (`node.<name>` with `via: control-plane`: the bootstrap node,
 *   every control-plane join, and names `kubeception certs upload --node-name` reserved) is never sold
 *   to a token; a control-plane join refuses a name a token ever bought (that certificate may still
 *   be out there, and a control-plane node's identity must be its own).
 *
 * Written only by the CSR approver (get/update on this one ConfigMap) and by control-plane hosts
 * (admin credentials); read by the join service (a used token is refused at discovery, before the
 * worker writes anything). Holds names, token *ids* (public) and CSR names — no secret.
 *
 * An entry: `node.<name>`: `{"via":"bootstrap-token"|"control-plane","token":"<id>","csr":"<name>","at":"<RFC 3339>"}`,
 * `token.<id>`: `{"node":"<name>","at":"<RFC 3339>"}`. Entries a token made are pruned {@link RETAIN_MS} after they were made
 * (longer than the kubelet client certificates the controller-manager signs by default, 1 year);
 * control-plane entries are kept until an operator removes them (`kubectl edit`).
 */
import { InputError, KubeceptionError } from '../errors.ts';
import type { Cluster, KubernetesObject } from '../k8s/client.ts';

/** Name of the ConfigMap in kube-system. */
export const NODE_IDENTITIES = 'kubeception-node-identities';
/** How long an entry a token made is kept: 400 days (the default kubelet client certificate lives 365). */
export const RETAIN_MS = 400 * 86_400_000;

export type IdentityVia = 'bootstrap-token' | 'control-plane';

/** Who holds a node name. */
export interface NodeIdentity {
  via: IdentityVia;
  /** The token id that bought it (`via: bootstrap-token`). */
  token?: string;
  /** The approved CSR's name (`via: bootstrap-token`). */
  csr?: string;
  /** When it was recorded, epoch ms. */
  at: number;
}

/** The whole record. */
export interface Identities {
  nodes: Map<string, NodeIdentity>;
  /** token id → the node name it bought, and when (epoch ms). */
  tokens: Map<string, { node: string; at: number }>;
}

const TOKEN_ID = /^[a-z0-9]{6}$/;
/** A node name as the apiserver allows it (DNS-1123 subdomain), which is also a valid ConfigMap key. */
const NODE_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** Parses the ConfigMap's `data`; malformed entries are dropped (a hand edit cannot widen what a token buys). */
export function parseIdentities(data: Record<string, string> | undefined): Identities {
  const out: Identities = { nodes: new Map(), tokens: new Map() };
  for (const [key, value] of Object.entries(data ?? {})) {
    if (key.startsWith('token.')) {
      const id = key.slice(6);
      try {
        const v = JSON.parse(value) as { node?: unknown; at?: unknown };
        const at = typeof v.at === 'string' ? Date.parse(v.at) : Number.NaN;
        if (TOKEN_ID.test(id) && typeof v.node === 'string' && NODE_NAME.test(v.node) && !Number.isNaN(at)) out.tokens.set(id, { node: v.node, at });
      } catch {
        /* dropped */
      }
    } else if (key.startsWith('node.')) {
      const name = key.slice(5);
      try {
        const v = JSON.parse(value) as { via?: unknown; token?: unknown; csr?: unknown; at?: unknown };
        const at = typeof v.at === 'string' ? Date.parse(v.at) : Number.NaN;
        if (!NODE_NAME.test(name) || (v.via !== 'bootstrap-token' && v.via !== 'control-plane') || Number.isNaN(at)) continue;
        out.nodes.set(name, { via: v.via, at, ...(typeof v.token === 'string' && { token: v.token }), ...(typeof v.csr === 'string' && { csr: v.csr }) });
      } catch {
        /* dropped */
      }
    }
  }
  return out;
}

/** The ConfigMap `data` of a record (keys sorted). */
export function renderIdentities(ids: Identities): Record<string, string> {
  const data: Record<string, string> = {};
  for (const [name, n] of [...ids.nodes].sort(([a], [b]) => a.localeCompare(b)))
    data[`node.${name}`] = JSON.stringify({ via: n.via, ...(n.token && { token: n.token }), ...(n.csr && { csr: n.csr }), at: iso(n.at) });
  for (const [id, t] of [...ids.tokens].sort(([a], [b]) => a.localeCompare(b))) data[`token.${id}`] = JSON.stringify({ node: t.node, at: iso(t.at) });
  return data;
}

/** A copy without the token-made entries older than {@link RETAIN_MS}. */
export function pruned(ids: Identities, now: number): Identities {
  return {
    nodes: new Map([...ids.nodes].filter(([, n]) => n.via === 'control-plane' || now - n.at < RETAIN_MS)),
    tokens: new Map([...ids.tokens].filter(([, t]) => now - t.at < RETAIN_MS)),
  };
}

/** Why a CSR of a bootstrap token is refused; the reasons are the CSR's `Denied` condition reasons. */
export type TokenRefusal = { reason: 'KubeceptionNodeNameTaken' | 'KubeceptionTokenUsed' | 'KubeceptionNameReserved'; message: string };

/**
 * The decision for a kubelet client CSR of token `token` for node `name`.
 * @param nodeExists whether a Node of that name exists now (read live, not from a cache).
 * @returns the refusal, or the record to write before approving (the same object when nothing changes).
 */
export function tokenClaim(ids: Identities, r: { token: string; name: string; nodeExists: boolean; csr: string; now: number }): { refused: TokenRefusal } | { next: Identities } {
  const held = ids.nodes.get(r.name);
  if (held?.via === 'control-plane')
    return { refused: { reason: 'KubeceptionNameReserved', message: `node name ${r.name} is held by a control-plane node: a control-plane node gets its identity through its own join, never through a bootstrap token` } };
  if (r.nodeExists)
    return { refused: { reason: 'KubeceptionNodeNameTaken', message: `a Node named ${r.name} exists (Ready or not): a bootstrap token buys a new node, never an existing identity; if that machine is gone, delete its Node first (kubectl delete node ${r.name})` } };
  const bought = ids.tokens.get(r.token)?.node;
  if (bought !== undefined && (bought !== r.name || held?.token !== r.token))
    return { refused: { reason: 'KubeceptionTokenUsed', message: `token ${r.token} already bought node ${bought}: a bootstrap token buys one node; create one per node (kubeception token create --print-join-command)` } };
  if (bought === r.name && held?.token === r.token) return { next: ids }; // a retried join of the same node
  const next = pruned(ids, r.now);
  next.nodes.set(r.name, { via: 'bootstrap-token', token: r.token, csr: r.csr, at: r.now });
  next.tokens.set(r.token, { node: r.name, at: r.now });
  return { next };
}

/**
 * Holds `names` for control-plane nodes.
 * @returns the record to write, or the first name a bootstrap token bought (refused: its certificate may still be valid).
 */
export function controlPlaneClaim(ids: Identities, names: readonly string[], now: number): { next: Identities } | { issued: { name: string; token?: string; at: number } } {
  for (const name of names) {
    const n = ids.nodes.get(name);
    if (n?.via === 'bootstrap-token') return { issued: { name, token: n.token, at: n.at } };
  }
  if (names.every((n) => ids.nodes.get(n)?.via === 'control-plane')) return { next: ids };
  const next = pruned(ids, now);
  for (const name of names) if (next.nodes.get(name)?.via !== 'control-plane') next.nodes.set(name, { via: 'control-plane', at: now });
  return { next };
}

const ref = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: NODE_IDENTITIES, namespace: 'kube-system' } };
type ConfigMap = KubernetesObject & { data?: Record<string, string> };

/** The record as stored now (empty if the ConfigMap does not exist). */
export async function readIdentities(api: Cluster): Promise<Identities> {
  return parseIdentities((await api.read<ConfigMap>(ref))?.data);
}

/**
 * Read-modify-write of the record with optimistic concurrency (the write carries the resourceVersion
 * read; on a conflict it reads and decides again, up to 10 times).
 * @param decide given the current record: the record to write (`next`; the same object = no write) and the result.
 * @param opts.create create the ConfigMap if it does not exist (control-plane hosts; the approver may not).
 * @returns `decide`'s result once its record is stored.
 * @throws KubeceptionError `node-identities-missing` (no ConfigMap and not `create`), `node-identities-conflict`
 *   (10 conflicts in a row), `apiserver-request`.
 */
export async function updateIdentities<R>(api: Cluster, decide: (ids: Identities) => { next?: Identities; result: R }, opts: { create?: boolean } = {}): Promise<R> {
  for (let attempt = 0; attempt < 10; attempt++) {
    const current = await api.read<ConfigMap>(ref);
    if (!current && !opts.create)
      throw new KubeceptionError('node-identities-missing', { what: `ConfigMap kube-system/${NODE_IDENTITIES}`, why: 'it does not exist: no CSR of a bootstrap token can be decided without it', fix: 'run `kubeception run bootstrap` on the control plane (its bootstrap-token step creates it)' });
    const ids = parseIdentities(current?.data);
    const { next, result } = decide(ids);
    if (!next || next === ids) return result;
    const body = { ...ref, metadata: { ...ref.metadata, labels: { 'app.kubernetes.io/managed-by': 'kubeception' }, ...(current?.metadata?.resourceVersion && { resourceVersion: current.metadata.resourceVersion }) }, data: renderIdentities(next) };
    if (current ? await api.replace(body) : await api.create(body)) return result;
  }
  throw new KubeceptionError('node-identities-conflict', { what: `ConfigMap kube-system/${NODE_IDENTITIES}`, why: 'it changed under every one of 10 writes in a row', fix: 're-run; if it persists, look for a controller rewriting it' });
}

/**
 * Holds `names` for control-plane nodes in the record (creating it if needed), as a control-plane
 * host with admin credentials does before any of those names gets a kubelet certificate.
 * @returns true if the record changed.
 * @throws InputError `node-name-issued` (exit 2) when a bootstrap token bought one of the names: a
 *   certificate for it may be valid somewhere else, and a control-plane node's identity must be its own.
 */
export async function holdControlPlaneNames(api: Cluster, names: readonly string[], now = Date.now()): Promise<boolean> {
  return updateIdentities(api, (ids) => {
    const c = controlPlaneClaim(ids, names, now);
    if ('issued' in c)
      throw new InputError('node-name-issued', {
        what: `node name ${c.issued.name}`,
        why: `bootstrap token ${c.issued.token ?? '(unknown)'} bought a kubelet certificate for it on ${new Date(c.issued.at).toISOString()}: that certificate may still be valid on another machine, and a control-plane node's identity must be its own`,
        fix: `give this control-plane node another name (nodeName in kubeception.config.ts); if you are sure no other machine holds a certificate for ${c.issued.name}, remove the entry node.${c.issued.name} from ConfigMap kube-system/${NODE_IDENTITIES}`,
      });
    return { next: c.next, result: c.next !== ids };
  }, { create: true });
}
