/** Runs the kubeception CLI in-process and captures its output (for pure CLI tests). */
import { main } from '../../lib/cli.ts';

export async function cli(argv: string[], cwd = process.cwd()) {
  let stdout = '';
  let stderr = '';
  const code = await main(argv, { stdout: (s) => (stdout += s), stderr: (s) => (stderr += s), cwd, isTTY: false });
  return { code, stdout, stderr };
}
