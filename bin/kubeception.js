#!/usr/bin/env node
// Node entry point: registers tsx so the TypeScript sources (and the operator's task and config
// files) load as they are, then runs the CLI. Under Deno, run bin/kubeception.ts instead.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../lib/cli.ts');
process.exitCode = await main(process.argv.slice(2));
