// gemv-fused.hip (the decode step's fused matrix-vector products: plain, RMS-normalised x,
// SwiGLU pairs, the q/k/v projection with rotary embedding into the caches) run through their
// HIP path on the host emulator (test/emu/gemv-emu.cpp) at wave 64 and 32, against
// double-precision references: the wave reductions, the split of a unit over waves and its
// shared-memory join, the grid-stride units and both load paths. A missing g++ fails here.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { expectOk, runEmulator } from './emu-run.ts';

test('gemv-fused.hip matches double-precision references at wave 64 and 32 (test/emu/gemv-emu.cpp)', () => {
  const out = runEmulator('gemv-emu', { std: 'c++20' });
  for (const d of ['f32', 'f16', 'bf16'])
    for (const w of [64, 32]) expectOk(out, `${d} wave ${w}$`, `${d} at wave ${w}`);
  assert.match(out, /^ok: 0 mismatches/m);
});

test.run();
