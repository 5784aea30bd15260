/**
 * The certificate table, as data: every CA, leaf and key pair of the control plane, in the order of
 * kubeadm's `GetDefaultCertList` (each CA before its leaves), plus the client identities embedded in
 * kubeconfig files. {@link certSpecs} resolves the table against a config: paths under
 * `certificatesDir`, SANs, the node name.
 *
 * Validity is kubeadm's: CAs 10 years, everything else 1 year.
 * @see kubernetes/cmd/kubeadm/app/phases/certs/certlist.go
 * @see https://kubernetes.io/docs/setup/best-practices/certificates/
 */
import { join } from 'node:path';
import {
  ADMIN_CN, CONTROLLER_MANAGER_USER, MASTERS_GROUP, NODES_GROUP, nodeUser, SCHEDULER_USER,
} from '../constants.ts';
import { firstServiceIP } from '../net/cidr.ts';
import type { ResolvedConfig } from '../types.ts';
import type { ExtKeyUsage } from './x509.ts';
import { classifySANs, endpointHost, uniqueAltNames, type AltNames } from './san.ts';

/** kubeadm's `CACertificateValidityPeriod`: 10 years. */
export const CA_VALIDITY_DAYS = 3650;
/** kubeadm's `CertificateValidityPeriod`: 1 year. */
export const LEAF_VALIDITY_DAYS = 365;

/**
 * Group of `apiserver-kubelet-client`: kubeadm ≥ 1.29's `kubeadm:cluster-admins`, not
 * `system:masters`. The apiserver's credential towards every kubelet should be revocable: the
 * group gets cluster-admin through a ClusterRoleBinding (`kubeadm:cluster-admins`) that can be
 * deleted, whereas `system:masters` bypasses RBAC and webhook authorization entirely and can only
 * be revoked by rotating the CA. The binding must exist for `kubectl logs/exec/port-forward` to
 * pass the kubelet's webhook authorization; nothing in the bootstrap needs it earlier.
 * @see https://github.com/kubernetes/kubernetes/pull/121837 (kubeadm 1.29 made this change)
 * @see https://kubernetes.io/docs/reference/access-authn-authz/kubelet-authn-authz/
 */
export const CLUSTER_ADMINS_GROUP = 'kubeadm:cluster-admins';

/** The CAs: kubeadm's cert names. */
export type CaName = 'ca' | 'front-proxy-ca' | 'etcd/ca';

/** A CA row: a self-signed CA certificate and key at `<certificatesDir>/<baseName>.{crt,key}`. */
export interface CaDef {
  kind: 'ca';
  name: CaName;
  longName: string;
  commonName: string;
  validityDays: number;
}

/** A leaf row. Functions receive the resolved config (kubeadm's `configMutators`). */
export interface LeafDef {
  kind: 'leaf';
  /** kubeadm's cert name; also the base name of the files (`etcd/server` → `etcd/server.crt`). */
  name: string;
  longName: string;
  caName: CaName;
  commonName: string | ((config: ResolvedConfig) => string);
  organizations: readonly string[];
  usages: readonly ExtKeyUsage[];
  altNames?: (config: ResolvedConfig) => AltNames;
  validityDays: number;
}

/**
 * SANs of the apiserver's serving certificate: the node name, the `kubernetes` Service's names and
 * ClusterIP (first address of `serviceSubnet`), `advertiseAddress`, loopback (`127.0.0.1`,
 * `localhost`: the bootstrap apiserver is reached there), the `controlPlaneEndpoint` host and every
 * `apiServer.extraSANs` entry.
 * @throws PkiError `pki-invalid-san` for an extra SAN or endpoint host that is neither IP nor DNS name.
 * @see kubernetes/cmd/kubeadm/app/util/pkiutil/pki_helpers.go (GetAPIServerAltNames)
 */
export function apiServerAltNames(config: ResolvedConfig): AltNames {
  const { nodeName, networking, localAPIEndpoint, controlPlaneEndpoint, apiServer } = config;
  const svc = ['kubernetes', 'kubernetes.default', 'kubernetes.default.svc', `kubernetes.default.svc.${networking.dnsDomain}`];
  return uniqueAltNames(
    classifySANs([nodeName, ...svc, 'localhost'], 'nodeName/networking.dnsDomain'),
    classifySANs([firstServiceIP(networking.serviceSubnet), localAPIEndpoint.advertiseAddress, '127.0.0.1'], 'localAPIEndpoint.advertiseAddress'),
    classifySANs(controlPlaneEndpoint ? [endpointHost(controlPlaneEndpoint)] : [], 'controlPlaneEndpoint'),
    classifySANs(apiServer.extraSANs, 'apiServer.extraSANs'),
  );
}

