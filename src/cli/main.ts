#!/usr/bin/env node
// rocm-tensor's command line: `info` (devices and libraries), `selftest` (every op on a device
// against the CPU reference), `model` (the tiny CNN), `all` (what `npm start` runs), `generate`,
// `serve` (an OpenAI-compatible server), `launch`, `bench`.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import Table from 'cli-table3';
import cliProgress from 'cli-progress';
import { Device } from '../device/device.ts';
import { deviceReport } from './report.ts';
import { runSelftest, type Row } from './selftest.ts';
import { formatSelftest } from './selftest-report.ts';
import { tableStyle, useColour } from './colour.ts';
import { runTinyCnn } from './tiny-cnn.ts';
import { generateCommand, type GenerateCliOptions } from './generate.ts';
import { serveCommand, type ServeCliOptions } from './serve.ts';

/** the version in this package's package.json: the first one above this file (src/cli/ under tsx, dist/ when built) */
function packageVersion(): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'rocm-tensor' && pkg.version) return pkg.version;
    }
    if (dirname(dir) === dir) return 'unknown';
  }
}

function pickDevice(spec: string | undefined): Device {
  return spec ? Device.parse(spec) : Device.best();
}

function printInfo(): void {
  const r = deviceReport();
  console.log('rocm-tensor device report');
  console.log(`  runtime: ${r.runtime}`);
  console.log(`  ROCm devices: ${r.rocm.count}${r.rocm.error ? ` (${r.rocm.error})` : ''}`);
  console.log(`  CUDA devices: ${r.cuda.count}${r.cuda.error ? ` (${r.cuda.error})` : ''}`);
  if (r.devices.length) {
    const t = new Table({
      head: ['device', 'name', 'arch', 'memory GiB', 'CUs/SMs', 'wave', 'runtime', 'driver'],
      style: tableStyle(),
    });
    for (const d of r.devices)
      t.push([d.id, d.name, d.arch, d.memoryGiB, d.multiprocessors, d.warpSize, d.runtime, d.driver]);
    console.log(t.toString());
  }
  for (const l of r.libraries) console.log(`  ${l.name}: ${l.status}`);
  console.log(`  chosen device: ${r.chosen}`);
}

async function selftest(device: Device, filter?: string, all = false): Promise<Row[]> {
  console.log(
    `\nself-test on ${device}${device.isCpu ? ' (reference: the same ops in f64)' : ' (reference: the CPU backend)'}`,
  );
  const bar = process.stdout.isTTY
    ? new cliProgress.SingleBar(
        { format: '  {bar} {value}/{total} {op}', hideCursor: true },
        cliProgress.Presets.shades_classic,
      )
    : null;
  let started = false;
  const rows = await runSelftest(
    device,
    (row, i, total) => {
      if (bar && !started) {
        bar.start(total, 0, { op: '' });
        started = true;
      }
      bar?.update(i, { op: `${row.op} ${row.dtype}` });
    },
    filter ? new RegExp(filter) : undefined,
  );
  bar?.stop();
  console.log(formatSelftest(rows, { all, colour: useColour() }));
  return rows;
}

async function model(device: Device): Promise<void> {
  const r = await runTinyCnn(device);
  console.log(
    `\ntiny CNN forward (conv2d, relu, maxPool2d, matmul, softmax) on ${r.device}: ${r.ms.toFixed(2)} ms for 4 images`,
  );
  if (r.fellBackToCpu) console.log(`  ran on the CPU: ${device} cannot run it yet (${r.reason ?? 'unknown'})`);
  if (r.maxDiffVsCpu !== null) console.log(`  max |p - p_cpu| = ${r.maxDiffVsCpu.toExponential(2)}`);
  r.probs.forEach((p, i) =>
    console.log(`  image ${i}: class ${p.indexOf(Math.max(...p))} (p=${Math.max(...p).toFixed(3)})`),
  );
}

const program = new Command()
  .name('rocm-tensor')
  .description('GPU tensors for Node.js and Bun on AMD ROCm')
  .version(packageVersion(), '-V, --version', 'print the version');
program
  .command('info')
  .description('devices, architectures, memory and libraries found')
  .action(() => printInfo());
program
  .command('selftest')
  .description('every op on a device against the CPU reference')
  .option('-d, --device <spec>', 'cpu, rocm[:N], cuda[:N] (default: best)')
  .option('-f, --filter <regex>', 'only ops matching')
  .option('-a, --all', 'print every row, not only a summary and the failing ones')
  .action(async (o: { device?: string; filter?: string; all?: boolean }) => {
    const rows = await selftest(pickDevice(o.device), o.filter, o.all ?? false);
    if (rows.some((r) => r.status === 'FAIL' || r.status === 'error')) process.exitCode = 1;
  });
program
  .command('model')
  .description('the tiny CNN forward pass')
  .option('-d, --device <spec>')
  .action(async (o: { device?: string }) => model(pickDevice(o.device)));
program
  .command('all', { isDefault: true })
  .description('info, selftest and model on the best device (npm start)')
  .option('-d, --device <spec>')
  .option('-a, --all', 'print every self-test row, not only a summary and the failing ones')
  .action(async (o: { device?: string; all?: boolean }) => {
    printInfo();
    const d = pickDevice(o.device);
    const rows = await selftest(d, undefined, o.all ?? false);
    await model(d);
    if (rows.some((r) => r.status === 'FAIL' || r.status === 'error')) process.exitCode = 1;
  });
