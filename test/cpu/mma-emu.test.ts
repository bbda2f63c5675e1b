// The host emulation of flash.hip's matrix-core layouts (test/emu/mma-emu.cpp): compiled with g++
// into a temporary folder and run. It holds hip-src/mma-layout.h, the kernel's lane and element
// index arithmetic, against models of MFMA (gfx90a/gfx942/gfx950), WMMA (gfx11, gfx12), the gfx1030
// FMA path and NVIDIA's m16n8k16, written from the vendors' layout descriptions: the only check
// the AMD paths get short of an AMD GPU. A missing g++ fails here, loudly: skipping would pass CI
// without the check ever having run.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { expectOk, runEmulator } from './emu-run.ts';

test('mma-layout.h matches the instruction models on every family (test/emu/mma-emu.cpp)', () => {
  const out = runEmulator('mma-emu', { std: 'c++17', hipHost: false, timeoutMs: 120_000 });
  // every family reported, and the summary line says nothing mismatched
  for (const fam of ['mfma', 'wmma11', 'wmma12', 'fma', 'nv']) expectOk(out, `${fam} `, fam);
  assert.match(out, /^ok: 0 mismatches/m);
});

test.run();
