// reduce.hip (sum, mean, min, max, argmin, argmax: the _rows, _strided, _final and _rows32
// kernels) and colreduce.hip (the _cols kernels) run through their HIP path on the host
// emulator (test/emu/reduce-emu.cpp) at wave 64 and 32, against references from the ops'
// definitions: every task mode (a thread, a wave, a block), segmented runs and their fold, a
// transposed view, column tiles, ties and NaN. A missing g++ fails.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { expectOk, runEmulator } from './emu-run.ts';

test('reduce.hip and colreduce.hip match their definitions at wave 64 and 32 (test/emu/reduce-emu.cpp)', () => {
  const out = runEmulator('reduce-emu', { std: 'c++20' });
  for (const d of ['f32', 'f16', 'bf16', 'i64'])
    for (const w of [64, 32]) expectOk(out, `${d} wave ${w}$`, `${d} at wave ${w}`);
  assert.match(out, /^ok: 0 mismatches/m);
});

test.run();
