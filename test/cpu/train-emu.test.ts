// The host emulation of the training kernels (test/emu/train-emu.cpp): softmax-grad.hip,
// norm-grad.hip, cross-entropy.hip, optim.hip and swiglu.hip compiled for the host through their HIP path (a
// block's threads as fibers, real barriers and shuffles) and run at wave sizes 64 and 32 against
// double-precision references. A missing g++ fails here, loudly.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { expectOk, runEmulator } from './emu-run.ts';

test('the training kernels match double-precision references at wave 64 and 32 (test/emu/train-emu.cpp)', () => {
  const out = runEmulator('train-emu', { std: 'c++20' });
  for (const w of [64, 32]) {
    for (const d of ['f32', 'f64', 'f16', 'bf16'])
      for (const k of ['softmaxgrad', 'normgrad', 'xent', 'swiglu'])
        expectOk(out, `${k} ${d} wave ${w}$`, `${k} ${d} at wave ${w}`);
    for (const pair of ['f32_f32', 'f64_f64', 'f16_f16', 'bf16_bf16', 'f16_f32 master', 'bf16_f32 master'])
      expectOk(out, `optim ${pair} wave ${w}$`, `optim ${pair} at wave ${w}`);
  }
  assert.match(out, /^ok: 0 mismatches/m);
});

test.run();
