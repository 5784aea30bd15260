/**
 * Object helpers that need no API client (so step modules can use them without loading
 * @kubernetes/client-node).
 */
/** What these helpers need of an object (structural: no import of the API client's types). */
interface KubernetesObject {
  metadata?: { resourceVersion?: string; managedFields?: unknown; generation?: number; uid?: string; creationTimestamp?: unknown };
}

/**
 * The object without what the server maintains (status, resourceVersion, managedFields, generation,
 * uid, creationTimestamp): what can be applied again, or compared with a dry-run result.
 */
export function withoutServerFields<T extends KubernetesObject>(o: T): T {
  const { metadata, ...rest } = o as T & { status?: unknown };
  const { resourceVersion: _rv, managedFields: _mf, generation: _g, uid: _u, creationTimestamp: _c, ...meta } = metadata ?? {};
  delete (rest as { status?: unknown }).status;
  return { ...rest, metadata: meta } as unknown as T;
}

/** True for a JSON object (not an array, not null). */
export const isJsonObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
