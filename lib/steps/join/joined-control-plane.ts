/**
 * Whether this node joined as a further control-plane node, and the refusal of the commands that
 * must run on the node that bootstrapped the cluster (bootstrap's preflight, `upgrade apply`,
 * `certs renew`). Reads only.
 */
import { InputError } from '../../errors.ts';
import { ETCD_ENV_HEADER } from '../../etcd/config.ts';
import type { Context } from '../../context.ts';

/**
 * Whether this node joined as a further control-plane node (its etcd environment, written by
 * kubeception, says `initial-cluster-state=existing`). Such a node's leaf certificates and
 * kubeconfigs are its own and its config may not be the cluster's: commands that render the cluster's
 * self-hosted objects from this host's config (bootstrap, `upgrade apply`) run on the node that
 * bootstrapped the cluster (`certs renew` here renews this node's files and restarts its own pods).
 */
export async function joinedControlPlane(ctx: Pick<Context, 'files' | 'config'>): Promise<boolean> {
  const env = (await ctx.files.read(ctx.config.distro.paths.etcdEnvironmentFile)) ?? '';
  return env.startsWith(ETCD_ENV_HEADER) && /^ETCD_INITIAL_CLUSTER_STATE="existing"$/m.test(env);
}

/** The refusal of a command that renders the cluster's self-hosted objects, on a joined control-plane node. */
export function joinedControlPlaneError(command: string): InputError {
  return new InputError('joined-control-plane', {
    what: command,
    why: 'this node joined as a further control-plane node: this command would render the cluster\'s self-hosted control plane from this node\'s config',
    fix: `run \`kubeception ${command}\` on the control-plane node that bootstrapped the cluster`,
  });
}
