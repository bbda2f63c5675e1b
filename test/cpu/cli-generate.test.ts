// The `generate` command's edges: --version; errors name the flag typed (--max-tokens, not
// maxTokens); a Hub id says how to get a folder; without a tokenizer the stream is the ids;
// sampling flags without --temperature sample (--temperature 0 says they do nothing);
// `| head -c 5` stops generation and exits quietly with status 0.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { FOLDERS, writeModelFolder } from '../fixtures/model-folders.ts';

const root = mkdtempSync(join(tmpdir(), 'rocm-tensor-cli-generate-'));
test.after(() => rmSync(root, { recursive: true, force: true }));

const CLI = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));
const bun = typeof (process.versions as Record<string, string | undefined>).bun === 'string';
const argv = (args: string[]) => (bun ? [CLI, ...args] : ['--import', 'tsx', CLI, ...args]);
function cli(args: string[]) {
  return spawnSync(process.execPath, argv(args), {
    encoding: 'utf8',
    env: { ...process.env, ROCM_TENSOR_DEVICE: 'cpu' },
  });
}
const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

test('--version prints the package version', () => {
  const r = cli(['--version']);
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  assert.is(r.status, 0, r.stderr);
  assert.is(r.stdout.trim(), pkg.version);
});

test('errors name the flags typed, before the model is loaded', async () => {
  const { dir } = await writeModelFolder(root, FOLDERS[3]!);
  const cases: [string[], string][] = [
    [['--max-tokens', '0'], "--max-tokens must be a positive integer, got '0'"],
    [['--top-k', '-1'], '--top-k must be an integer >= 0'],
    [['--top-p', '1.5'], '--top-p must be in (0, 1]'],
    [['--temperature', '-2'], '--temperature must be a finite number >= 0'],
    [['--repetition-penalty', '0'], '--repetition-penalty must be a finite number > 0'],
    [['--presence-penalty', 'x'], "--presence-penalty must be a number, got 'x'"],
    [['--ids', '1,99999'], '--ids: token id 99999 is outside'],
  ];
  for (const [flags, want] of cases) {
    const r = cli(['generate', dir, '--ids', '1,2', '--device', 'cpu', ...flags]);
    assert.ok(r.status !== 0 && r.stderr.includes(want), `${flags.join(' ')}: ${r.stderr}`);
    assert.not.ok(/maxTokens|topK|topP|repetitionPenalty/.test(r.stderr), r.stderr);
  }
});

test('a Hub id for the model folder: not downloaded, and how to get the folder', () => {
  const r = cli(['generate', 'meta-llama/Llama-3.2-1B', '--prompt', 'hi', '--device', 'cpu']);
  assert.ok(r.status !== 0, r.stderr);
  assert.ok(r.stderr.includes('models are not downloaded'), r.stderr);
  assert.ok(r.stderr.includes('huggingface-cli download meta-llama/Llama-3.2-1B --local-dir Llama-3.2-1B'), r.stderr);
  assert.not.ok(r.stderr.includes('ENOENT'), r.stderr);
});

test('without a tokenizer the stream is the new ids, as --ids takes them', async () => {
  const { dir } = await writeModelFolder(root, { ...FOLDERS[3]!, name: 'no-tokenizer' });
  rmSync(join(dir, 'tokenizer.json'));
  const r = cli(['generate', dir, '--ids', '1,2,3', '--max-tokens', '5', '--device', 'cpu']);
  assert.is(r.status, 0, r.stderr);
  const line = r.stdout.trim();
  assert.ok(/^\d+(,\d+)*$/.test(line), `ids on stdout: ${JSON.stringify(r.stdout)}`);
  const json = cli(['generate', dir, '--ids', '1,2,3', '--max-tokens', '5', '--device', 'cpu', '--json']);
  assert.is(json.status, 0, json.stderr);
  assert.is(line, (JSON.parse(json.stdout) as { ids: number[] }).ids.join(','));
});

test('sampling flags: without --temperature they sample; with --temperature 0 a warning says they do nothing', async () => {
  const { dir } = await writeModelFolder(root, FOLDERS[0]!);
  const ids = (args: string[]) => {
    const r = cli(['generate', dir, '--ids', '1,40,41', '--max-tokens', '12', '--device', 'cpu', '--json', ...args]);
    assert.is(r.status, 0, r.stderr);
    return { ids: (JSON.parse(r.stdout) as { ids: number[] }).ids, stderr: r.stderr };
  };
  const greedy = ids([]).ids;
  assert.not.equal(ids(['--seed', '1']).ids, greedy, '--seed alone samples');
  const zero = ids(['--temperature', '0', '--top-k', '5', '--seed', '1']);
  assert.equal(zero.ids, greedy);
  assert.ok(zero.stderr.includes('--temperature 0 is greedy: --top-k, --seed have no effect'), zero.stderr);
  const help = cli(['generate', '--help']).stdout;
  assert.ok(help.includes('--top-k, --top-p or --seed without --temperature turn sampling on'), help);
});

test('stdout closed early (| head -c 5): generation stops, exit status 0, nothing on stderr', async () => {
  const { dir } = await writeModelFolder(root, FOLDERS[0]!);
  const cmd = [
    process.execPath,
    ...argv(['generate', dir, '--ids', '1,2,3', '--max-tokens', '3000', '--device', 'cpu']),
  ]
    .map(quote)
    .join(' ');
  const err = join(root, 'stderr.txt');
  const t0 = performance.now();
  const r = spawnSync('bash', ['-c', `set -o pipefail; ${cmd} 2>${quote(err)} | head -c 5 >/dev/null`], {
    encoding: 'utf8',
    env: { ...process.env, ROCM_TENSOR_DEVICE: 'cpu' },
  });
  const seconds = (performance.now() - t0) / 1e3;
  const stderr = readFileSync(err, 'utf8');
  assert.is(r.status, 0, `exit status ${r.status}: ${stderr}`);
  assert.is(stderr, '', 'no stack trace, no summary');
  // 3000 tokens take more than 20 s on the CPU here; stopping at once takes the start-up alone
  assert.ok(seconds < 12, `stopped early: ${seconds.toFixed(1)} s`);
});

test.run();