/**
 * The apiserver's SANs that are no node's own: {@link apiServerAltNames} without this node's name and
 * `advertiseAddress` — the names and IPs a kubelet serving certificate may never carry (the CSR
 * approver's `KUBECEPTION_RESERVED_SANS`, lib/join/serving-csr.ts). A `controlPlaneEndpoint` that is
 * this node's own address stays this node's (no other Node may have it).
 */
export function apiServerSharedSans(config: ResolvedConfig): string[] {
  const all = apiServerAltNames(config);
  const mine = classifySANs([config.nodeName, config.localAPIEndpoint.advertiseAddress], 'nodeName/localAPIEndpoint.advertiseAddress');
  const own = new Set([...mine.dnsNames, ...mine.ipAddresses]);
  return [...all.dnsNames, ...all.ipAddresses].filter((s) => !own.has(s));
}

/**
 * SANs of `etcd/server` and `etcd/peer`: node name, `localhost`, `advertiseAddress`, `127.0.0.1`, `::1`.
 * @see kubernetes/cmd/kubeadm/app/util/pkiutil/pki_helpers.go (GetEtcdAltNames, GetEtcdPeerAltNames)
 */
export function etcdAltNames(config: ResolvedConfig): AltNames {
  return uniqueAltNames(
    classifySANs([config.nodeName, 'localhost'], 'nodeName'),
    classifySANs([config.localAPIEndpoint.advertiseAddress, '127.0.0.1', '::1'], 'localAPIEndpoint.advertiseAddress'),
  );
}

const ca = (name: CaName, commonName: string, longName: string): CaDef => ({ kind: 'ca', name, commonName, longName, validityDays: CA_VALIDITY_DAYS });
const leaf = (def: Omit<LeafDef, 'kind' | 'validityDays' | 'organizations'> & { organizations?: readonly string[] }): LeafDef =>
  ({ kind: 'leaf', validityDays: LEAF_VALIDITY_DAYS, organizations: [], ...def });

/** The certificate table in kubeadm's order (`GetDefaultCertList`): each CA before its leaves. */
export const CERT_TABLE: readonly (CaDef | LeafDef)[] = [
  ca('ca', 'kubernetes', 'self-signed Kubernetes CA to provision identities for other Kubernetes components'),
  leaf({ name: 'apiserver', caName: 'ca', commonName: 'kube-apiserver', usages: ['serverAuth'], altNames: apiServerAltNames, longName: 'certificate for serving the Kubernetes API' }),
  leaf({ name: 'apiserver-kubelet-client', caName: 'ca', commonName: 'kube-apiserver-kubelet-client', organizations: [CLUSTER_ADMINS_GROUP], usages: ['clientAuth'], longName: 'certificate for the apiserver to connect to kubelet' }),
  ca('front-proxy-ca', 'front-proxy-ca', 'self-signed CA to provision identities for front proxy'),
  leaf({ name: 'front-proxy-client', caName: 'front-proxy-ca', commonName: 'front-proxy-client', usages: ['clientAuth'], longName: 'certificate for the front proxy client' }),
  ca('etcd/ca', 'etcd-ca', 'self-signed CA to provision identities for etcd'),
  // etcd ≥ 3.2 also presents the server certificate as a client (kubeadm keeps clientAuth on it).
  leaf({ name: 'etcd/server', caName: 'etcd/ca', commonName: (c) => c.nodeName, usages: ['serverAuth', 'clientAuth'], altNames: etcdAltNames, longName: 'certificate for serving etcd' }),
  leaf({ name: 'etcd/peer', caName: 'etcd/ca', commonName: (c) => c.nodeName, usages: ['serverAuth', 'clientAuth'], altNames: etcdAltNames, longName: 'certificate for etcd nodes to communicate with each other' }),
  leaf({ name: 'etcd/healthcheck-client', caName: 'etcd/ca', commonName: 'kube-etcd-healthcheck-client', usages: ['clientAuth'], longName: 'certificate for liveness probes to healthcheck etcd' }),
  leaf({ name: 'apiserver-etcd-client', caName: 'etcd/ca', commonName: 'kube-apiserver-etcd-client', usages: ['clientAuth'], longName: 'certificate the apiserver uses to access etcd' }),
];

