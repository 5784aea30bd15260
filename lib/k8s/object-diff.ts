/**
 * Field-level differences between a live object and what an apply would make of it (the server's
 * dry-run result), for `plan`: which fields change, from what to what — as `kubectl diff` shows, in
 * one line per field. Pure; no API client.
 *
 * Paths are dotted (`spec.template.spec.containers[kube-apiserver].command`); list items that have a
 * `name` are matched by it, other objects by index; a list of plain values (a command line) is
 * compared as a multiset and reported as the items removed and added, so a changed flag reads
 * `- --audit-log-maxage=30  + --audit-log-maxage=60`. Values under a Secret's `data`/`stringData`
 * are never shown (`(secret value)`), nor are their lengths.
 */
import { isJsonObject as isObject, withoutServerFields } from './objects.ts';

/** One changed field. `before`/`after` are short JSON renderings; absent when the field is absent on that side. */
export interface FieldChange {
  path: string;
  before?: string;
  after?: string;
  /** For a list of plain values: the items only on one side (JSON renderings). */
  removed?: string[];
  added?: string[];
}

const MAX_VALUE = 120;
const SECRET_VALUE = '(secret value)';

function render(v: unknown): string {
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  return s.length > MAX_VALUE ? `${s.slice(0, MAX_VALUE - 1)}…` : s;
}

const isScalar = (v: unknown) => v === null || ['string', 'number', 'boolean'].includes(typeof v);
const named = (a: unknown[]) => a.length > 0 && a.every((x) => isObject(x) && typeof x.name === 'string') && new Set(a.map((x) => (x as { name: string }).name)).size === a.length;

function walk(path: string, a: unknown, b: unknown, secret: boolean, out: FieldChange[]): void {
  if (JSON.stringify(a) === JSON.stringify(b)) return;
  if (secret) {
    out.push({ path, ...(a !== undefined && { before: SECRET_VALUE }), ...(b !== undefined && { after: SECRET_VALUE }) });
    return;
  }
  if (isObject(a) && isObject(b)) {
    for (const k of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()) walk(path ? `${path}.${k}` : k, a[k], b[k], false, out);
    return;
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    if (a.every(isScalar) && b.every(isScalar)) {
      const count = (xs: unknown[]) => xs.reduce<Map<string, number>>((m, x) => m.set(JSON.stringify(x), (m.get(JSON.stringify(x)) ?? 0) + 1), new Map());
      const [ca, cb] = [count(a), count(b)];
      const only = (x: Map<string, number>, y: Map<string, number>) => [...x].flatMap(([k, n]) => Array<string>(Math.max(0, n - (y.get(k) ?? 0))).fill(render(JSON.parse(k))));
      const removed = only(ca, cb);
      const added = only(cb, ca);
      // Same items in another order.
      if (!removed.length && !added.length) out.push({ path, before: render(a), after: render(b) });
      else out.push({ path, ...(removed.length ? { removed } : {}), ...(added.length ? { added } : {}) });
      return;
    }
    if (named(a) && named(b)) {
      const byName = (xs: unknown[]) => new Map(xs.map((x) => [(x as { name: string }).name, x]));
      const [ma, mb] = [byName(a), byName(b)];
      for (const n of new Set([...ma.keys(), ...mb.keys()])) walk(`${path}[${n}]`, ma.get(n), mb.get(n), false, out);
      return;
    }
    if (a.length === b.length) {
      for (const [i, x] of a.entries()) walk(`${path}[${i}]`, x, b[i], false, out);
      return;
    }
  }
  out.push({ path, ...(a !== undefined && { before: render(a) }), ...(b !== undefined && { after: render(b) }) });
}

/** Annotations the apiserver and controllers keep (a DaemonSet's template generation, a Deployment's revision): not the apply's changes. */
const SERVER_ANNOTATIONS = ['deprecated.daemonset.template.generation', 'deployment.kubernetes.io/revision'];

function withoutServerAnnotations(o: Record<string, unknown>): Record<string, unknown> {
  const meta = o.metadata as { annotations?: Record<string, string> } | undefined;
  if (!meta?.annotations || !SERVER_ANNOTATIONS.some((k) => k in meta.annotations!)) return o;
  const annotations = Object.fromEntries(Object.entries(meta.annotations).filter(([k]) => !SERVER_ANNOTATIONS.includes(k)));
  const { annotations: _a, ...rest } = meta;
  return { ...o, metadata: Object.keys(annotations).length ? { ...rest, annotations } : rest };
}

/**
 * The fields that differ between `before` (live) and `after` (the dry run's result), server-kept
 * fields (status, resourceVersion, managedFields, generation, uid, creationTimestamp, the server's
 * annotations {@link SERVER_ANNOTATIONS}) left out.
 * @returns one entry per changed leaf, list of plain values or differently shaped value, in path order.
 */
export function fieldChanges(before: object | undefined, after: object | undefined): FieldChange[] {
  const a = withoutServerAnnotations(before ? (withoutServerFields(before) as Record<string, unknown>) : {});
  const b = withoutServerAnnotations(after ? (withoutServerFields(after) as Record<string, unknown>) : {});
  const isSecret = (a.kind ?? b.kind) === 'Secret';
  const out: FieldChange[] = [];
  for (const k of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()) {
    if (isSecret && (k === 'data' || k === 'stringData')) {
      const [da, db] = [(a[k] ?? {}) as Record<string, unknown>, (b[k] ?? {}) as Record<string, unknown>];
      for (const key of [...new Set([...Object.keys(da), ...Object.keys(db)])].sort()) walk(`${k}.${key}`, da[key], db[key], true, out);
    } else walk(k, a[k], b[k], false, out);
  }
  return out;
}

/** One change as a line of `plan`'s text: `path: before → after`, or `path: - removed + added`. */
export function fieldChangeLine(c: FieldChange): string {
  if (c.removed || c.added) return `${c.path}: ${[...(c.removed ?? []).map((x) => `- ${x}`), ...(c.added ?? []).map((x) => `+ ${x}`)].join('  ')}`;
  return `${c.path}: ${c.before ?? '(absent)'} → ${c.after ?? '(absent)'}`;
}
