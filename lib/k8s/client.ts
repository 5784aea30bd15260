/**
 * Talking to an apiserver: the one wrapper around `@kubernetes/client-node`. Objects are applied
 * with server-side apply (field manager `kubeception`), so a re-apply of the same objects changes
 * nothing and reports `changed: false`.
 * @see https://kubernetes.io/docs/reference/using-api/server-side-apply/
 */
import { createHash } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { Agent as HttpsAgent } from 'node:https';
import * as k8s from '@kubernetes/client-node';
import { KubeceptionError } from '../errors.ts';
import type { PlannedApiAction } from './planned.ts';
import { withRetry } from '../util/retry.ts';
import { withoutServerFields } from './objects.ts';
import { fieldChanges, type FieldChange } from './object-diff.ts';
import { FIELD_MANAGER } from './field-manager.ts';
import { isTransient } from '../net/transient.ts';

export { isTransient };

/** A Kubernetes object as plain data (the manifests/ builders' output). */
export type KubeObject = k8s.KubernetesObject & Record<string, unknown>;
export type { V1Node, V1Pod, V1DaemonSet, V1Deployment, KubernetesObject } from '@kubernetes/client-node';

export { FIELD_MANAGER };

function apiError(what: string, err: unknown, server: string): KubeceptionError {
  const e = err as { code?: number; body?: unknown; message?: string };
  const body = typeof e.body === 'string' ? e.body : JSON.stringify(e.body ?? '');
  return new KubeceptionError('apiserver-request', {
    what: `${what} at ${server}`,
    why: `${e.code ? `HTTP ${e.code}: ` : ''}${(body || e.message || String(err)).slice(0, 300)}`,
    fix: 'check that the apiserver is running and the kubeconfig is valid, then re-run',
    cause: err,
  });
}

/**
 * An API client of `kc` whose requests share one keep-alive HTTPS agent. client-node's KubeConfig
 * makes a new agent for every request (a new TLS secure context and handshake each time: most of a
 * converged re-run's API time); the credentials are still applied per request (a token may change).
 */
function apiClient<T>(kc: k8s.KubeConfig, Api: new (config: k8s.Configuration) => T, shared: { agent?: HttpsAgent }): T {
  const auth: k8s.SecurityAuthentication = {
    getName: () => 'kubeception',
    async applySecurityAuthentication(context) {
      await kc.applySecurityAuthentication(context);
      const made = context.getAgent();
      // Only a plain HTTPS agent is replaced (a proxy agent, a subclass, is left as client-node made it).
      if (made?.constructor !== HttpsAgent) return;
      shared.agent ??= new HttpsAgent({ ...(made as HttpsAgent & { options: object }).options, keepAlive: true });
      context.setAgent(shared.agent);
    },
  };
  const server = kc.getCurrentCluster()?.server;
  if (!server) throw new Error('No active cluster!');
  return new Api(k8s.createConfiguration({ baseServer: new k8s.ServerConfiguration(server, {}), authMethods: { default: auth } }));
}

/** Connection pools by server and kubeconfig (steps make their own Cluster; they share connections). Process memory only. */
const pools = new Map<string, { agent?: HttpsAgent }>();
function poolFor(key: string): { agent?: HttpsAgent } {
  const digest = createHash('sha256').update(key).digest('hex');
  const pool = pools.get(digest) ?? {};
  pools.set(digest, pool);
  return pool;
}

/**
 * Whether an apply changed an object, from the object read just before it and the apply's answer:
 * created, or a new resourceVersion — except that for an object with a `generation` (one with a spec
 * and a status: workloads, PodDisruptionBudgets) a new resourceVersion with the same generation,
 * labels and annotations is its controller's status write landing between the read and the apply,
 * not the apply's (the likely cause of a converged re-run on the bed, 2026-12-07, reporting the
 * self-hosted control plane changed). Objects without a `generation` (ConfigMaps, Secrets, RBAC)
 * are compared by resourceVersion alone. Pure.
 * @see k8s.io/apiserver/pkg/registry/rest/update.go (BeforeUpdate keeps the generation; each
 *   kind's strategy bumps it on a spec change)
 */