/**
 * Client identities embedded in kubeconfig files (not separate files), all signed by `ca`.
 * `admin` is in `system:masters` (kubeadm's `super-admin.conf` identity): the bootstrap creates
 * RBAC objects before any ClusterRoleBinding exists, so it needs the group RBAC cannot deny.
 * @see https://www.kubernetes.dev/resources/keps/4214/ (kubeadm's admin / super-admin split)
 * @see kubernetes/cmd/kubeadm/app/phases/kubeconfig/kubeconfig.go (getKubeConfigSpecsBase)
 */
export const KUBECONFIG_CLIENT_TABLE: readonly LeafDef[] = [
  leaf({ name: 'admin', caName: 'ca', commonName: ADMIN_CN, organizations: [MASTERS_GROUP], usages: ['clientAuth'], longName: 'client certificate of admin.conf' }),
  leaf({ name: 'controller-manager', caName: 'ca', commonName: CONTROLLER_MANAGER_USER, usages: ['clientAuth'], longName: 'client certificate of controller-manager.conf' }),
  leaf({ name: 'scheduler', caName: 'ca', commonName: SCHEDULER_USER, usages: ['clientAuth'], longName: 'client certificate of scheduler.conf' }),
  leaf({ name: 'kubelet', caName: 'ca', commonName: (c) => nodeUser(c.nodeName), organizations: [NODES_GROUP], usages: ['clientAuth'], longName: "client certificate of the kubelet's kubeconfig" }),
];

/** A CA resolved against a config. Paths are absolute. */
export interface CaSpec extends CaDef {
  certPath: string;
  keyPath: string;
}

/** A leaf resolved against a config. `certPath`/`keyPath` are absent for kubeconfig identities. */
export interface LeafSpec {
  kind: 'leaf';
  name: string;
  longName: string;
  caName: CaName;
  commonName: string;
  organizations: string[];
  usages: ExtKeyUsage[];
  altNames: AltNames;
  validityDays: number;
  certPath?: string;
  keyPath?: string;
}

/** A leaf of {@link CERT_TABLE}: one with files. */
export type FileLeafSpec = LeafSpec & { certPath: string; keyPath: string };

/** The service-account signing key pair: kubeadm's `sa.key` (private, 0600) and `sa.pub` (SPKI, 0644). */
export interface KeyPairSpec {
  kind: 'keypair';
  name: 'sa';
  keyPath: string;
  publicKeyPath: string;
}

function resolveLeaf(def: LeafDef, config: ResolvedConfig): LeafSpec {
  const { kind, name, longName, caName } = def;
  const validityDays = config.certificateValidityDays ?? def.validityDays;
  return {
    kind, name, longName, caName, validityDays,
    commonName: typeof def.commonName === 'string' ? def.commonName : def.commonName(config),
    organizations: [...def.organizations],
    usages: [...def.usages],
    altNames: def.altNames?.(config) ?? { dnsNames: [], ipAddresses: [] },
  };
}

/**
 * {@link CERT_TABLE} resolved against `config`, same order.
 * @throws PkiError `pki-invalid-san` (see {@link apiServerAltNames}).
 */
export function certSpecs(config: ResolvedConfig): (CaSpec | FileLeafSpec)[] {
  const dir = config.certificatesDir;
  const paths = (name: string) => ({ certPath: join(dir, `${name}.crt`), keyPath: join(dir, `${name}.key`) });
  return CERT_TABLE.map((def) => (def.kind === 'ca' ? { ...def, validityDays: config.caCertificateValidityDays ?? def.validityDays, ...paths(def.name) } : { ...resolveLeaf(def, config), ...paths(def.name) }));
}

/** {@link KUBECONFIG_CLIENT_TABLE} resolved against `config` (no paths). */
export function kubeconfigClientSpecs(config: ResolvedConfig): LeafSpec[] {
  return KUBECONFIG_CLIENT_TABLE.map((def) => resolveLeaf(def, config));
}

/** The `sa` key pair's paths under `certificatesDir`. */
export function saKeyPairSpec(config: ResolvedConfig): KeyPairSpec {
  return { kind: 'keypair', name: 'sa', keyPath: join(config.certificatesDir, 'sa.key'), publicKeyPath: join(config.certificatesDir, 'sa.pub') };
}
