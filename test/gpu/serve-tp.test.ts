// `rocm-tensor launch --nproc 2 -- rocm-tensor serve DIR`: one model split over 2 GPUs behind one
// server, against `rocm-tensor serve DIR` on one GPU. Greedy completions (token-id prompts,
// several at once, streamed and whole, f32) give the same text through both; rank 1 never
// listens; SIGTERM to launch drains rank 0, which stops rank 1, and the job exits with 0. Also
// `bench:serve --nproc 2` end to end on the same folder. Skipped, with the reason, below 2 GPUs
// or without the collectives library.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FOLDERS, writeModelFolder } from '../fixtures/model-folders.ts';
import { REPO_ROOT, runtime, tsCommand } from '../runtime.ts';
import { findGpus } from './multi-gpu.ts';

const label = 'gpu/serve-tp';

interface Running {
  readonly url: string;
  readonly proc: ChildProcess;
  readonly exited: Promise<number | null>;
  output(): string;
}

/** starts a server command and waits until it answers /health */
async function start(cmd: string, args: string[]): Promise<Running> {
  const proc = spawn(cmd, args, { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
  });
  proc.stderr!.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const exited = new Promise<number | null>((r) => proc.on('exit', (code) => r(code)));
  let gone = false;
  void exited.then(() => {
    gone = true;
  });
  for (let i = 0; i < 1200; i++) {
    if (gone) throw new Error(`the server exited before it was ready:\n${out}`);
    const m = /listening on (http:\/\/[^\s/]+)\/v1/.exec(out);
    if (m) {
      const r = await fetch(`${m[1]}/health`).catch(() => null);
      if (r?.status === 200) return { url: m[1]!, proc, exited, output: () => out };
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  proc.kill('SIGKILL');
  throw new Error(`the server was not ready in 120 s:\n${out}`);
}

const PROMPTS = [
  [3, 14, 15, 92, 65, 35, 89, 79, 32, 38, 46, 26, 43, 38, 32, 79, 50, 28],
  [84, 19, 71, 69, 39, 93, 75, 10, 58],
  [20, 97, 49, 44, 59, 23, 7],
  [81, 64, 6, 28, 62, 8, 99, 86, 28, 3, 48, 25, 34],
];
const N = 24;

async function complete(url: string, prompt: number[], stream: boolean): Promise<string> {
  const r = await fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ prompt, max_tokens: N, temperature: 0, ignore_eos: true, stream }),
  });
  assert.is(r.status, 200);
  if (!stream) return ((await r.json()) as { choices: { text: string }[] }).choices[0]!.text;
  let out = '';
  for (const line of (await r.text()).split('\n')) {
    if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
    out += (JSON.parse(line.slice(6)) as { choices: { text: string }[] }).choices[0]?.text ?? '';
  }
  return out;
}

const gpus = findGpus();
const NAMES = [
  'launch --nproc 2 -- serve: greedy text equals one GPU; rank 1 never listens; SIGTERM drains and stops both ranks',
  'bench:serve --nproc 2 --smoke-sized: every load completes over the tensor-parallel server',
];
if (typeof gpus === 'string') {
  console.log(`${label}: skipped, ${gpus}`);
  for (const n of NAMES) test.skip(n, () => {});
  test.run();
} else {
  const dev = gpus[0]!;
  const root = mkdtempSync(join(tmpdir(), 'rocm-tensor-serve-tp-'));
  process.on('exit', () => rmSync(root, { recursive: true, force: true }));
  const cli = (args: string[]) => tsCommand(runtime, join(REPO_ROOT, 'src/cli/main.ts'), args);
  // 4 query heads, 2 key/value heads: one key/value head per rank
  const { dir } = await writeModelFolder(root, FOLDERS[0]!);
  const flags = ['--port', '0', '--dtype', 'f32', '--max-seq-len', '96', '--max-batch', '4'];

  test(NAMES[0]!, async () => {
    const one = cli(['serve', dir, '--device', String(dev), ...flags]);
    const serve = cli(['serve', dir, ...flags]);
    const launched = cli(['launch', '--nproc', '2', '--', serve.cmd, ...serve.args]);
    const single = await start(one.cmd, one.args);
    let tp: Running | null = null;
    try {
      tp = await start(launched.cmd, launched.args);
      const ask = (url: string) => Promise.all(PROMPTS.map((p, i) => complete(url, p, i % 2 === 0)));
      const want = await ask(single.url);
      const got = await ask(tp.url);
      console.log(`${label}: ${JSON.stringify(got[0])}`);
      assert.equal(got, want);
      assert.ok(want.every((t) => t.length > 0));
      // one after the others, when the batch has emptied
      assert.is(await complete(tp.url, PROMPTS[0]!, false), want[0]);
      const out = tp.output();
      assert.ok(/\[rank 0\] \[serve\] listening on/.test(out), out);
      assert.ok(!/\[rank 1\][^\n]*listening/.test(out), `rank 1 must not listen:\n${out}`);
      assert.ok(/\[rank 1\] \[serve\] rank 1 of 2: shard loaded/.test(out), out);
      tp.proc.kill('SIGTERM');
      assert.is(await tp.exited, 0, tp.output());
      assert.ok(/\[rank 0\] \[serve\] stopped/.test(tp.output()), tp.output());
      assert.ok(/\[rank 1\] \[serve\] rank 1: stopped after \d+ steps/.test(tp.output()), tp.output());
    } finally {
      single.proc.kill('SIGTERM');
      await single.exited;
      if (tp && tp.proc.exitCode === null) tp.proc.kill('SIGKILL');
    }
  });

  test(NAMES[1]!, () => {
    const out = join(root, 'bench.json');
    const b = tsCommand(runtime, join(REPO_ROOT, 'bench/serve.ts'), [
      '--model',
      dir,
      '--nproc',
      '2',
      '--dtype',
      'f32',
      '--concurrency',
      '1,4',
      '--rates',
      '20',
      '--requests',
      '6',
      '--prompt-len',
      '8:24',
      '--output-len',
      '4:12',
      '--offline-batch',
      '4',
      '--offline-new',
      '8',
      '--json',
      out,
    ]);
    const r = spawnSync(b.cmd, b.args, { cwd: REPO_ROOT, encoding: 'utf8', timeout: 300_000 });
    assert.is(r.status, 0, `${r.stdout}\n${r.stderr}`);
    const j = JSON.parse(readFileSync(out, 'utf8')) as {
      ranks: number;
      loads: { completed: number; sent: number; failed: number; lengthMismatches: number }[];
    };
    assert.is(j.ranks, 2);
    for (const l of j.loads)
      assert.ok(l.completed === l.sent && l.failed === 0 && l.lengthMismatches === 0, JSON.stringify(l));
  });

  test.run();
}