export function appliedChange(before: k8s.KubernetesObject | undefined, after: k8s.KubernetesObject): boolean {
  if (!before) return true;
  if (before.metadata?.resourceVersion === after.metadata?.resourceVersion) return false;
  const [b, a] = [before.metadata ?? {}, after.metadata ?? {}];
  if (b.generation === undefined || a.generation === undefined) return true;
  return b.generation !== a.generation || !isDeepStrictEqual(b.labels ?? {}, a.labels ?? {}) || !isDeepStrictEqual(b.annotations ?? {}, a.annotations ?? {});
}

const refOf = (o: k8s.KubernetesObject) => `${o.kind}/${o.metadata?.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata?.name}`;

/** `Cluster.patch`'s kinds: strategic merge (built-in kinds) or JSON merge patch (custom resources). */
export type PatchKind = 'strategic' | 'merge';
const PATCH_STRATEGY = { strategic: k8s.PatchStrategy.StrategicMergePatch, merge: k8s.PatchStrategy.MergePatch } as const;

/** A connection to one apiserver, from a kubeconfig's text. */
export class Cluster {
  protected readonly api: k8s.KubernetesObjectApi;
  private readonly kc: k8s.KubeConfig;
  /** One keep-alive connection pool for every API client of this Cluster (and of every other Cluster with the same kubeconfig and server). */
  private readonly shared: { agent?: HttpsAgent };
  readonly server: string;

  /**
   * @param kubeconfig kubeconfig YAML (e.g. admin.conf), or `in-cluster` for a pod's service account.
   * @param source what to name in errors (a path, "service account").
   * @param server if given, replaces the current context's cluster server URL (same CA and credentials).
   * @throws KubeceptionError `kubeconfig-invalid`.
   */
  constructor(kubeconfig: string, source: string, server?: string) {
    const kc = new k8s.KubeConfig();
    try {
      if (kubeconfig === 'in-cluster') kc.loadFromCluster();
      else kc.loadFromString(kubeconfig);
      const current = kc.getCurrentCluster();
      if (server && current) kc.loadFromOptions({ clusters: kc.clusters.map((c) => (c.name === current.name ? { ...c, server } : c)), users: kc.users, contexts: kc.contexts, currentContext: kc.currentContext });
    } catch (err) {
      throw new KubeceptionError('kubeconfig-invalid', { what: source, why: `not a valid kubeconfig: ${(err as Error).message}`, fix: 'run the kubeconfig step to rewrite it', cause: err });
    }
    this.server = kc.getCurrentCluster()?.server ?? '(none)';
    this.kc = kc;
    this.shared = poolFor(`${this.server}\n${kubeconfig}`);
    this.api = apiClient(kc, k8s.KubernetesObjectApi, this.shared);
    // What KubernetesObjectApi.makeApiClient does after construction (protected in its types).
    (this.api as unknown as { setDefaultNamespace(kc: k8s.KubeConfig): void }).setDefaultNamespace(kc);
  }

  /** A typed API client (VersionApi, CoreV1Api, …) on this Cluster's connection pool. */
  private client<T>(Api: new (config: k8s.Configuration) => T): T {
    return apiClient(this.kc, Api, this.shared);
  }

  /**
   * Runs one request, retried on a transient failure (see {@link isTransient}) up to 4 times, 0.5 s
   * then doubling: while a kube-apiserver surge rollout hands over the port, a connection may be
   * reset or refused for a moment. Every request kubeception retries is idempotent (reads,
   * server-side apply, patches that set values, deletes).
   */
  protected retrying<T>(fn: () => Promise<T>): Promise<T> {
    return withRetry(fn, { tries: 4, delayMs: 500, backoff: 2 }, { retryIf: isTransient });
  }

