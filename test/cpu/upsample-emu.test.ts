// The host emulation of upsample.hip's exact-2x kernels (test/emu/upsample-emu.cpp):
// upsample_nearest_x2 and upsample_bilinear_x2 compiled for the host through their HIP path (a
// block's threads as fibers; test/emu/hip-host) and run at wave sizes 64 and 32 against
// references written from the op's definition, and bit for bit against the kernels they stand
// in for, with x and y against guard pages. The only run these kernels get short of a GPU (and
// the AMD paths' only run at all). A missing g++ fails here, loudly: skipping would pass CI
// without the check ever having run.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { expectOk, runEmulator } from './emu-run.ts';

test('the exact-2x upsample kernels match the references and the other kernels bit for bit at wave 64 and 32 (test/emu/upsample-emu.cpp)', () => {
  const out = runEmulator('upsample-emu', { std: 'c++20' });
  for (const w of [64, 32]) {
    for (const d of ['f16', 'f32', 'f64']) expectOk(out, `nearest +${d} +wave ${w}:`, `nearest ${d} at wave ${w}`);
    for (const d of ['f32', 'f16', 'bf16']) expectOk(out, `bilinear +${d} +wave ${w}:`, `bilinear ${d} at wave ${w}`);
  }
  assert.match(out, /^ok: 0 mismatches/m);
});

test.run();
