/** The CLI's output streams (lib/cli.ts and the command modules under lib/commands/ write to them). */

/** Streams for output; tests pass their own. */
export interface CliIO {
  stdout: (s: string) => void;
  stderr: (s: string) => void;
  cwd: string;
  isTTY: boolean;
  /** True once stdout's reader went away (`| head`): the run goes on, the summary goes to stderr. */
  stdoutClosed?: () => boolean;
}