  /** The object, or undefined if it does not exist (404). */
  async read<T extends k8s.KubernetesObject>(ref: { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } }): Promise<T | undefined> {
    try {
      return (await this.retrying(() => this.api.read(ref as Parameters<k8s.KubernetesObjectApi["read"]>[0]))) as T;
    } catch (err) {
      if ((err as { code?: number }).code === 404) return undefined;
      throw apiError(`read ${refOf(ref)}`, err, this.server);
    }
  }

  /**
   * Server-side applies the objects (Namespaces first, then the rest concurrently).
   * @returns the refs the apply created or changed ({@link appliedChange}); empty on a no-op re-apply.
   * @throws KubeceptionError `apiserver-request` naming the object.
   */
  async apply(objects: readonly k8s.KubernetesObject[]): Promise<string[]> {
    // Namespaces first (objects in them need them); the rest concurrently: server-side apply needs no
    // other order (a binding may name a role not created yet; controllers retry pods whose Secret or
    // ServiceAccount is still missing). A converged re-run is then one round trip, not one per object.
    const namespaces = objects.filter((o) => o.kind === 'Namespace');
    const rest = objects.filter((o) => o.kind !== 'Namespace');
    const changed: string[] = [];
    for (const obj of namespaces) if (await this.applyOne(obj)) changed.push(refOf(obj));
    const results = await Promise.all(rest.map((obj) => this.applyOne(obj)));
    rest.forEach((obj, i) => {
      if (results[i]) changed.push(refOf(obj));
    });
    return changed;
  }

  /** Server-side applies one object. @returns whether the apply changed it ({@link appliedChange}). */
  private async applyOne(obj: k8s.KubernetesObject): Promise<boolean> {
    const ref = obj as { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } };
    const before = await this.read(ref);
    const after = await this.applyObject(obj);
    return appliedChange(before, after);
  }

  /**
   * Server-side applies one object.
   * @returns the object as the apiserver stored it (`metadata.uid`, `resourceVersion`) — from the
   *   apply's own response, not a second read, which an object with a short life may not survive
   *   (a token Secret the token cleaner deletes at its expiry).
   * @throws KubeceptionError `apiserver-request` naming the object.
   */
  async applyObject<T extends k8s.KubernetesObject>(obj: k8s.KubernetesObject): Promise<T> {
    try {
      return (await this.retrying(() => this.api.patch(obj, undefined, undefined, FIELD_MANAGER, true, k8s.PatchStrategy.ServerSideApply))) as T;
    } catch (err) {
      throw apiError(`apply ${refOf(obj)}`, err, this.server);
    }
  }

  /**
   * Whether applying `obj` would change the live object ({@link serverDryRunApply}).
   * @throws KubeceptionError `apiserver-request` naming the object (e.g. a value the server refuses).
   */
  async wouldChange(obj: k8s.KubernetesObject): Promise<boolean> {
    return (await this.serverDryRunApply(obj)).changed;
  }

  /**
   * A server-side apply of `obj` sent with `dryRun=All` (validated and computed by the server,
   * persisted nowhere), compared with the object as read, without the fields the server maintains.
   * Shared by {@link wouldChange} and `plan`'s {@link DryRunCluster}.
   * @returns the live object (undefined: none), the apply's result, and whether they differ.
   * @throws KubeceptionError `apiserver-request` naming the object.
   */
  protected async serverDryRunApply(obj: k8s.KubernetesObject): Promise<{ before?: k8s.KubernetesObject; after: k8s.KubernetesObject; changed: boolean }> {
    const before = await this.read(obj as { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } });
    let after: k8s.KubernetesObject;
    try {
      after = await this.retrying(() => this.api.patch(obj, undefined, 'All', FIELD_MANAGER, true, k8s.PatchStrategy.ServerSideApply));
    } catch (err) {
      throw apiError(`apply (dry run) ${refOf(obj)}`, err, this.server);
    }
    return { before, after, changed: !before || comparable(before) !== comparable(after) };
  }

  /**
   * Creates an object. @returns false if one of its name exists already (409 AlreadyExists).
   * @throws KubeceptionError `apiserver-request` for any other failure.
   */
  async create(obj: k8s.KubernetesObject): Promise<boolean> {
    try {
      await this.api.create(obj);
      return true;
    } catch (err) {
      if ((err as { code?: number }).code === 409) return false;
      throw apiError(`create ${refOf(obj)}`, err, this.server);
    }
  }

  /**
   * Replaces an object as read (PUT): its `metadata.resourceVersion` makes the write conditional.
   * @returns false on a conflict (409: the object changed since it was read; read it again).
   * @throws KubeceptionError `apiserver-request` for any other failure (404 included).
   */
  async replace(obj: k8s.KubernetesObject): Promise<boolean> {
    try {
      await this.api.replace(obj);
      return true;
    } catch (err) {
      if ((err as { code?: number }).code === 409) return false;
      throw apiError(`replace ${refOf(obj)}`, err, this.server);
    }
  }

  /**
   * Strategic-merge patch (merges lists such as `spec.taints` by key); `'merge'`: a JSON merge patch
   * (RFC 7386), what a custom resource takes (it has no strategic merge). A `null` value removes a field.
   * @throws KubeceptionError `apiserver-request` (404 included).
   */
  async patch(ref: k8s.KubernetesObject, patch: Record<string, unknown>, strategy: PatchKind = 'strategic'): Promise<k8s.KubernetesObject> {
    try {
      return await this.retrying(() => this.api.patch({ ...patch, apiVersion: ref.apiVersion, kind: ref.kind, metadata: { ...(patch.metadata as object), name: ref.metadata?.name, namespace: ref.metadata?.namespace } }, undefined, undefined, FIELD_MANAGER, undefined, PATCH_STRATEGY[strategy]));
    } catch (err) {
      throw apiError(`patch ${refOf(ref)}`, err, this.server);
    }
  }

  /**
   * Replaces the `status` subresource of a cluster-scoped custom object as read (PUT
   * `…/<plural>/<name>/status`): its `metadata.resourceVersion` makes the write conditional.
   * @param plural the resource's plural name (e.g. `nodeupgradeplans`).
   * @returns false on a conflict (409: the object changed since it was read).
   * @throws KubeceptionError `apiserver-request` for any other failure.
   */
  async replaceStatus(obj: k8s.KubernetesObject, plural: string): Promise<boolean> {
    const [group = '', version = ''] = (obj.apiVersion ?? '').split('/');
    try {
      await this.client(k8s.CustomObjectsApi).replaceClusterCustomObjectStatus({ group, version, plural, name: obj.metadata?.name ?? '', body: obj });
      return true;
    } catch (err) {
      if ((err as { code?: number }).code === 409) return false;
      throw apiError(`replace ${refOf(obj)}/status`, err, this.server);
    }
  }

  /** The apiserver's `/version` gitVersion (e.g. `v1.35.4`). @throws KubeceptionError `apiserver-request`. */
  async version(): Promise<string> {
    try {
      return (await this.retrying(() => this.client(k8s.VersionApi).getCode())).gitVersion;
    } catch (err) {
      throw apiError('GET /version', err, this.server);
    }
  }

  /**
   * Evicts a pod through the Eviction API, which honours PodDisruptionBudgets.
   * @returns `evicted`, `gone` (404), or `blocked` (429: a PodDisruptionBudget forbids it now; retry later).
   * @throws KubeceptionError `apiserver-request` for any other failure.
   */
  async evict(name: string, namespace: string): Promise<'evicted' | 'gone' | 'blocked'> {
    try {
      await this.client(k8s.CoreV1Api).createNamespacedPodEviction({ name, namespace, body: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name, namespace } } });
      return 'evicted';
    } catch (err) {
      const code = (err as { code?: number }).code;
      if (code === 404) return 'gone';
      if (code === 429) return 'blocked';
      throw apiError(`evict Pod/${namespace}/${name}`, err, this.server);
    }
  }

  /** Lists objects of a kind (optionally in a namespace, by label selector). */
  async list<T extends k8s.KubernetesObject>(apiVersion: string, kind: string, namespace?: string, labelSelector?: string): Promise<T[]> {
    try {
      const r = await this.retrying(() => this.api.list<T>(apiVersion, kind, namespace, undefined, undefined, undefined, undefined, labelSelector));
      return r.items;
    } catch (err) {
      throw apiError(`list ${kind}`, err, this.server);
    }
  }

  /**
   * Deletes an object; false if it was already gone. `propagationPolicy` as the API takes it
   * (`Background`: its dependents, e.g. a Job's pods, go too; a Job's default is to orphan them).
   */
  async delete(ref: k8s.KubernetesObject, opts: { propagationPolicy?: 'Background' | 'Foreground' | 'Orphan' } = {}): Promise<boolean> {
    try {
      await this.retrying(() => this.api.delete(ref, undefined, undefined, undefined, undefined, opts.propagationPolicy));
      return true;
    } catch (err) {
      if ((err as { code?: number }).code === 404) return false;
      throw apiError(`delete ${refOf(ref)}`, err, this.server);
    }
  }

  /**
   * Approves or denies a CertificateSigningRequest through its `approval` subresource (the condition
   * `Approved` or `Denied` with `reason` and `message`). `csr` is the object as read (its
   * resourceVersion guards against a concurrent change: a conflict throws).
   * @throws KubeceptionError `apiserver-request`.
   */
  async decideCsr(csr: k8s.V1CertificateSigningRequest, approve: boolean, reason: string, message: string): Promise<void> {
    const body: k8s.V1CertificateSigningRequest = {
      ...csr,
      status: { ...csr.status, conditions: [...(csr.status?.conditions ?? []), { type: approve ? 'Approved' : 'Denied', status: 'True', reason, message, lastUpdateTime: new Date() }] },
    };
    try {
      await this.client(k8s.CertificatesV1Api).replaceCertificateSigningRequestApproval({ name: csr.metadata!.name!, body });
    } catch (err) {
      throw apiError(`${approve ? 'approve' : 'deny'} CertificateSigningRequest/${csr.metadata?.name}`, err, this.server);
    }
  }

  /**
   * A watch-backed cache (an informer) of one collection: listed, then kept current by a watch.
   * No apiserver request per read. The library's ListWatch has no timeout of its own (a list or a
   * watch request to an apiserver that accepted the connection and went away hangs for good), so
   * each ListWatch is one *generation*: a new one replaces it when its list and watch are not
   * established within `startTimeoutMs` (default 10 s), 2 s after any error, and every
   * `relistMs` (default 5 min ± 20 %, as client-go's reflector times out its watches) so a watch
   * silently cut off is noticed. Reads see the last generation that listed; until the first one
   * does, the cache is empty and `synced()` false.
   * @param path the collection's URL path, e.g. `/api/v1/namespaces/kube-public/configmaps`.
   * @param fieldSelector e.g. `metadata.name=cluster-info` (lets RBAC `resourceNames` allow list/watch).
   * @param onChange called after every add, update or delete, and after each generation's list.
   * @param opts.log one line per failed or timed-out generation (no object contents).
   */
  watch<T extends k8s.KubernetesObject>(
    res: { apiVersion: string; kind: string; namespace?: string; path: string; fieldSelector?: string },
    onChange: () => void = () => undefined,
    opts: { log?: (line: string) => void; startTimeoutMs?: number; relistMs?: number; retryMs?: number } = {},
  ): Watched<T> {
    const { log = () => undefined, startTimeoutMs = 10_000, relistMs = 300_000, retryMs = 2_000 } = opts;
    const what = `${res.kind} ${res.path}${res.fieldSelector ? `?fieldSelector=${res.fieldSelector}` : ''}`;
    const list = () => this.api.list<T>(res.apiVersion, res.kind, res.namespace, undefined, undefined, undefined, res.fieldSelector);
    let current: k8s.ListWatch<T> | undefined;
    let generation = 0;
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    /** Starts a new generation after `ms`, replacing any timer already set (one timer at a time). */
    const schedule = (ms: number, why?: string) => {
      if (stopped) return;
      if (timer) clearTimeout(timer);
      timer = setTimeout(() => {
        timer = undefined;
        if (why) log(`watch ${what}: ${why}; listing again`);
        begin();
      }, ms);
      timer.unref?.();
    };
    const begin = () => {
      const mine = ++generation;
      const live = () => mine === generation && !stopped;
      // The library sends its watch request once the list returns, even when stop() was called
      // meanwhile; a list that answers for a superseded or stopped generation is turned into an
      // error so that no watch request follows it.
      const listFn = () => list().then((r) => {
        if (!live()) throw new Error('superseded');
        return r;
      });
      const lw = new k8s.ListWatch<T>(res.path, new k8s.Watch(this.kc), listFn, false, undefined, res.fieldSelector);
      let failed = false;
      for (const verb of ['add', 'update', 'delete'] as const) lw.on(verb, () => { if (live() && lw === current) onChange(); });
      // The library reports a failed list or a broken watch as an 'error' event (and may also reject start()).
      const fail = (err: unknown) => {
        if (!live() || failed) return;
        failed = true;
        void lw.stop();
        schedule(retryMs, `${(err as Error)?.message ?? String(err)}`);
      };
      lw.on('error', fail);
      schedule(startTimeoutMs, `no list and watch within ${startTimeoutMs / 1000} s`);
      lw.start().then(() => {
        if (!live() || failed) return void lw.stop();
        const previous = current;
        current = lw;
        if (previous) void previous.stop();
        schedule(relistMs * (0.8 + Math.random() * 0.4));
        onChange();
      }, fail);
    };
    begin();
    return {
      synced: () => current !== undefined,
      list: () => current?.list(res.namespace) ?? [],
      get: (name) => current?.get(name, res.namespace),
      stop: () => {
        stopped = true;
        if (timer) clearTimeout(timer);
        if (current) void current.stop();
      },
    };
  }
}

