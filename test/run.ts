// Runs every test/**/*.test.ts (or those under the folders named on the command line), each in
// its own process (a crash or a leaked handle stays in its file), two at a time, and prints
// uvu's totals summed: the last line is `N passed, N failed[, N skipped]`.
import { spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { cpus } from 'node:os';

const root = new URL('.', import.meta.url).pathname;
const folders = process.argv.slice(2).length ? process.argv.slice(2) : ['cpu', 'abi', 'gpu'];

function find(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir)) {
    const p = join(dir, e);
    if (statSync(p).isDirectory()) out.push(...find(p));
    else if (e.endsWith('.test.ts')) out.push(p);
  }
  return out.sort();
}

interface Result { file: string; passed: number; failed: number; skipped: number; code: number | null; out: string }

function runFile(file: string): Promise<Result> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--expose-gc', file], { stdio: ['ignore', 'pipe', 'pipe'], env: process.env });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('close', (code) => {
      // uvu prints: Total: N / Passed: N / Skipped: N (ANSI colours stripped first)
      // eslint-disable-next-line no-control-regex
      const plain = out.replace(/\x1b\[[0-9;]*m/g, '');
      const num = (label: string) => [...plain.matchAll(new RegExp(`${label}:\\s+(\\d+)`, 'g'))].reduce((a, m) => a + Number(m[1]), 0);
      const total = num('Total'), passed = num('Passed'), skipped = num('Skipped');
      let failed = Math.max(0, total - passed); // uvu counts skipped tests outside Total
      if (code !== 0 && failed === 0) failed = 1; // crashed before or after uvu's summary
      resolve({ file, passed, failed, skipped, code, out });
    });
  });
}

const files = folders.flatMap((f) => { try { return find(join(root, f)); } catch { return []; } });
const jobs = Math.max(1, Math.min(Number(process.env.TEST_JOBS) || 2, cpus().length));
const results: Result[] = [];
let next = 0;
await Promise.all(Array.from({ length: jobs }, async () => {
  while (next < files.length) {
    const r = await runFile(files[next++]!);
    results.push(r);
    const tag = r.failed ? 'FAIL' : 'ok  ';
    process.stdout.write(`${tag} ${relative(root, r.file).padEnd(40)} ${r.passed} passed, ${r.failed} failed, ${r.skipped} skipped\n`);
    if (r.failed || process.env.TEST_VERBOSE) process.stdout.write(r.out.split('\n').map((l) => '     ' + l).join('\n') + '\n');
  }
}));
const sum = (k: 'passed' | 'failed' | 'skipped') => results.reduce((a, r) => a + r[k], 0);
const skipped = sum('skipped');
console.log(`${sum('passed')} passed, ${sum('failed')} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exitCode = sum('failed') > 0 || files.length === 0 ? 1 : 0;
