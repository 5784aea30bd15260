/**
 * The site directory: where an operator's `tasks/` and `distros/` are looked up. A leaf module, so the
 * config loader and the task loader share it.
 */
import { dirname, resolve } from 'node:path';

/** The site directory whose `tasks/` and `distros/` are searched: the directory of `configFile` (`--config`) if given, else `cwd`. */
export const siteDir = (cwd: string, configFile?: string): string => (configFile === undefined ? cwd : dirname(resolve(cwd, configFile)));
