// Entry point for runtimes that load TypeScript natively: `deno run -A bin/kubeception.ts plan bootstrap`.
import process from 'node:process';
import { main } from '../lib/cli.ts';

process.exitCode = await main(process.argv.slice(2));
