// The GPU top-k's launch plan (src/backends/gpu/topk.ts topkSlices) without a GPU: the host's round
// size is the kernel's (hip-src/topk.hip TopkItems; the emulator test/emu/radix-emu.cpp plans with
// the kernel's constant, so a host that disagrees is planned differently from what the emulator
// checks), and the slices of the shapes topk.ts and the GPU tests name, on 132 multiprocessors.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Device } from '../../src/device/device.ts';
import type { DType } from '../../src/core/dtype.ts';
import { RADIX, topkItems } from '../../src/backends/gpu/radix.ts';
import { topkSlices } from '../../src/backends/gpu/topk.ts';
import { REPO_ROOT } from '../runtime.ts';

/** the only part of a device topkSlices reads: its multiprocessors (an H100 / H200 has 132) */
const device = (multiprocessors: number): Device => ({ runtime: { info: { multiprocessors } } }) as unknown as Device;

test("topk: the host plans rounds of the kernel's size (topk.hip TopkItems)", () => {
  const src = readFileSync(join(REPO_ROOT, 'hip-src/topk.hip'), 'utf8');
  const m =
    /struct TopkItems \{ static constexpr int N = sizeof\(typename RKey<T>::R\) == 8 \? (\d+) : (\d+); \};/.exec(src);
  assert.ok(m, 'hip-src/topk.hip: the TopkItems line is not where this test looks for it');
  const [wide, narrow] = [Number(m[1]), Number(m[2])];
  for (const d of ['f64', 'i64'] as const)
    assert.is(topkItems(d), wide, `${d}: host ${topkItems(d)} items a thread, kernel ${wide}`);
  for (const d of ['f32', 'f16', 'bf16', 'u8', 'u32'] as const)
    assert.is(topkItems(d), narrow, `${d}: host ${topkItems(d)} items a thread, kernel ${narrow}`);
});

/** every level's slices until one slice holds a row, as topk.ts selectRows walks them */
function levels(
  mps: number,
  dt: DType,
  rows: number,
  cols: number,
  k: number,
): { slen: number; slices: number; n: number }[] {
  const out: { slen: number; slices: number; n: number }[] = [];
  for (let n = cols; ; ) {
    const { slen, slices } = topkSlices(device(mps), dt, rows, n);
    out.push({ slen, slices, n });
    if (slices === 1) return out;
    n = (slices - 1) * k + Math.min(k, n - (slices - 1) * slen);
  }
}

test('topk: slices of the shapes topk.ts and the GPU tests name (132 multiprocessors)', () => {
  // the benchmark's [64, 128256]: 8 slices a row of 16032, then 64 rows of 400 candidates
  assert.equal(levels(132, 'bf16', 64, 128256, 50), [
    { slen: 16032, slices: 8, n: 128256 },
    { slen: 400, slices: 1, n: 400 },
  ]);
  // one vocabulary row: 32 slices of 4016 (a round each), then 1600 candidates
  assert.equal(levels(132, 'f32', 1, 128256, 50), [
    { slen: 4016, slices: 32, n: 128256 },
    { slen: 1600, slices: 1, n: 1600 },
  ]);
  // rows enough to fill the device: a block a row (slen rounded to 16; the kernel stops at cols)
  assert.equal(levels(132, 'f32', 600, 5000, 20), [{ slen: 5008, slices: 1, n: 5000 }]);
  // no more slices than the row has rounds (64-bit ones of 2048), nor blocks than 4 a multiprocessor
  for (const dt of ['f32', 'f64', 'u8'] as const) {
    const round = RADIX * topkItems(dt);
    for (const [rows, cols] of [
      [1, 128256],
      [2, 300000],
      [4, 1 << 20],
      [2, 3000],
    ] as const) {
      const { slen, slices } = topkSlices(device(132), dt, rows, cols);
      assert.ok(
        slices <= Math.ceil(cols / round),
        `${dt} [${rows}, ${cols}]: ${slices} slices of ${slen}, more than its rounds of ${round}`,
      );
      assert.ok(
        rows * slices <= 132 * 4 || slices === 1,
        `${dt} [${rows}, ${cols}]: ${rows * slices} blocks, more than 4 a multiprocessor`,
      );
      assert.is(slen % 16, 0);
      assert.ok(
        (slices - 1) * slen < cols && slices * slen >= cols,
        `${dt} [${rows}, ${cols}]: ${slices} slices of ${slen}`,
      );
    }
  }
});

test.run();
