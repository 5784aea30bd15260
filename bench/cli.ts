/**
 * CLI start-up: `kubeception --help`, `plan bootstrap --order-only` and two failing commands, each as a fresh
 * `node bin/kubeception.js …` process, next to `node -e 1` (the floor: Node itself) in the same
 * script. Runs are interleaved; prints the median wall time and the median CPU time (user + system
 * of the child, from bash's `times`) and their ratios to `node -e 1`. CPU time is the figure that
 * does not depend on what else the machine is doing. Asserts nothing about time.
 *
 * Runs in the package directory (its own config and task file, as `npx kubeception` from a
 * clone). Builds dist/ first if it is stale (`npm run build`); the bin then uses it.
 *
 * Usage: `npm run bench -- cli [runs]` (default 9).
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT } from '../test/bed/bed.ts';

const BIN = join(REPO_ROOT, 'bin', 'kubeception.js');
const CASES: [string, string[]][] = [
  ['node -e 1', ['-e', '1']],
  ['kubeception --help', [BIN, '--help']],
  ['kubeception plan bootstrap --order-only', [BIN, 'plan', 'bootstrap', '--order-only']],
  ['kubeception frobnicate (exit 2)', [BIN, 'frobnicate']],
  ['kubeception run bootstrap --config /nonexistent.ts (exit 2)', [BIN, 'run', 'bootstrap', '--config', '/nonexistent.ts']],
];

const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** One run: wall ms and child CPU ms (bash `times`, second line: children's user and system). */
function once(args: string[]): { wall: number; cpu: number } {
  const script = `s=$(date +%s%N); ${q(process.execPath)} ${args.map(q).join(' ')} >/dev/null 2>&1; e=$(date +%s%N); echo $(( (e - s) / 1000 )); times`;
  const out = execFileSync('bash', ['-c', script], { cwd: REPO_ROOT, encoding: 'utf8' }).trim().split('\n');
  const secs = (t: string) => { const m = /(\d+)m([\d.]+)s/.exec(t)!; return Number(m[1]) * 60 + Number(m[2]); };
  const [user, sys] = out[2]!.trim().split(/\s+/).map(secs);
  return { wall: Number(out[0]) / 1000, cpu: (user! + sys!) * 1000 };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const runs = Number(process.argv[2] ?? 9) || 9;
execFileSync(process.execPath, [join(REPO_ROOT, 'scripts', 'build.mjs')], { cwd: REPO_ROOT, stdio: 'inherit' });
for (const [, args] of CASES) once(args); // warm the page cache
const results = CASES.map(() => ({ wall: [] as number[], cpu: [] as number[] }));
for (let i = 0; i < runs; i++)
  CASES.forEach(([, args], j) => {
    const r = once(args);
    results[j]!.wall.push(r.wall);
    results[j]!.cpu.push(r.cpu);
  });
const base = { wall: median(results[0]!.wall), cpu: median(results[0]!.cpu) };
console.log(`CLI start-up, ${runs} runs each (median), one fresh process per run`);
console.log(`  ${'command'.padEnd(62)} ${'wall'.padStart(8)} ${'ratio'.padStart(6)} ${'CPU'.padStart(8)} ${'ratio'.padStart(6)}`);
CASES.forEach(([name], j) => {
  const w = median(results[j]!.wall);
  const c = median(results[j]!.cpu);
  console.log(`  ${name.padEnd(62)} ${`${w.toFixed(0)} ms`.padStart(8)} ${(w / base.wall).toFixed(2).padStart(6)} ${`${c.toFixed(0)} ms`.padStart(8)} ${(c / base.cpu).toFixed(2).padStart(6)}`);
});
console.log('  (ratio = to `node -e 1` in this run; CPU = user + system time of the process)');
