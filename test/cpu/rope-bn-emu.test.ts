// rope.hip (the three pair layouts) and batchnorm.hip (inference batch norm, per-channel values
// in the data's dtype or f32) run through their HIP path on the host emulator
// (test/emu/rope-bn-emu.cpp) at wave 64 and 32, against double-precision references from the
// ops' definitions: the grid-stride loops, the 16-byte and element paths, the 2-D grid that
// splits a plane, optional weight and bias. A missing g++ fails here.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { expectOk, runEmulator } from './emu-run.ts';

test('rope.hip and batchnorm.hip match their definitions at wave 64 and 32 (test/emu/rope-bn-emu.cpp)', () => {
  const out = runEmulator('rope-bn-emu', { std: 'c++20' });
  for (const w of [64, 32]) {
    for (const d of ['f32', 'f64', 'f16', 'bf16']) expectOk(out, `rope ${d} wave ${w}$`, `rope ${d} at wave ${w}`);
    for (const k of ['f32_f32', 'f64_f64', 'f16_f16', 'f16_f32', 'bf16_bf16', 'bf16_f32'])
      expectOk(out, `batchnorm_${k} wave ${w}$`, `batchnorm_${k} at wave ${w}`);
  }
  assert.match(out, /^ok: 0 mismatches/m);
});

test.run();
