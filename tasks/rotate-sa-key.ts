/**
 * rotate-sa-key: a new service-account signing key on a single control-plane cluster, rolled in so
 * that no token in use stops working. Run as `kubeception run rotate-sa-key` (`plan rotate-sa-key`
 * shows it); each run goes one rotation on from where the files are:
 *
 * - no rotation under way: the new key is trusted beside the old one (kube-apiserver rolled), then
 *   signs (kube-apiserver and kube-controller-manager rolled); the old public key stays trusted.
 * - the new key signs and an old one is still trusted: once the tokens the old key signed have
 *   expired (1 h 5 min after the switch, the kubelet's token lifetime; `--force`: now), it is retired.
 *
 * A killed run is finished by the next one. Copy this file to ./tasks/rotate-sa-key.ts on a site to
 * customise it; nothing runs at import time.
 *
 * preflight → trust-next-key → sign-with-next-key → retire-previous-keys → apiserver-recovery
 */
import { step, task, type Task } from 'kubeception/dsl';
import {
  notDue,
  notStarting,
  refreshRecoveryCopy,
  retirePreviousKeys,
  retiring,
  saRotationPreflight,
  signWithNextKey,
  trustNextKey,
  type SaRotationContext,
} from 'kubeception/steps';

export default task('rotate-sa-key', [
  step('preflight').title('preflight: where the service-account keys stand; one control-plane node').run(saRotationPreflight),
  step('trust-next-key')
    .needs('preflight')
    .title('trust-next-key: a new key (sa-next.key) trusted beside the signing one in sa.pub; kube-apiserver rolled')
    .skipIf(notStarting)
    .timeout(900_000)
    .run(trustNextKey),
  step('sign-with-next-key')
    .needs('trust-next-key')
    .title('sign-with-next-key: sa.key is the new key; kube-apiserver and kube-controller-manager rolled; the old public key still trusted')
    .skipIf(retiring)
    .timeout(900_000)
    .run(signWithNextKey),
  step('retire-previous-keys')
    .needs('sign-with-next-key')
    .title('retire-previous-keys: sa.pub holds the signing key only, once the old tokens have expired; kube-apiserver rolled')
    .skipIf(notDue)
    .timeout(900_000)
    .run(retirePreviousKeys),
  step('apiserver-recovery').needs('retire-previous-keys').title('apiserver-recovery: the last-known-good kube-apiserver copy follows').timeout(180_000).run(refreshRecoveryCopy),
]) satisfies Task<SaRotationContext>;
