// The host emulation of the register row kernels (test/emu/rowreg-emu.cpp): softmax.hip's and
// norm.hip's _v<V>, _part and _fin kernels, reduce-rows.hip's and scan.hip's, compiled for the
// host through their HIP path (a
// block's threads as fibers, real barriers and shuffles; test/emu/hip-host) and run at wave
// sizes 64 and 32 against double-precision references: the only run the AMD code gets short of
// an AMD GPU, and a check of the group, row and chunk arithmetic both vendors share. A missing
// g++ fails here, loudly: skipping would pass CI without the check ever having run.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { expectOk, runEmulator } from './emu-run.ts';

test('the register row kernels and cumsum match double-precision references at wave 64 and 32 (test/emu/rowreg-emu.cpp)', () => {
  const out = runEmulator('rowreg-emu', { std: 'c++20' });
  for (const d of ['f32', 'f16', 'bf16'])
    for (const w of [64, 32]) expectOk(out, `${d} +wave ${w}:`, `${d} at wave ${w}`);
  assert.match(out, /^ok: 0 mismatches/m);
});

test.run();
