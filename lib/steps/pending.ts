/**
 * Steps of the seed's sequence that this version declares but cannot perform yet. They fail with a
 * clear error instead of pretending; `--skip`/`--only` select around them.
 */
import { KubeceptionError } from '../errors.ts';

/** Throws `step-unavailable` naming the step and what it needs. */
export function unavailable(step: string, needs: string): never {
  throw new KubeceptionError('step-unavailable', {
    what: `step ${step}`,
    why: `this version of kubeception cannot perform it yet: it needs ${needs}`,
    fix: 'run the steps that exist with --only (see `kubeception plan bootstrap`), or upgrade kubeception',
  });
}
