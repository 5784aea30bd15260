/**
 * `kubeception run join --control-plane --certificate-key K` (kubeadm's control-plane join): after the
 * worker's discovery (token-signed cluster-info, CA pins), this node
 * 1. `control-plane-certs`: reads the uploaded shared keys (`kubeception certs upload`) from the
 *    apiserver with the bootstrap token, over TLS verified with the pinned CA, and decrypts them with
 *    the certificate key; checks they are this cluster's (the bundle's CA is the pinned one), that the
 *    cluster-info server is this config's `controlPlaneEndpoint`, that no different key sits in their
 *    place, and — unless `--force` — that etcd would not be left with two voting members. Only then are
 *    they written (keys 0600). Every refusal is exit 2 with nothing written.
 *    Before that write, its node name is held for a control-plane node (lib/steps/join/control-plane-identity.ts).
 * 2. `certs`, `kubeconfig`: its own leaf certificates and kubeconfigs, as bootstrap does (admin.conf
 *    names the controlPlaneEndpoint; the kubelet's client certificate is signed here with the cluster
 *    CA, never requested with the bootstrap token).
 * 3. `etcd-join` (lib/steps/join/etcd-join.ts): lists the members, adds this host as a learner (unless a member already has its peer
 *    URL: a killed run's), starts etcd with `initial-cluster-state=existing`, and promotes it once it
 *    has caught up (etcd refuses earlier).
 * 4. the worker's kubelet steps, then `mark-control-plane` (label and taint: the kube-apiserver
 *    DaemonSet starts a pod here), `control-plane-spread` (the controllers' replicas = control-plane
 *    nodes), `wait-local-apiserver` and `apiserver-recovery`.
 * @see kubernetes/cmd/kubeadm/app/cmd/phases/join/controlplaneprepare.go, controlplanejoin.go
 * @see https://etcd.io/docs/v3.4/learning/design-learner/
 */
import { join } from 'node:path';
import { CONTROL_PLANE_LABEL } from '../../constants.ts';
import { ConfigError, HostStateError, InputError, KubeceptionError, TimeoutError } from '../../errors.ts';
import { call } from '../../join/client.ts';
import { CERTIFICATE_KEY_RE, CERTS_SECRET, certificateKeyExpired, decryptFiles, ETCD_CLIENT_URLS_ANNOTATION, EXPIRES_ANNOTATION, OPTIONAL_SHARED_FILES, SHARED_FILES } from '../../join/certificate-key.ts';
import { etcdPeerUrl } from '../../etcd/config.ts';
import { memberByPeerUrl, votingMembers } from '../../etcd/members.ts';
import { spkiSha256 } from '../../pki/x509.ts';
import { pollUntil } from '../../util/poll.ts';
import { endpointCluster, waitApiserver } from '../../k8s/apiserver.ts';
import { controlPlaneUrl } from '../../k8s/endpoints.ts';
import type { Cluster } from '../../k8s/client.ts';
import { controlPlaneChecks } from '../preflight/preflight.ts';
import type { Check } from '../preflight/preflight-check.ts';
import { joinFlagChecks } from './join.ts';
import { controlPlaneNodeCount } from '../self-hosted/self-hosted.ts';
import { holdJoiningName } from './control-plane-identity.ts';
import { labelAndTaintControlPlane } from '../self-hosted/control-plane.ts';
import { apiServerConfigFallback } from '../bootstrap/apiserver-config.ts';
import type { V1Node } from '../../k8s/client.ts';
import type { Context } from '../../context.ts';
import type { JoinContext } from '../contexts.ts';
import type { StepOutcome } from '../../engine/dsl.ts';
import { listFromAny, memoryEtcdClient, twoMembers } from './etcd-join.ts';

/** skipIf of the control-plane steps of `join`. */
export async function notControlPlaneJoin(ctx: JoinContext): Promise<string | false> {
  return ctx.options.controlPlane ? false : 'a worker join (no --control-plane)';
}

/**
 * Preflight of a control-plane join: bootstrap's host checks (binaries, units, ports, etcd data dir
 * and environment file, kubeconfigs, cgroup driver, kubelet version) without those about a cluster
 * this node would create (`KubernetesVersion`, `KubernetesVersionSupport`: the cluster exists, `ImagePull`:
 * the cluster's DaemonSet pulls), the join
 * flag checks, `CertificateKey` and `ControlPlaneEndpoint`.
 */
