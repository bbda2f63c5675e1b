// Every examples/*.ts runs to the end under the runtime running this test (Bun as is, Node
// through tsx), on the best device present, and prints what it promises.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { FOLDERS, writeModelFolder } from '../fixtures/model-folders.ts';
import { writeFashionIdx } from '../fixtures/fashion-idx.ts';
import { join } from 'node:path';
import { REPO_ROOT, runtime, tsCommand } from '../runtime.ts';

const dir = join(REPO_ROOT, 'examples');
const examples = readdirSync(dir)
  .filter((f) => f.endsWith('.ts'))
  .sort();

/** the numbers of the first bracketed list after `label` (Node and Bun wrap long arrays differently) */
function listAfter(out: string, label: string): number[] {
  const i = out.indexOf(label);
  if (i < 0) return [];
  const open = out.indexOf('[', i),
    close = out.indexOf(']', open);
  return (out.slice(open, close).match(/-?\d+(\.\d+)?(e-?\d+)?/g) ?? []).map(Number);
}

/** what each example must print beyond running cleanly */
const CHECKS: Record<string, (out: string) => void> = {
  'basics.ts': (out) => {
    assert.match(out, /^device: (cpu|rocm:\d+|cuda:\d+)$/m);
    const sums = listAfter(out, '\nrow sums:');
    assert.is(sums.length, 4, 'four softmax rows');
    for (const s of sums) assert.ok(Math.abs(s - 1) < 1e-5, `a softmax row sums to ${s}`);
    assert.equal(listAfter(out, '\nargmax per row:'), [3, 3, 3]);
  },
  'generate.ts': (out) => {
    const m = /^\[(\d+) tokens on (cpu|rocm:\d+|cuda:\d+)\]$/m.exec(out);
    assert.ok(m && Number(m[1]) >= 1, `a token count line: ${out.slice(-200)}`);
  },
  'train-fashion-mnist.ts': (out) => {
    const epochs = [...out.matchAll(/^epoch (\d+): train loss ([\d.]+), test accuracy ([\d.]+)% /gm)];
    assert.is(epochs.length, 2, out);
    const [first, second] = epochs.map((m) => Number(m[2]));
    assert.ok(
      Number.isFinite(first) && Number.isFinite(second) && second! < first!,
      `the loss falls: ${first} -> ${second}`,
    );
  },
  'train-gpt.ts': (out) => {
    const losses = [...out.matchAll(/^step +\d+ +loss ([\d.]+) /gm)].map((m) => Number(m[1]));
    assert.ok(losses.length >= 5, out);
    // from about ln(256) = 5.5 for bytes, the loss falls
    assert.ok(
      losses.every(Number.isFinite) && losses.at(-1)! < losses[0]! - 0.5,
      `the loss falls: ${losses.join(' ')}`,
    );
    assert.match(out, /^sample:\n/m);
  },
  'tp-mlp.ts': (out) => {
    // f32 and bf16: each split MLP equals the one-device MLP within its tolerance
    const lines = out.split('\n').filter((l) => l.startsWith('tensor parallel over 2 '));
    assert.is(lines.length, 2, out);
    for (const l of lines) assert.match(l, /: match$/);
  },
  'tiny-cnn.ts': (out) => {
    assert.match(out, /^ran on (cpu|rocm:\d+|cuda:\d+) in [\d.]+ ms/m);
    const rows = [0, 1, 2, 3].map((i) => listAfter(out, `\nimage ${i}:`));
    assert.ok(
      rows.every((r) => r.length === 10),
      'ten class probabilities for each of four images',
    );
    for (const r of rows)
      assert.ok(Math.abs(r.reduce((a, b) => a + b, 0) - 1) < 0.01, `class probabilities sum to 1: ${r}`);
  },
};

test('every example has a check here', () => {
  assert.ok(examples.length > 0);
  assert.equal(
    examples.filter((e) => !CHECKS[e]),
    [],
    'examples without an entry in CHECKS',
  );
});

/** command-line arguments an example needs: generate.ts takes a small random model folder */
const ARGS: Record<string, () => Promise<string[]>> = {
  'generate.ts': async () => {
    const root = mkdtempSync(join(tmpdir(), 'rocm-tensor-example-'));
    process.on('exit', () => rmSync(root, { recursive: true, force: true }));
    return [(await writeModelFolder(root, FOLDERS[1]!)).dir, 'Hello'];
  },
  // a small stand-in data set in the real file format, on the CPU (a CNN's training there is slow)
  'train-fashion-mnist.ts': async () => {
    const root = mkdtempSync(join(tmpdir(), 'rocm-tensor-fashion-'));
    process.on('exit', () => rmSync(root, { recursive: true, force: true }));
    writeFashionIdx(root, 48, 12);
    return ['--data', root, '--device', 'cpu', '--epochs', '2', '--batch', '16'];
  },
  // this repository's README as the text, a tiny model, a few steps on the CPU
  'train-gpt.ts': async () => [
    '--text',
    join(REPO_ROOT, 'README.md'),
    '--device',
    'cpu',
    '--steps',
    '40',
    '--batch',
    '8',
    '--seq',
    '48',
    '--layers',
    '1',
    '--dim',
    '32',
    '--heads',
    '2',
    '--sample',
    '40',
    '--lr',
    '1e-2',
  ],
};

for (const file of examples) {
  test(`examples/${file} under ${runtime}`, async () => {
    const { cmd, args } = tsCommand(runtime, join(dir, file));
    const extra = (await ARGS[file]?.()) ?? [];
    const r = spawnSync(cmd, [...args, ...extra], { cwd: REPO_ROOT, encoding: 'utf8', timeout: 120_000 });
    assert.is(r.status, 0, `exit ${r.status ?? r.signal}:\n${r.stdout}\n${r.stderr}`);
    CHECKS[file]?.(r.stdout);
  });
}

test.run();
