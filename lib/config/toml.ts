/** TOML parsing: the one wrapper around `toml`. */
import toml from 'toml';
import { ConfigError } from '../errors.ts';

/**
 * Parses TOML text.
 * @throws ConfigError `config-toml` naming the file, line and column.
 */
export function parseToml(text: string, file: string): unknown {
  try {
    return toml.parse(text);
  } catch (err) {
    const e = err as { line?: number; column?: number; location?: { start?: { line: number; column: number } }; message?: string };
    const pos = e.location?.start ?? (e.line ? { line: e.line, column: e.column ?? 0 } : undefined);
    throw new ConfigError('config-toml', {
      what: `${file}${pos ? `:${pos.line}:${pos.column}` : ''}`,
      why: `not valid TOML: ${e.message ?? err}`,
      fix: 'correct the TOML syntax at that position',
      cause: err,
    });
  }
}
