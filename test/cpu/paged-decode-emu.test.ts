// paged-decode.hip (paged_dec, flash.hip's decode kernel on the matrix cores with its lengths from
// the step's metadata and its key and value tiles loaded through the block table) and attention.hip's
// attn_merge run as written on the host emulator, test/emu/paged-decode-emu.cpp, against a
// double-precision reference of paged attention: decodes and short chunks of mixed context
// lengths, grouped heads 1 to 8, windows, shuffled u32 and i64 tables, block sizes 16, 5 and 1,
// splits 1 to more than a sequence's key blocks, a long chunk left alone and a bad block id
// recorded (its rows NaN); f16 and bf16, head-dim buckets 64 and 128. Once per AMD code path,
// gfx942 and gfx90a (MFMA, wave64), gfx1100 and gfx1200 (WMMA, wave32), gfx1030 (FMA, wave32),
// with the instructions in the layouts of AMD's calculator. Built with clang 21 of the ROCm root,
// as paged-emu.test.ts; it skips, saying why, only where that root cannot be entered (not root).
import { test } from 'uvu';
import { expectOk, testOnAmdArchs } from './emu-run.ts';

testOnAmdArchs('paged-decode-emu', {
  title: (arch, wave) =>
    `paged_dec (${arch} code path, wave ${wave}) with attn_merge matches the f64 reference (f16, bf16)`,
  skipLog: 'paged-decode-emu: skipped',
  skipTitle: 'paged_dec on the host emulator (needs root)',
  check: (out, arch, wave) => {
    for (const dt of ['f16', 'bf16'])
      expectOk(out, `${arch} paged_dec ${dt} wave${wave} `, `paged_dec ${dt} on ${arch}`);
  },
});

test.run();
