// The CPU backend's copies keep every bit, on both engines: Bun's JavaScriptCore canonicalizes
// NaN payloads and Node's V8 quiets signalling NaNs whenever a float passes through a JS
// number, so toRawArray, contiguous, cat and sliceSet must move bits, not values. Checked on
// NaNs with payloads (quiet, negative, signalling), -0, subnormals, infinities and i64 beyond
// 2^53, through dense and strided (transposed, narrowed) views.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor, type DType } from '../../src/index.ts';
import type { HostArray } from '../../src/core/dtype.ts';

const F32 = new Uint32Array([0x7fc00001, 0xffc00002, 0x7f800001, 0x80000000, 0x00000001, 0x7f800000]);
const F64 = new BigUint64Array([
  0x7ff8000000000001n,
  0xfff8000000000002n,
  0x7ff0000000000001n,
  0x8000000000000000n,
  1n,
  0x7ff0000000000000n,
]);
const I64 = new BigInt64Array([2n ** 62n + 1n, -(2n ** 60n) - 3n, 1n, -1n, 2n ** 53n + 1n, 0n]);

/** each element's bits as a hex string (8-byte elements as one 16-digit string) */
function bits(a: HostArray): string[] {
  const w = a.BYTES_PER_ELEMENT;
  const u = new Uint32Array(a.buffer, a.byteOffset, (a.length * w) / 4);
  return Array.from({ length: a.length }, (_, i) =>
    w === 8
      ? u[2 * i + 1]!.toString(16).padStart(8, '0') + u[2 * i]!.toString(16).padStart(8, '0')
      : u[i]!.toString(16).padStart(8, '0'),
  );
}

/** six elements of each dtype with the awkward bit patterns, and their bits, read without the library */
const CASES: { dtype: DType; make: () => Tensor; bits: string[] }[] = [
  {
    dtype: 'f32',
    make: () => Tensor.from(new Float32Array(F32.slice().buffer)),
    bits: bits(new Float32Array(F32.slice().buffer)),
  },
  {
    dtype: 'f64',
    make: () => Tensor.from(new Float64Array(F64.slice().buffer)),
    bits: bits(new Float64Array(F64.slice().buffer)),
  },
  { dtype: 'i64', make: () => Tensor.from(I64.slice()), bits: bits(I64) },
];

for (const { dtype, make, bits: src } of CASES) {
  const want = (order: number[]) => order.map((i) => src[i]!);
  test(`${dtype}: toRawArray of dense and strided views keeps every bit`, async () => {
    const t = make();
    const all = [0, 1, 2, 3, 4, 5];
    assert.equal(bits(await t.toRawArray()), want(all), 'dense');
    const m = t.reshape([2, 3]);
    assert.equal(bits(await m.T.toRawArray()), want([0, 3, 1, 4, 2, 5]), 'transposed');
    assert.equal(bits(await m.narrow(1, 1, 2).toRawArray()), want([1, 2, 4, 5]), 'narrowed');
    assert.equal(bits(await t.narrow(0, 2, 3).toRawArray()), want([2, 3, 4]), 'at an offset');
  });

  test(`${dtype}: contiguous, cat and sliceSet keep every bit`, async () => {
    const t = make();
    const m = t.reshape([2, 3]);
    assert.equal(bits(await m.T.contiguous().toRawArray()), want([0, 3, 1, 4, 2, 5]), 'contiguous of a transpose');
    assert.equal(bits(await Tensor.cat([m.T, m.T], 0).toRawArray()), want([0, 3, 1, 4, 2, 5, 0, 3, 1, 4, 2, 5]), 'cat');
    const z = Tensor.zeros([3, 2], { dtype });
    z.sliceSet(m.T.narrow(0, 1, 2), 0, 1);
    const zero = bits(await Tensor.zeros([1], { dtype }).toRawArray())[0]!;
    assert.equal(bits(await z.toRawArray()), [zero, zero, ...want([1, 4, 2, 5])], 'sliceSet');
  });
}

test.run();
