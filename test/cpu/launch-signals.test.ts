// `rocm-tensor launch` passes SIGTERM on to its ranks and ends when they have: a rank that stops
// gracefully on the signal (as `serve` drains its requests) gets to, its output still comes
// through with the rank's prefix, and the job's status is 0.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const CLI = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));
const bun = typeof (process.versions as Record<string, string | undefined>).bun === 'string';

test('SIGTERM reaches every rank once; the job waits for them and exits with 0', async () => {
  const rank = [
    "let n = 0; process.on('SIGTERM', () => { n++; setTimeout(() => { console.log('stopped after ' + n + ' signal(s)'); process.exit(0); }, 300); });",
    "console.log('up'); setInterval(() => {}, 1000);",
  ].join(' ');
  const args = ['launch', '--nproc', '2', '--', process.execPath, '-e', rank];
  const p = spawn(process.execPath, bun ? [CLI, ...args] : ['--import', 'tsx', CLI, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  p.stdout.on('data', (d: Buffer) => {
    out += d.toString();
  });
  p.stderr.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const exited = new Promise<number | null>((r) => p.on('exit', (code) => r(code)));
  for (let i = 0; i < 400 && !(out.includes('[rank 0] up') && out.includes('[rank 1] up')); i++)
    await new Promise((r) => setTimeout(r, 50));
  assert.ok(out.includes('[rank 0] up') && out.includes('[rank 1] up'), out);
  p.kill('SIGTERM');
  assert.is(await exited, 0, out);
  for (const r of [0, 1]) assert.ok(out.includes(`[rank ${r}] stopped after 1 signal(s)`), out);
});

test.run();
