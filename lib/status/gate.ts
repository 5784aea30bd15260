/**
 * The health gate of a live reconfiguration: the `kubeception status` checks a control-plane change
 * can break, read before a component's new spec is applied and again after its pods have rolled. A
 * check that passed before and still fails once the roll has settled is the change's doing, and the
 * component is given back its previous spec (lib/steps/self-hosted/self-hosted.ts). A check that
 * already failed before (a worker that was down, no pod network on a bare node) is not held against
 * the change. Talos applies a config in `--mode=try` and reverts after the operator's timer; this
 * reverts on the checks themselves.
 * @see https://www.talos.dev/latest/talos-guides/configuration/editing-machine-configuration/ (try mode)
 */
import { gatherStatus, type StatusHost } from './gather.ts';
import type { CheckResult } from './checks.ts';
import type { Context } from '../context.ts';

/**
 * The checks that gate a roll: the cluster's, which a component's flags can break. The host's own
 * (certificates, the recovery copy — refreshed by a later step of the same run —, snapshots, the
 * upgrade journal) do not gate.
 */
export const GATED_CHECKS: readonly string[] = ['etcd', 'apiservers', 'controller-manager-leader', 'scheduler-leader', 'nodes', 'pod-network', 'coredns', 'join-service', 'csr-approver'];

/** Longest wait for the gate to pass after a roll (ms). */
export const GATE_TIMEOUT_MS = 60_000;

/** The names of the gated checks that did not fail in `baseline`: those the gate holds a change to. Pure. */
const heldTo = (baseline: readonly CheckResult[]) => new Set(baseline.filter((c) => c.state !== 'fail' && GATED_CHECKS.includes(c.name)).map((c) => c.name));

/** The gated checks that did not fail in `baseline` and fail in `now`. Pure. */
export function regressions(baseline: readonly CheckResult[], now: readonly CheckResult[]): CheckResult[] {
  const held = heldTo(baseline);
  return now.filter((c) => c.state === 'fail' && held.has(c.name));
}

/** One line naming each regressed check and what it found. */
export const describeRegressions = (bad: readonly CheckResult[]) => bad.map((c) => `${c.name} (${c.detail})`).join('; ');

/** A health gate: {@link statusGate} on a host, or a test's own `gather`. */
export interface HealthGate {
  /** The gated checks now, read before a change. */
  baseline(): Promise<CheckResult[]>;
  /**
   * Re-reads the checks every `intervalMs` (1 s) after a roll until none of those that did not fail
   * in `baseline` fails and every leader Lease among them (a check with `renewedAt`) has been renewed
   * since the first read — so a new instance that runs but does not lead, while its component's
   * Lease still looks fresh from the instance the roll removed, is not taken for healthy (the Lease
   * goes stale within its 15 s duration and the check fails) — or until `timeoutMs` is up.
   * Renewals are compared with each other, never with this host's clock.
   * @returns undefined when the gate passes; else the checks that held it, as one line ({@link describeRegressions}).
   * @throws the signal's reason when the run is interrupted.
   */
  verify(baseline: readonly CheckResult[], signal: AbortSignal): Promise<string | undefined>;
}

/**
 * A gate over `gather` (the checks, read once per call). Timing is injectable for unit tests.
 * @param gather reads every check; its checks outside {@link GATED_CHECKS} are ignored.
 */
export function healthGate(gather: () => Promise<CheckResult[]>, timing: { timeoutMs?: number; intervalMs?: number; now?: () => number } = {}): HealthGate {
  const { timeoutMs = GATE_TIMEOUT_MS, intervalMs = 1_000, now = Date.now } = timing;
  return {
    baseline: async () => (await gather()).filter((c) => GATED_CHECKS.includes(c.name)),
    async verify(baseline, signal) {
      const started = now();
      const held = heldTo(baseline);
      const firstRenewal = new Map<string, number>();
      for (;;) {
        const checks = await gather();
        const bad = regressions(baseline, checks);
        const unrenewed = checks.filter((c) => {
          if (c.renewedAt === undefined || c.state === 'fail' || !held.has(c.name)) return false;
          if (!firstRenewal.has(c.name)) firstRenewal.set(c.name, c.renewedAt);
          return c.renewedAt <= firstRenewal.get(c.name)!;
        });
        if (!bad.length && !unrenewed.length) return undefined;
        if (now() - started >= timeoutMs) return describeRegressions([...bad, ...unrenewed.map((c) => ({ ...c, detail: `${c.detail}; its Lease was not renewed after the roll` }))]);
        if (signal.aborted) throw signal.reason;
        await new Promise((r) => setTimeout(r, intervalMs));
      }
    },
  };
}

/**
 * The gate of a control-plane node's run: `kubeception status`'s checks read with this node's admin
 * credentials and its systemd (read-only, as `status` is).
 */
export function statusGate(ctx: Pick<Context, 'config' | 'files' | 'systemd'>): HealthGate {
  const host: StatusHost = { config: ctx.config, files: ctx.files, unitState: (unit) => ctx.systemd.activeState(unit) };
  return healthGate(() => gatherStatus(host));
}