/** A watch-backed cache of one collection (see {@link Cluster.watch}). */
export interface Watched<T> {
  /** True once the first list is in. */
  synced(): boolean;
  list(): readonly T[];
  get(name: string): T | undefined;
  stop(): void;
}

/** An object without the fields the server maintains, for comparing a live object with a dry-run result. */
function comparable(o: k8s.KubernetesObject | undefined): string {
  return o ? JSON.stringify(withoutServerFields(o)) : '';
}

/**
 * What `plan`/`--dry-run` talks to instead of {@link Cluster}: reads go to the apiserver when it
 * answers (`online`), and every write is recorded in `planned` instead of made. Online, an apply or
 * patch is sent with `dryRun=All` (the server validates and computes the result, persisting nothing)
 * and recorded only if the result differs from the live object, so a converged cluster plans no API
 * changes. Offline (a fresh host: nothing serves yet), reads find nothing and writes are recorded as
 * `apply`, not compared.
 * @see https://kubernetes.io/docs/reference/using-api/api-concepts/#dry-run
 */
export class DryRunCluster extends Cluster {
  constructor(kubeconfig: string, source: string, private readonly planned: PlannedApiAction[], private readonly online: boolean, private readonly which: string, server?: string) {
    super(kubeconfig, source, server);
  }

