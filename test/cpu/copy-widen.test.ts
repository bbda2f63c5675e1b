// widenedCopy (src/backends/gpu/rows.ts): a strided copy recast in wider units moves exactly the
// bytes the element-wise copy moves (every destination byte from the same source byte), for
// transposes of rows, narrowed views and odd sizes; it refuses what no wider unit divides.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { widenedCopy } from '../../src/backends/gpu/rows.ts';
import { asDevicePtr } from '../../src/runtime/gpu.ts';
import { contiguousStrides } from '../../src/core/layout.ts';

/** dst byte -> src byte of a strided copy of `unit`-byte units (shape outermost first) */
function byteMap(
  shape: readonly number[],
  d: readonly number[],
  s: readonly number[],
  off: [number, number],
  unit: number,
) {
  const m = new Map<number, number>();
  const n = shape.reduce((a, b) => a * b, 1);
  for (let i = 0; i < n; i++) {
    let r = i,
      dy = off[0],
      sx = off[1];
    for (let k = shape.length - 1; k >= 0; k--) {
      const c = r % shape[k]!;
      r = Math.floor(r / shape[k]!);
      dy += c * d[k]!;
      sx += c * s[k]!;
    }
    for (let b = 0; b < unit; b++) m.set(dy * unit + b, sx * unit + b);
  }
  return m;
}

const P = asDevicePtr(0x10000n);

test('a [b, h, t, d] <-> [b, t, h, d] copy of 2-byte elements moves 16 bytes a unit, the same bytes', () => {
  const [b, h, t, d] = [2, 3, 5, 16];
  const shape = [b, h, t, d];
  const dst = contiguousStrides(shape);
  // src: the [b, t, 3, h, d] projection's first part, viewed as [b, h, t, d]
  const src = [t * 3 * h * d, d, 3 * h * d, 1];
  const w = widenedCopy(shape, dst, src, [0, 0], 2, [P, P])!;
  assert.ok(w, 'widened');
  assert.is(w.unit, 16);
  assert.equal(w.shape.at(-1), d / 8);
  assert.equal(byteMap(w.shape, w.dStrides, w.sStrides, [w.dOff, w.sOff], 16), byteMap(shape, dst, src, [0, 0], 2));
});

test('offsets, narrowed rows and element widths pick the widest unit dividing them all', () => {
  const cases: [number[], number[], number[], [number, number], number, number][] = [
    // shape, dst strides, src strides, offsets, element bytes, expected unit
    [[4, 3, 6], [18, 6, 1], [6, 24, 1], [0, 12], 2, 4], // src offset 12 elements: 24 bytes, 8 divides; inner 6 x 2 = 12 bytes: 4
    [[4, 3, 8], [24, 8, 1], [8, 32, 1], [0, 2], 2, 4], // offset 2 elements = 4 bytes
    [[4, 3, 8], [24, 8, 1], [8, 32, 1], [0, 1], 2, 0], // offset of one element: no wider unit
    [[5, 2, 4], [8, 4, 1], [4, 20, 1], [0, 0], 4, 16],
    [[5, 2, 2], [4, 2, 1], [2, 10, 1], [0, 0], 4, 8],
    [[5, 2, 4], [8, 4, 1], [4, 20, 1], [0, 0], 8, 16],
    [[5, 2, 3], [6, 3, 1], [3, 15, 1], [0, 0], 8, 0], // 8-byte elements, rows of 3: nothing wider
    [[5, 2, 4], [8, 4, 1], [4, 20, 1], [0, 0], 16, 0], // already 16 bytes: nothing wider
    [[3, 7], [1, 3], [7, 1], [0, 0], 2, 0], // a true transpose: inner dims differ
  ];
  for (const [shape, d, s, off, eb, unit] of cases) {
    const w = widenedCopy(shape, d, s, off, eb, [P, P]);
    if (!unit) {
      assert.is(w, null, JSON.stringify({ shape, d, s, off, eb }));
      continue;
    }
    assert.ok(w, JSON.stringify({ shape, d, s, off, eb }));
    assert.is(w.unit, unit, JSON.stringify({ shape, d, s, off, eb }));
    assert.equal(byteMap(w.shape, w.dStrides, w.sStrides, [w.dOff, w.sOff], w.unit), byteMap(shape, d, s, off, eb));
  }
});

test('a misaligned base address keeps the element width', () => {
  const shape = [2, 3, 8];
  assert.is(widenedCopy(shape, [24, 8, 1], [8, 16, 1], [0, 0], 2, [P, asDevicePtr(0x10002n)]), null);
  assert.is(widenedCopy(shape, [24, 8, 1], [8, 16, 1], [0, 0], 2, [P, asDevicePtr(0x10004n)])!.unit, 4);
});

test.run();
