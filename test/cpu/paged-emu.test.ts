// The paged-attention kernels run as written on the host emulator against double-precision
// references of paged attention: shuffled block tables (u32 and i64), block sizes 16, 5 and 1,
// prefill chunks and decodes mixed, windows, grouped heads, a bad block id recorded and a NaN key
// propagated.
// - paged-attention.hip (paged_attn, FMA math, no arch-specific path) with attention.hip's
//   attn_merge, test/emu/paged-emu.cpp: f32, f16 and bf16 at wave 64 (gfx9) and wave 32 (gfx10
//   to gfx12, NVIDIA), keys split and merged; built with g++.
// - paged-prefill.hip (paged_fwd, flash.hip's forward on the matrix cores), test/emu/paged-prefill-
//   emu.cpp: f16 and bf16 once per AMD code path, gfx942 and gfx90a (MFMA, wave64), gfx1100 and
//   gfx1200 (WMMA, wave32), gfx1030 (FMA, wave32), with the instructions in the layouts of AMD's
//   calculator. Built with clang 21 of the ROCm root, as flash-emu.test.ts; it skips, saying why,
//   only where that root cannot be entered (not root).
import { test } from 'uvu';
import { expectOk, runEmulator, testOnAmdArchs } from './emu-run.ts';

test('paged_attn and attn_merge match the f64 reference at wave 64 and wave 32 (f32, f16, bf16)', () => {
  const out = runEmulator('paged-emu', { std: 'c++20' });
  for (const wave of [64, 32])
    for (const dt of ['f32', 'f16', 'bf16'])
      expectOk(out, `paged_attn\\+attn_merge ${dt} wave${wave} `, `paged_attn ${dt} at wave ${wave}`);
});

testOnAmdArchs('paged-prefill-emu', {
  title: (arch, wave) => `paged_fwd (${arch} code path, wave ${wave}) matches the f64 reference (f16, bf16)`,
  skipLog: 'paged-emu: paged_fwd skipped',
  skipTitle: 'paged_fwd on the host emulator (needs root)',
  check: (out, arch, wave) => {
    for (const dt of ['f16', 'bf16'])
      expectOk(out, `${arch} paged_fwd ${dt} wave${wave} `, `paged_fwd ${dt} on ${arch}`);
  },
});

test.run();
