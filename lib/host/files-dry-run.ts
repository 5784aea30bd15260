/**
 * What `plan`/`--dry-run` uses instead of {@link RealFiles}: reads the real host, records writes.
 *
 * Host effects: none (reads only).
 */
import { promises as fs } from 'node:fs';
import { lineChanges } from '../util/diff.ts';
import { ownedByUs, RealFiles, statOrUndefined, type HostFiles, type PlannedWrite, type WriteOptions } from './files.ts';
import type { RemoveTreeResult } from './nofollow.ts';

/**
 * Reads the real host; records writes in {@link DryRunFiles.planned} instead of performing them.
 * Reads of a path written earlier in the same run return the planned content, so later steps see a
 * consistent view.
 */
export class DryRunFiles implements HostFiles {
  readonly dryRun: boolean = true;
  readonly planned: PlannedWrite[] = [];
  private readonly overlay = new Map<string, string | null>();
  /** Trees this run would remove: nothing below them exists unless written after the removal. */
  private readonly removedTrees = new Set<string>();
  private readonly real = new RealFiles();

  private underRemovedTree(path: string): boolean {
    for (const t of this.removedTrees) if (path === t || path.startsWith(`${t}/`)) return true;
    return false;
  }

  async read(path: string): Promise<string | undefined> {
    if (this.overlay.has(path)) return this.overlay.get(path) ?? undefined;
    if (this.underRemovedTree(path)) return undefined;
    return this.real.read(path);
  }

  async exists(path: string): Promise<boolean> {
    if (this.overlay.has(path)) return this.overlay.get(path) !== null;
    if (this.underRemovedTree(path)) return false;
    return this.real.exists(path);
  }

  /** The real entries, plus files this run would create directly in `path`, minus those it would remove. */
  async list(path: string): Promise<string[]> {
    const names = new Set(this.underRemovedTree(path) ? [] : await this.real.list(path));
    const prefix = path.endsWith('/') ? path : `${path}/`;
    for (const [p, v] of this.overlay) {
      if (!p.startsWith(prefix) || p.slice(prefix.length).includes('/')) continue;
      if (v === null) names.delete(p.slice(prefix.length));
      else names.add(p.slice(prefix.length));
    }
    return [...names].sort();
  }

  async write(path: string, data: string | Uint8Array, opts: WriteOptions): Promise<boolean> {
    const text = typeof data === 'string' ? data : Buffer.from(data).toString('utf8');
    const before = await this.read(path);
    const lines = text.split('\n').filter((l, i, a) => l || i < a.length - 1).length;
    if (before === text) {
      // Same content: only a mode drift of a real file is a change (as RealFiles.write rewrites it).
      if (this.overlay.has(path)) return false;
      const st = await statOrUndefined(path);
      const owner = !opts.owner && st !== undefined && !ownedByUs(st);
      if (!st || ((st.mode & 0o7777) === opts.mode && !owner)) return false;
      this.planned.push({ op: 'write', path, mode: opts.mode, bytes: Buffer.byteLength(text), change: (st.mode & 0o7777) === opts.mode ? 'owner' : 'mode', lines });
      return true;
    }
    this.overlay.set(path, text);
    const diff = before === undefined ? {} : lineChanges(before, text);
    this.planned.push({ op: 'write', path, mode: opts.mode, bytes: Buffer.byteLength(text), change: before === undefined ? 'create' : 'update', lines, ...diff });
    return true;
  }

  async mkdir(path: string, mode = 0o755, _owner?: string): Promise<boolean> {
    if (await this.exists(path)) return false;
    this.overlay.set(path, '');
    this.planned.push({ op: 'mkdir', path, mode });
    return true;
  }

  async remove(path: string): Promise<boolean> {
    if (!(await this.exists(path))) return false;
    this.overlay.set(path, null);
    this.planned.push({ op: 'remove', path });
    return true;
  }

  /** Records the removal of the tree (mount points inside it are not modelled: the real run keeps them). */
  async removeTree(path: string): Promise<RemoveTreeResult> {
    const present = (await this.exists(path)) || (await fs.lstat(path).then(() => !this.underRemovedTree(path), () => false));
    if (!present) return { removed: false, kept: [] };
    for (const p of this.overlay.keys()) if (p === path || p.startsWith(`${path}/`)) this.overlay.set(p, null);
    this.overlay.set(path, null);
    this.removedTrees.add(path);
    this.planned.push({ op: 'remove', path, tree: true });
    return { removed: true, kept: [] };
  }
}
