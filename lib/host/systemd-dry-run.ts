/**
 * What `plan`/`--dry-run` uses instead of lib/host/systemd.ts's D-Bus client: reads unit state from the
 * real systemd (when reachable) and records every change instead of making it.
 *
 * Host effects: none.
 */
import type { Systemd } from './systemd.ts';

/** An action a {@link DryRunSystemd} recorded instead of performing. */
export interface PlannedUnitAction {
  op: 'reload' | 'enable' | 'disable' | 'start' | 'restart' | 'stop';
  unit?: string;
}

/** Reads unit state from the real systemd (if reachable); records changes instead of making them. */
export class DryRunSystemd implements Systemd {
  readonly planned: PlannedUnitAction[] = [];
  constructor(private readonly real: Systemd) {}
  async reload() {
    this.planned.push({ op: 'reload' });
  }
  // Like the real calls, an action that would change nothing (an enabled unit enabled again, an active
  // unit started) is not recorded, so a converged host plans no unit actions. An unreachable systemd
  // counts as "would change".
  private async fileState(unit: string) {
    return this.real.unitFileState(unit).catch(() => 'unknown');
  }
  private async active(unit: string) {
    return this.real.activeState(unit).catch(() => 'unknown');
  }
  async enable(units: string[]) {
    let changed = false;
    for (const unit of units) {
      if ((await this.fileState(unit)) === 'enabled' || this.planned.some((p) => p.op === 'enable' && p.unit === unit)) continue;
      this.planned.push({ op: 'enable', unit });
      changed = true;
    }
    return changed;
  }
  async disable(units: string[]) {
    let changed = false;
    for (const unit of units) {
      if (['disabled', 'static', 'not-found', ''].includes(await this.fileState(unit))) continue;
      this.planned.push({ op: 'disable', unit });
      changed = true;
    }
    return changed;
  }
  async start(unit: string, opts: { restart?: boolean } = {}) {
    if (!opts.restart && (await this.active(unit)) === 'active') return;
    this.planned.push({ op: opts.restart ? 'restart' : 'start', unit });
  }
  async stop(unit: string) {
    if (['inactive', 'failed'].includes(await this.active(unit))) return;
    this.planned.push({ op: 'stop', unit });
  }
  activeState(unit: string) {
    return this.real.activeState(unit);
  }
  unitFileState(unit: string) {
    return this.real.unitFileState(unit);
  }
  async mainPid(unit: string) {
    return (await this.real.mainPid?.(unit)) ?? 0;
  }
  close() {
    this.real.close();
  }
}
