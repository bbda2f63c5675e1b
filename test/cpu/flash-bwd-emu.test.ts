// flash-bwd.hip (flash_bwd_dq, then flash_bwd_dkdv) run as written on the host emulator
// (test/emu/flash-bwd-emu.cpp), once per code path the compiler picks: gfx942 and gfx90a
// (wave64), gfx1100, gfx1200 and gfx1030 (wave32), and NVIDIA's (wave32, FB_HOST_NV), in f32,
// f16 and bf16, through the FMA body and (f16, bf16) the matrix-core bodies (the tiled one up to
// head dim 128, wave pairs on wave32; 16 x 16 tiles at 256): MFMA and WMMA (RDNA3, RDNA4) in the
// layouts of AMD's Matrix Instruction Calculator, mma.sync m16n8k16 and ldmatrix in the PTX
// ISA's layouts. Checked against a double-precision attention gradient: both causal alignments,
// windows, u8 and additive masks (shared and per head), GQA, lengths off the tile and over
// several 64-row blocks, rows that see no key, NaN. Built with clang 21 of the ROCm root, as flash-emu is (the kernels'
// _Float16 conversion); it skips, saying why, only where that root cannot be entered (not root).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { clangRoot, expectOk, runEmulatorInRoot } from './emu-run.ts';

/** the code path's name in the emulator's output, its -D macro, its wave, whether it has matrix cores */
const PATHS: readonly [string, string, number, boolean][] = [
  ['gfx942', '__gfx942__', 64, true],
  ['gfx90a', '__gfx90a__', 64, true],
  ['gfx1100', '__gfx1100__', 32, true],
  ['gfx1200', '__gfx1200__', 32, true],
  // no matrix cores: the kernels take the FMA body whatever they are asked
  ['gfx1030', '__gfx1030__', 32, false],
  ['nvidia', 'FB_HOST_NV', 32, true],
];

const where = clangRoot();
if ('skip' in where) {
  console.log(`flash-bwd-emu: skipped: ${where.skip}`);
  test.skip('flash-bwd.hip on the host emulator (needs root)', () => {});
} else {
  for (const [name, define, wave, mma] of PATHS) {
    test(`flash_bwd_dq and flash_bwd_dkdv (${name} code path, wave ${wave}) match the f64 gradient`, () => {
      const r = runEmulatorInRoot(where.root, 'flash-bwd-emu', { std: 'c++20', defines: [define] });
      assert.is(r.status, 0, `flash-bwd-emu (${name}) reported mismatches:\n${r.out}`);
      for (const dt of ['f32', 'f16', 'bf16'])
        expectOk(r.out, `${name} flash_bwd fma ${dt} wave${wave} `, `flash_bwd (FMA) ${dt} on ${name}`);
      if (mma)
        for (const dt of ['f16', 'bf16'])
          expectOk(r.out, `${name} flash_bwd mma ${dt} wave${wave} `, `flash_bwd (matrix cores) ${dt} on ${name}`);
      console.log(r.out.trim());
    });
  }
}

test.run();
