#!/usr/bin/env node
// Node entry point: registers tsx (ESM and CommonJS hooks) so the TypeScript sources, and the
// operator's task and config files wherever they live, load as they are; then runs the CLI.
// Under Deno, run bin/kubeception.ts instead.
import { register as registerEsm } from 'tsx/esm/api';
import { register as registerCjs } from 'tsx/cjs/api';

registerEsm();
registerCjs();
const { main } = await import('../lib/cli.ts');
process.exitCode = await main(process.argv.slice(2));