program
  .command('generate')
  .description('text from a Hugging Face Llama-family model folder (llama, mistral, qwen2)')
  .argument('<model-dir>', 'folder with config.json, *.safetensors and tokenizer.json')
  .option('--prompt <text>', 'the prompt (through the chat template when the model has one; see --no-chat)')
  .option('--ids <list>', 'the prompt as token ids: 1,2,3')
  .option('--max-tokens <n>', 'new tokens at most', '128')
  .option('--temperature <t>', '0 = greedy (default: generation_config.json, else greedy)')
  .option('--top-k <k>', 'sample from the k most likely tokens (samples even without --temperature, see below)')
  .option('--top-p <p>', 'sample from the smallest set of tokens with this probability mass (likewise)')
  .option('--seed <s>', 'seed of the draws (likewise)')
  .option(
    '--repetition-penalty <r>',
    "divide the logits of tokens already seen (prompt too) by r, as transformers' repetition_penalty (1 = off)",
  )
  .option('--presence-penalty <p>', 'subtract p from the logits of tokens generated so far (0 = off)')
  .option(
    '--frequency-penalty <f>',
    'subtract f times its count from the logit of each token generated so far (0 = off)',
  )
  .option('-d, --device <spec>', 'cpu, rocm[:N], cuda[:N] (default: best)')
  .option('--dtype <dtype>', "bf16, f16 or f32 (default: the checkpoint's on a GPU, f32 on the CPU)")
  .option('--json', 'print one JSON object at the end (ids, text, speeds) instead of streaming')
  .option('--no-chat', 'feed --prompt as raw text, without the chat template')
  .addHelpText(
    'after',
    `
Sampling: --top-k, --top-p or --seed without --temperature turn sampling on, at the temperature of
generation_config.json when it samples, else at 1 (transformers would stay greedy and warn). An
explicit --temperature 0 is greedy, and a warning says the other flags have no effect.
repetition_penalty in generation_config.json applies unless --repetition-penalty says otherwise;
other generation settings it holds that are not implemented are named in a warning.
Without a tokenizer.json the stream is the new token ids (1,2,3), as --ids takes them.
The model folder must be on disk: models are not downloaded (huggingface-cli download ID --local-dir DIR).`,
  )
  .action(async (dir: string, o: GenerateCliOptions) => generateCommand(dir, o));
program
  .command('serve')
  .description('an OpenAI-compatible HTTP server (chat and text completions) over a model folder')
  .argument('<model-dir>', 'folder with config.json, *.safetensors and tokenizer.json')
  .option('--host <host>', 'address to listen on', '127.0.0.1')
  .option('--port <port>', 'port to listen on (0: a free one)', '8000')
  .option('-d, --device <spec>', 'cpu, rocm[:N], cuda[:N] (default: best)')
  .option('--dtype <dtype>', "bf16, f16 or f32 (default: the checkpoint's on a GPU, f32 on the CPU)")
  .option('--max-batch <n>', 'sequences generating at once (default 8)')
  .option('--max-seq-len <n>', "tokens per sequence, prompt and completion (default: the model's, at most 4096)")
  .option('--kv-memory <x>', 'KV cache size: GiB (> 1) or a fraction (<= 1) of the memory free after loading')
  .option('--block-size <n>', 'tokens per KV cache block (default 16)')
  .option('--prefill-chunk <n>', 'prompt tokens computed per step (default 512)')
  .option('--max-queue <n>', 'requests waiting at most; more get 429 (default 64)')
  .option('--request-timeout <s>', 'seconds a request may take (default 600; 0: none)')
  .option('--api-key <key>', 'require Authorization: Bearer KEY on /v1/* (default: none)')
  .option('--served-model-name <name>', "the model's name in the API (default: the folder's name)")
  .option(
    '--no-decode-graphs',
    'run decode-only steps eagerly (default on one GPU: replayed from graphs per batch-size bucket)',
  )
  .action(async (dir: string, o: ServeCliOptions) => serveCommand(dir, o));
program
  .command('launch')
  .description('start N local processes of one job with RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT set')
  .requiredOption('--nproc <n>', 'processes (ranks) to start')
  .option('--port <p>', 'MASTER_PORT (default: a free port)', '0')
  .option('--addr <host>', 'MASTER_ADDR', '127.0.0.1')
  .argument('<command...>', 'the command of each rank (put it after --), e.g. -- node train.js')
  .action(async (command: string[], o: { nproc: string; port: string; addr: string }) => {
    const { launch } = await import('../distributed/launch.ts');
    process.exitCode = await launch({ nproc: Number(o.nproc), port: Number(o.port), addr: o.addr, command });
  });
program
  .command('bench')
  .description('micro-benchmarks (from a source checkout: npm run bench)')
  .allowUnknownOption(true)
  .action(async () => {
    const { pathToFileURL } = await import('node:url');
    const { existsSync } = await import('node:fs');
    const path = new URL('../../bench/run.ts', import.meta.url);
    if (!existsSync(path)) {
      console.error('bench: the benchmarks ship with the source checkout; run `npm run bench` there');
      process.exitCode = 1;
      return;
    }
    await import(pathToFileURL(path.pathname).href);
  });
try {
  await program.parseAsync(process.argv);
} catch (e) {
  // a user's mistake (a bad flag value, a missing file) reads as one line, not a stack trace
  console.error(`rocm-tensor: ${e instanceof Error ? e.message : String(e)}`);
  process.exitCode = 1;
}
