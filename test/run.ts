// Runs every test/**/*.test.ts (or those under the folders named on the command line), each in
// its own process (a crash or a leaked handle stays in its file), two at a time, and prints
// uvu's totals summed: the last line is `N passed, N failed[, N skipped]`.
//
//   tsx test/run.ts [cpu abi gpu]           every file under Node
//   bun test/run.ts [cpu abi gpu]           every file under Bun
//   tsx test/run.ts --runtime node,bun ...  every file under each (CI); one summary line for all
//
// The runtime running this script is the default. Bun runs a file as is; Node through tsx with
// --expose-gc (test/runtime.ts). A file never runs twice at once: the same file under two
// runtimes would share fixed paths (dist/ of the package test, files in the ROCm root).
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { cpus } from 'node:os';
import { isRuntimeName, runtime, runtimePath, tsCommand, REPO_ROOT, type RuntimeName } from './runtime.ts';

const root = new URL('.', import.meta.url).pathname;

function parseArgs(argv: readonly string[]): { runtimes: RuntimeName[]; folders: string[] } {
  let runtimes: RuntimeName[] = [runtime];
  const folders: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const m = /^--runtimes?(?:=(.*))?$/.exec(a);
    if (!m) {
      folders.push(a);
      continue;
    }
    const list = (m[1] ?? argv[++i] ?? '').split(',').filter(Boolean);
    const bad = list.filter((r) => !isRuntimeName(r));
    if (!list.length || bad.length)
      throw new Error(`test/run.ts: --runtime takes node, bun or node,bun (got '${list.join(',')}')`);
    runtimes = [...new Set(list)] as RuntimeName[];
  }
  return { runtimes, folders: folders.length ? folders : ['cpu', 'abi', 'gpu'] };
}

function find(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir)) {
    const p = join(dir, e);
    if (statSync(p).isDirectory()) out.push(...find(p));
    else if (e.endsWith('.test.ts')) out.push(p);
  }
  return out.sort();
}

interface Job {
  file: string;
  rt: RuntimeName;
}
interface Result extends Job {
  passed: number;
  failed: number;
  skipped: number;
  code: number | null;
  out: string;
}

function runFile({ file, rt }: Job): Promise<Result> {
  return new Promise((resolve) => {
    const { cmd, args } = tsCommand(rt, file);
    const child = spawn(cmd, args, { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: process.env });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('error', (e) => (out += `\ncould not start ${cmd}: ${e.message}\n`));
    child.on('close', (code) => {
      // uvu prints: Total: N / Passed: N / Skipped: N (ANSI colours stripped first)
      // eslint-disable-next-line no-control-regex
      const plain = out.replace(/\x1b\[[0-9;]*m/g, '');
      const num = (label: string) =>
        [...plain.matchAll(new RegExp(`${label}:\\s+(\\d+)`, 'g'))].reduce((a, m) => a + Number(m[1]), 0);
      const total = num('Total'),
        passed = num('Passed'),
        skipped = num('Skipped');
      let failed = Math.max(0, total - passed); // uvu counts skipped tests outside Total
      if (code !== 0 && failed === 0) failed = 1; // crashed before or after uvu's summary
      resolve({ file, rt, passed, failed, skipped, code, out });
    });
  });
}

/** one line naming each runtime's executable and version, so a log says what ran */
function describeRuntimes(list: readonly RuntimeName[]): string {
  return list
    .map((rt) => {
      const cmd = runtimePath(rt);
      const v = spawnSync(cmd, ['--version'], { encoding: 'utf8' });
      return `${rt} ${v.status === 0 ? v.stdout.trim() : `(not runnable: ${v.error?.message ?? v.stderr.trim()})`} (${cmd})`;
    })
    .join('; ');
}

const { runtimes, folders } = parseArgs(process.argv.slice(2));
const files = folders.flatMap((f) => {
  try {
    return find(join(root, f));
  } catch {
    return [];
  }
});
// runtime by runtime, so that the same file under two runtimes is rarely due at once
const queue: Job[] = runtimes.flatMap((rt) => files.map((file) => ({ file, rt })));
const multi = runtimes.length > 1;
if (multi) console.log(`runtimes: ${describeRuntimes(runtimes)}`);
const jobs = Math.max(1, Math.min(Number(process.env.TEST_JOBS) || 2, cpus().length));
const results: Result[] = [];
const running = new Set<string>();
const waiting: (() => void)[] = [];

/** the next job whose file is not running now; waits while every remaining one is */
async function take(): Promise<Job | null> {
  for (;;) {
    if (!queue.length) return null;
    const i = queue.findIndex((j) => !running.has(j.file));
    if (i >= 0) return queue.splice(i, 1)[0]!;
    await new Promise<void>((r) => waiting.push(r));
  }
}

await Promise.all(
  Array.from({ length: jobs }, async () => {
    for (let job = await take(); job; job = await take()) {
      running.add(job.file);
      const r = await runFile(job);
      running.delete(job.file);
      for (const w of waiting.splice(0)) w();
      results.push(r);
      const tag = r.failed ? 'FAIL' : 'ok  ';
      const name = (multi ? `${r.rt.padEnd(4)} ` : '') + relative(root, r.file);
      process.stdout.write(`${tag} ${name.padEnd(40)} ${r.passed} passed, ${r.failed} failed, ${r.skipped} skipped\n`);
      if (r.failed || process.env.TEST_VERBOSE)
        process.stdout.write(
          r.out
            .split('\n')
            .map((l) => '     ' + l)
            .join('\n') + '\n',
        );
    }
  }),
);

const sum = (rs: readonly Result[], k: 'passed' | 'failed' | 'skipped') => rs.reduce((a, r) => a + r[k], 0);
const line = (rs: readonly Result[]) => {
  const skipped = sum(rs, 'skipped');
  return `${sum(rs, 'passed')} passed, ${sum(rs, 'failed')} failed${skipped ? `, ${skipped} skipped` : ''}`;
};
if (multi) for (const rt of runtimes) console.log(`${rt}: ${line(results.filter((r) => r.rt === rt))}`);
console.log(line(results));
process.exitCode = sum(results, 'failed') > 0 || files.length === 0 ? 1 : 0;
