/**
 * The join command kubeception prints (`run bootstrap`, `token create --print-join-command`, `certs
 * upload`), parsed the way an operator's shell runs it: `KUBECEPTION_TOKEN=T
 * [KUBECEPTION_CERTIFICATE_KEY=K] npx kubeception run join --url U --ca-cert-hash H [--control-plane]`.
 * The secrets are environment assignments; parsing fails if one of them is a flag (issue 24: every
 * local user can read a command line).
 */
import assert from 'node:assert/strict';

/** A printed join command. */
export interface PrintedJoin {
  /** The environment the command sets: `KUBECEPTION_TOKEN`, and `KUBECEPTION_CERTIFICATE_KEY` for a control-plane join. */
  env: Record<string, string>;
  /** The arguments after `run join`. */
  args: string[];
  /** The bootstrap token (`<id>.<secret>`). */
  token: string;
  /** The certificate key (64 hex digits), for a control-plane join. */
  certificateKey?: string;
}

/**
 * Parses the first line of `text` that holds `kubeception run join`.
 * @throws AssertionError if there is none, if it is not in the form above, or if the token or the
 *   certificate key is given as a flag.
 */
export function printedJoin(text: string): PrintedJoin {
  const line = text.split('\n').find((l) => l.includes('kubeception run join'));
  assert.ok(line, `no join command printed:\n${text.slice(-2000)}`);
  const words = line.trim().split(/\s+/);
  const env: Record<string, string> = {};
  let i = 0;
  for (; i < words.length; i++) {
    const m = /^([A-Z][A-Z0-9_]*)=(.*)$/.exec(words[i]!);
    if (!m) break;
    env[m[1]!] = m[2]!;
  }
  assert.deepEqual(words.slice(i, i + 4), ['npx', 'kubeception', 'run', 'join'], `not a join command: ${line}`);
  const args = words.slice(i + 4);
  assert.ok(!args.some((a) => /^--(token|certificate-key)(=|$)/.test(a)), `a secret on the command line: ${line}`);
  const token = env.KUBECEPTION_TOKEN;
  assert.match(token ?? '', /^[a-z0-9]{6}\.[a-z0-9]{16}$/, `no KUBECEPTION_TOKEN=<token> in: ${line}`);
  const certificateKey = env.KUBECEPTION_CERTIFICATE_KEY;
  if (certificateKey !== undefined) assert.match(certificateKey, /^[0-9a-f]{64}$/);
  assert.deepEqual(Object.keys(env).filter((k) => k !== 'KUBECEPTION_TOKEN' && k !== 'KUBECEPTION_CERTIFICATE_KEY'), [], `unexpected assignments in: ${line}`);
  return { env, args, token: token!, ...(certificateKey !== undefined && { certificateKey }) };
}

/** The value after flag `name` in `args`. */
export const argOf = (args: readonly string[], name: string): string | undefined => {
  const i = args.indexOf(name);
  return i < 0 ? undefined : args[i + 1];
};

/** `args` with the value after flag `name` replaced. */
export const withArg = (args: readonly string[], name: string, value: string): string[] => args.map((a, i) => (args[i - 1] === name ? value : a));
