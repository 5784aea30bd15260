/**
 * `npm run bench -- <name>`: runs bench/<name>.ts (pki, cli, bootstrap, join, upgrade, snapshot, scale). Each benchmark prints
 * kubeception's numbers next to a peer run in the same script, as a ratio.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const name = process.argv[2];
const file = name && join(dirname(fileURLToPath(import.meta.url)), `${name}.ts`);
if (!name || !/^[a-z-]+$/.test(name) || !existsSync(file!)) {
  console.error('usage: npm run bench -- <pki|cli|bootstrap|join|upgrade|snapshot|scale> [args]');
  process.exit(2);
}
// The benchmark sees itself as the main module: argv[1] is its file, argv[2…] its own arguments.
process.argv.splice(1, 2, file!);
await import(pathToFileURL(file!).href);
