import type { FieldChange } from './object-diff.ts';

/** What `plan`/`--dry-run` records instead of an API write. */
export interface PlannedApiAction {
  /**
   * `create` (absent now), `update` (the server's dry run of the apply differs from the live object),
   * `apply` (not compared: the apiserver does not answer yet), `patch`, `delete`.
   */
  op: 'create' | 'update' | 'apply' | 'patch' | 'delete';
  /** `Kind/namespace/name` or `Kind/name`. */
  ref: string;
  /** Which apiserver the step talks to (`final` or `bootstrap`) when it does not answer. */
  note?: string;
  /** For `update` and `patch`: the fields the write would change (./object-diff.ts; Secret values never shown). */
  fields?: FieldChange[];
}
