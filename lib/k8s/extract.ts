/**
 * The part of a live object one field manager owns, as an object that manager can apply again:
 * what client-go's `Extract<Kind>` functions build from `metadata.managedFields` (fieldsV1). Applied
 * back with server-side apply, it returns exactly that manager's fields to those values and leaves
 * every field another manager (an operator's `kubectl edit`, a controller) owns alone — the way to
 * undo one apply of kubeception's without taking over the rest of the object. Pure.
 *
 * fieldsV1 (structured-merge-diff): `f:<name>` a field of a map or struct, `k:<json>` a list item by
 * its key fields, `v:<json>` a set item by value, `i:<n>` a list item by index, `.` the node itself;
 * an empty set `{}` owns the whole value (a leaf, or an atomic list or map).
 * @see https://kubernetes.io/docs/reference/using-api/server-side-apply/#field-management
 * @see k8s.io/client-go/applyconfigurations (ExtractDaemonSet, ExtractDeployment)
 */

import { isJsonObject as isObject } from './objects.ts';

type Json = unknown;
type FieldSet = { [k: string]: FieldSet };

function matchesKey(item: Json, key: Record<string, Json>): boolean {
  return isObject(item) && Object.entries(key).every(([k, v]) => JSON.stringify(item[k]) === JSON.stringify(v));
}

function pick(value: Json, fields: FieldSet): Json {
  const keys = Object.keys(fields).filter((k) => k !== '.');
  if (keys.length === 0) return value;
  if (Array.isArray(value)) {
    const out: Json[] = [];
    for (const k of keys) {
      const body = k.slice(2);
      if (k.startsWith('k:')) {
        const item = value.find((x) => matchesKey(x, JSON.parse(body) as Record<string, Json>));
        if (item !== undefined) out.push(pick(item, fields[k]!));
      } else if (k.startsWith('v:')) out.push(JSON.parse(body));
      else if (k.startsWith('i:') && value[Number(body)] !== undefined) out.push(pick(value[Number(body)], fields[k]!));
    }
    return out;
  }
  if (!isObject(value)) return value;
  const out: Record<string, Json> = {};
  for (const k of keys) {
    if (!k.startsWith('f:')) continue;
    const name = k.slice(2);
    if (name in value) out[name] = pick(value[name], fields[k]!);
  }
  return out;
}

interface Managed {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; managedFields?: { manager?: string; operation?: string; fieldsV1?: FieldSet }[] };
}

/**
 * The fields `manager`'s apply owns in `live` (its `Apply` entry of managedFields), with apiVersion,
 * kind, name and namespace. @returns undefined when `manager` never applied to `live`.
 */
export function extractApplied<T extends Managed>(live: T, manager: string): T | undefined {
  const entry = live.metadata?.managedFields?.find((m) => m.manager === manager && m.operation === 'Apply');
  if (!entry?.fieldsV1) return undefined;
  const picked = pick(live, entry.fieldsV1) as Record<string, Json> & { metadata?: Record<string, Json> };
  return {
    ...picked,
    apiVersion: live.apiVersion,
    kind: live.kind,
    metadata: { ...picked.metadata, name: live.metadata?.name, ...(live.metadata?.namespace && { namespace: live.metadata.namespace }) },
  } as unknown as T;
}
