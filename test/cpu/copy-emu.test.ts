// The host emulation of the copy kernels (test/emu/copy-emu.cpp): copy.hip's strided copy at every
// width (rows transposed, as the host widens them), its tiled transpose
// (hip-src/transpose.h) at every element width and cat_rows, and index-rows.hip's
// index_add_rows and put_rows, compiled for the host through their HIP path (a block's threads as fibers,
// real barriers; test/emu/hip-host) and run at wave sizes 64 and 32 against references written
// from the index formulas, every byte of the outputs checked (poison where nothing is written).
// A missing g++ fails (emu-run.ts).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { expectOk, runEmulator } from './emu-run.ts';

test('strided copies, transpose, cat_rows, index_add_rows and put_rows match their references at wave 64 and 32 (test/emu/copy-emu.cpp)', () => {
  const out = runEmulator('copy-emu', { std: 'c++20' });
  for (const w of [64, 32]) {
    for (const b of [1, 2, 4, 8, 16]) expectOk(out, `copy_strided b${b} wave ${w}:`, `copy_strided b${b} at wave ${w}`);
    for (const b of [1, 2, 4, 8]) expectOk(out, `transpose b${b} wave ${w}:`, `transpose b${b} at wave ${w}`);
    expectOk(out, `cat_rows wave ${w}:`, `cat_rows at wave ${w}`);
    expectOk(out, `index_add_rows wave ${w}:`, `index_add_rows at wave ${w}`);
    expectOk(out, `put_rows wave ${w}:`, `put_rows at wave ${w}`);
  }
  assert.match(out, /^ok: 0 mismatches/m);
});

test.run();