export const controlPlaneJoinChecks = (ctx: JoinContext): Check<JoinContext>[] => [
  ...controlPlaneChecks(ctx).filter((c) => !['KubernetesVersion', 'KubernetesVersionSupport', 'ImagePull', 'ControlPlaneEndpoint'].includes(c.id)),
  ...joinFlagChecks,
  {
    id: 'CertificateKey',
    ignorable: false,
    async run(c) {
      const k = c.options.certificateKey;
      if (k !== undefined && CERTIFICATE_KEY_RE.test(k)) return undefined;
      return { message: k === undefined ? '--control-plane needs --certificate-key (or KUBECEPTION_CERTIFICATE_KEY)' : '--certificate-key is not 64 hex digits', fix: 'run `kubeception certs upload` on a control-plane node and pass the key it prints' };
    },
  },
  {
    id: 'ControlPlaneEndpoint',
    ignorable: false,
    async run(c) {
      if (c.config.controlPlaneEndpoint) return undefined;
      return { message: 'controlPlaneEndpoint is not set in the config: a further control-plane node needs the address that reaches every apiserver (a load balancer or a DNS name)', fix: 'set controlPlaneEndpoint (host:port of the load balancer) in kubeception.config.ts — the same value the cluster was bootstrapped with' };
    },
  },
];

const sharedPath = (ctx: Pick<Context, 'config'>, file: string) => join(ctx.config.certificatesDir, file);

/** skipIf of `control-plane-certs`: a worker join, or every shared key is on this node already (a re-run). */
export async function noCertsToFetch(ctx: JoinContext): Promise<string | false> {
  if (!ctx.options.controlPlane) return 'a worker join (no --control-plane)';
  for (const [file] of SHARED_FILES) if (!(await ctx.files.exists(sharedPath(ctx, file)))) return false;
  return 'the shared keys are on this node';
}

/**
 * `control-plane-certs`: fetch, decrypt, check and write the shared keys (see the module docstring).
 * @throws InputError `certificate-key` (wrong key), `certificate-key-expired`, `certificate-key-bundle`,
 *   `control-plane-certs-forbidden`, `etcd-two-members`, `node-name-issued` (a bootstrap token bought
 *   this node's name: lib/steps/join/control-plane-identity.ts); ConfigError `controlPlaneEndpoint`;
 *   HostStateError `pki-foreign` — all before the first write.
 */
export async function fetchControlPlaneCerts(ctx: JoinContext): Promise<StepOutcome> {
  const j = ctx.state.join;
  if (!j) throw new HostStateError('join-not-discovered', { what: 'control-plane-certs', why: 'discovery did not run in this run, and the shared keys are not on this node', fix: 'run the whole join task (not --only/--skip discovery)' });
  const cpe = controlPlaneUrl(ctx.config);
  if (j.apiserver !== cpe)
    throw new ConfigError('config-invalid', { what: 'controlPlaneEndpoint', why: `the cluster's cluster-info names ${j.apiserver}, this config ${cpe}`, fix: `set controlPlaneEndpoint to ${new URL(j.apiserver).host} (the cluster's)` });
  const r = await call(new URL(`/api/v1/namespaces/kube-system/secrets/${CERTS_SECRET}`, j.apiserver), { ca: j.caPem, bearer: ctx.options.token, timeoutMs: 15_000 });
  if (r.status === 404) throw certificateKeyExpired('the Secret is gone: its 2 h passed, or no upload was made');
  if (r.status === 401 || r.status === 403)
    throw new InputError('control-plane-certs-forbidden', { what: `Secret kube-system/${CERTS_SECRET}`, why: `the apiserver refused the token (HTTP ${r.status})`, fix: 'use the join command `kubeception certs upload` printed (its token may read the Secret)' });
  if (r.status !== 200) throw new KubeceptionError('control-plane-certs', { what: `Secret kube-system/${CERTS_SECRET}`, why: `HTTP ${r.status} from ${j.apiserver}`, fix: 'check the apiserver through the controlPlaneEndpoint' });
  const secret = JSON.parse(r.body) as { data?: Record<string, string>; metadata?: { annotations?: Record<string, string> } };
  const files = decryptFiles(ctx.options.certificateKey!, secret.data ?? {}, secret.metadata?.annotations?.[EXPIRES_ANNOTATION]);
  // The bundle must be this cluster's: its CA the one discovery pinned.
  const pins = ctx.options.caCertHash!.split(',').map((p) => p.toLowerCase());
  if (!pins.includes(spkiSha256(files['ca.crt']!.toString(), 'uploaded ca.crt').toLowerCase()))
    throw new InputError('certificate-key-bundle', { what: `Secret kube-system/${CERTS_SECRET} ca.crt`, why: 'it is not the CA the --ca-cert-hash pins', fix: 'upload the certificates again on a control-plane node of this cluster' });
  // The shared keys, and the encryption config when the upload has one (every control-plane node's apiserver needs the same).
  const handed = [...SHARED_FILES, ...OPTIONAL_SHARED_FILES.filter(([, name]) => files[name] !== undefined)];
  const conflicts: string[] = [];
  for (const [file, name] of handed) {
    const have = await ctx.files.read(sharedPath(ctx, file));
    if (have !== undefined && have !== files[name]!.toString()) conflicts.push(sharedPath(ctx, file));
  }
  if (conflicts.length)
    throw new HostStateError('pki-foreign', { what: conflicts.join(', '), why: 'a different key or certificate is already there (another cluster\'s?)', fix: 'move the directory aside if it is not needed (kubeception never overwrites a key), then re-run' });
  if (!ctx.options.force) {
    const tls = await memoryEtcdClient(ctx, files['etcd-ca.crt']!.toString(), files['etcd-ca.key']!.toString());
    const urls = (secret.metadata?.annotations?.[ETCD_CLIENT_URLS_ANNOTATION] ?? '').split(',').filter(Boolean);
    const { members } = await listFromAny(urls, tls);
    const self = memberByPeerUrl(members, etcdPeerUrl(ctx.config));
    if (votingMembers(members).length + (self && !self.isLearner ? 0 : 1) === 2) throw twoMembers(members);
  }
  // This node's name is held for a control-plane node before anything is written (refused if a token bought it).
  await holdJoiningName(ctx, j.apiserver, { certPem: files['ca.crt']!.toString(), keyPem: files['ca.key']!.toString() });
  const written: string[] = [];
  for (const [file, name] of handed) {
    const mode = file.endsWith('.crt') || file.endsWith('.pub') ? 0o644 : 0o600;
    if (await ctx.files.write(sharedPath(ctx, file), files[name]!, { mode, dirMode: 0o755 })) written.push(file);
  }
  return { changed: written.length > 0, detail: `${written.length} shared key file(s) written (${written.join(', ') || 'none'})` };
}