  override async read<T extends k8s.KubernetesObject>(ref: { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } }): Promise<T | undefined> {
    return this.online ? super.read<T>(ref) : undefined;
  }

  override async list<T extends k8s.KubernetesObject>(apiVersion: string, kind: string, namespace?: string, labelSelector?: string): Promise<T[]> {
    return this.online ? super.list<T>(apiVersion, kind, namespace, labelSelector) : [];
  }

  private record(op: PlannedApiAction['op'], obj: k8s.KubernetesObject, fields?: FieldChange[]): void {
    const ref = refOf(obj);
    if (!this.planned.some((p) => p.op === op && p.ref === ref)) this.planned.push({ op, ref, ...(!this.online && { note: `the ${this.which} apiserver does not answer yet: not compared` }), ...(fields && { fields }) });
  }

  override async apply(objects: readonly k8s.KubernetesObject[]): Promise<string[]> {
    const changed: string[] = [];
    for (const obj of objects) if ((await this.dryRunApply(obj)).changed) changed.push(refOf(obj));
    return changed;
  }

  /** Records the apply (see {@link apply}); @returns the dry run's result online, the object itself offline. */
  override async applyObject<T extends k8s.KubernetesObject>(obj: k8s.KubernetesObject): Promise<T> {
    return (await this.dryRunApply(obj)).after as T;
  }

  /** One object: offline recorded as `apply`; online sent as a dry run, recorded when its result differs from the live object. */
  private async dryRunApply(obj: k8s.KubernetesObject): Promise<{ changed: boolean; after: k8s.KubernetesObject }> {
    if (!this.online) {
      this.record('apply', obj);
      return { changed: true, after: obj };
    }
    const { before, after, changed } = await this.serverDryRunApply(obj);
    if (!changed) return { changed: false, after };
    this.record(before ? 'update' : 'create', obj, before && fieldChanges(before, after));
    return { changed: true, after };
  }

  override async patch(ref: k8s.KubernetesObject, patch: Record<string, unknown>, strategy: PatchKind = 'strategic'): Promise<k8s.KubernetesObject> {
    if (!this.online) {
      this.record('patch', ref);
      return { ...ref };
    }
    const before = await this.read(ref as Parameters<Cluster['read']>[0]);
    let after: k8s.KubernetesObject;
    try {
      after = await this.api.patch({ ...patch, apiVersion: ref.apiVersion, kind: ref.kind, metadata: { ...(patch.metadata as object), name: ref.metadata?.name, namespace: ref.metadata?.namespace } }, undefined, 'All', FIELD_MANAGER, undefined, PATCH_STRATEGY[strategy]);
    } catch (err) {
      throw apiError(`patch (dry run) ${refOf(ref)}`, err, this.server);
    }
    if (comparable(before) !== comparable(after)) this.record('patch', ref, before && fieldChanges(before, after));
    return after;
  }

  override async delete(ref: k8s.KubernetesObject, _opts: { propagationPolicy?: 'Background' | 'Foreground' | 'Orphan' } = {}): Promise<boolean> {
    if (this.online && !(await this.read(ref as Parameters<Cluster['read']>[0]))) return false;
    this.record('delete', ref);
    return true;
  }

  override async create(obj: k8s.KubernetesObject): Promise<boolean> {
    if (this.online && (await this.read(obj as Parameters<Cluster['read']>[0]))) return false;
    this.record('create', obj);
    return true;
  }

  override async replace(obj: k8s.KubernetesObject): Promise<boolean> {
    this.record('update', obj);
    return true;
  }

  override async replaceStatus(obj: k8s.KubernetesObject): Promise<boolean> {
    this.record('update', obj);
    return true;
  }

  override async decideCsr(csr: k8s.V1CertificateSigningRequest): Promise<void> {
    this.record('patch', { apiVersion: 'certificates.k8s.io/v1', kind: 'CertificateSigningRequest', metadata: { name: csr.metadata?.name } });
  }
}
