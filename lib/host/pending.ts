/**
 * Pending actions that survive a crash. A config write that only takes effect after a restart
 * (or a daemon-reload) first records that action in a marker file; the step that performs it
 * removes the marker afterwards. A run killed in between leaves the marker, so the next run still
 * restarts the unit — instead of reading the new file, concluding "already configured", and leaving
 * the running process on the old config (the wedge of a kubelet whose kubeconfig names the final
 * apiserver while the process still talks to the bootstrap one).
 *
 * Host effects: marker files `<PENDING_DIR>/<action>` (0600, directory 0700), written before the
 * config write, removed after the action. Nothing under `--dry-run`.
 */
import { join } from 'node:path';
import { PENDING_DIR } from '../constants.ts';
import type { Context } from '../context.ts';
import type { WriteOptions } from './files.ts';

/**
 * What must happen for a write to apply: `restart:<unit>`, or a daemon-reload — `daemon-reload` for the
 * kubelet's step, `daemon-reload:<who>` for a step that may run beside it (each clears only its own
 * marker, so one step's reload can never clear the other's debt before the other's file is written).
 */
export type PendingAction = `restart:${string}` | 'daemon-reload' | `daemon-reload:${string}`;

type Ctx = Pick<Context, 'files' | 'dryRun'>;

const marker = (action: PendingAction) => join(PENDING_DIR, action.replace(':', '-'));

/** Records `action` as pending (idempotent). */
export async function markPending(ctx: Ctx, action: PendingAction): Promise<void> {
  if (ctx.dryRun) return;
  await ctx.files.write(marker(action), `${action}\n`, { mode: 0o600, dirMode: 0o700 });
}

/** True if `action` was recorded and not yet done (by this run or a killed earlier one). */
export function isPending(ctx: Ctx, action: PendingAction): Promise<boolean> {
  return ctx.files.exists(marker(action));
}

/** Marks `action` done: call right after it succeeded. */
export async function clearPending(ctx: Ctx, action: PendingAction): Promise<void> {
  if (ctx.dryRun) return;
  await ctx.files.remove(marker(action));
}

/**
 * Writes `path` like {@link HostFiles.write}; if its content is about to change, first records
 * `actions` (the restart or reload that applies it) as pending.
 * @returns true if the file changed.
 */
export async function writeThenPending(ctx: Ctx, path: string, data: string, opts: WriteOptions, actions: readonly PendingAction[]): Promise<boolean> {
  if ((await ctx.files.read(path)) !== data) for (const a of actions) await markPending(ctx, a);
  return ctx.files.write(path, data, opts);
}
