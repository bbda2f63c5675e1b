// The host emulation of the radix sort and top-k kernels (test/emu/radix-emu.cpp): hip-src/sort.hip
// and hip-src/topk.hip themselves, compiled with g++ against a stand-in HIP runtime whose GPU
// threads are fibers, run with 32- and 64-lane waves against a stable sort of the values. No
// AMD GPU runs the wave64 paths; this checks their logic (ballots, ranks, scans, the select and
// its levels) on every dtype. A missing g++ fails here, loudly: skipping would pass CI without
// the check ever having run.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { expectOk, runEmulator } from './emu-run.ts';

const DTYPES = ['f32', 'f64', 'f16', 'bf16', 'u8', 'u32', 'i64'];

test('sort.hip and topk.hip match a stable sort on 32- and 64-lane waves (test/emu/radix-emu.cpp)', () => {
  const out = runEmulator('radix-emu', { std: 'c++17', opt: 2, timeoutMs: 240_000 });
  for (const wave of [32, 64]) {
    for (const d of DTYPES) expectOk(out, `${d} +wave${wave}$`, `${d} wave${wave}`);
  }
  assert.match(out, /^ok: 14 groups, 0 mismatches/m);
});

test.run();