/** `mark-control-plane` of a joined node: label and taint, through the controlPlaneEndpoint (its own apiserver starts only once labelled). */
export async function markJoinedControlPlane(ctx: JoinContext): Promise<StepOutcome> {
  if (ctx.dryRun) return { changed: true, detail: `would label and taint ${CONTROL_PLANE_LABEL}` };
  // The DaemonSet starts this node's apiserver once labelled: its hardening files first.
  await apiServerConfigFallback(ctx, false);
  const api = await endpointCluster(ctx);
  const node = await pollUntil(() => api.read<V1Node>({ apiVersion: 'v1', kind: 'Node', metadata: { name: ctx.config.nodeName } }), { timeoutMs: 180_000, intervalMs: 500, signal: ctx.signal });
  if (!node) throw new TimeoutError('node-not-registered', { what: `Node ${ctx.config.nodeName}`, why: 'the kubelet did not register it within 180 s', fix: `check \`journalctl -u ${ctx.config.distro.units.kubelet}\`` });
  return labelAndTaintControlPlane(api, ctx.config.nodeName, node);
}

/**
 * Sets the replicas of kube-controller-manager and kube-scheduler to the number of control-plane
 * nodes (at least 1). @returns the Deployments changed and that number.
 * @throws HostStateError `self-hosted-missing` if a Deployment is missing.
 */
export async function scaleControllers(api: Cluster): Promise<{ scaled: string[]; replicas: number }> {
  const n = await controlPlaneNodeCount(api);
  const scaled: string[] = [];
  for (const name of ['kube-controller-manager', 'kube-scheduler']) {
    const ref = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name, namespace: 'kube-system' } };
    const d = await api.read<{ apiVersion?: string; spec?: { replicas?: number } }>(ref);
    if (!d) throw new HostStateError('self-hosted-missing', { what: `Deployment kube-system/${name}`, why: 'the self-hosted control plane has no such Deployment', fix: 'run `kubeception run bootstrap` on the first control-plane node' });
    if (d.spec?.replicas === n) continue;
    await api.patch(ref, { spec: { replicas: n } });
    scaled.push(name);
  }
  return { scaled, replicas: n };
}

/** `control-plane-spread`: kube-controller-manager and kube-scheduler get one replica per control-plane node. */
export async function spreadControllers(ctx: JoinContext): Promise<StepOutcome> {
  if (ctx.dryRun) return { changed: true, detail: 'would scale the controllers to one replica per control-plane node' };
  const { scaled, replicas } = await scaleControllers(await endpointCluster(ctx));
  return { changed: scaled.length > 0, detail: scaled.length ? `${scaled.join(', ')} scaled to ${replicas}` : `${replicas} replica(s) each` };
}

/** `wait-local-apiserver`: this node's self-hosted kube-apiserver answers `/readyz` 10 times in a row. */
export async function waitLocalApiserver(ctx: JoinContext): Promise<StepOutcome> {
  if (ctx.dryRun) return { changed: false, detail: "would wait for this node's kube-apiserver pod" };
  const probes = await waitApiserver(ctx, 'final', { timeoutMs: 300_000, intervalMs: 200, inARow: 10 });
  return { changed: false, detail: `this node's kube-apiserver ready after ${probes} probe(s)` };
}
