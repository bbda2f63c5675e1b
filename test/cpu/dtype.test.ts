// src/core/dtype.ts: the dtype table and the 16-bit float conversions, checked against bit patterns
// worked out by hand (sign | exponent | mantissa).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  DTYPES,
  DTYPE_INFO,
  isDType,
  dtypeSize,
  isFloatDType,
  f16BitsToNumber,
  numberToF16Bits,
  bf16BitsToNumber,
  numberToBf16Bits,
  bf16round,
  f16round,
  roundTo,
  getElem,
  setElem,
  fromNumbers,
  toNumbers,
} from '../../src/core/dtype.ts';
import { getFloat16 } from '@petamoriken/float16';

const hex = (n: number) => '0x' + n.toString(16).padStart(4, '0');

test('the table', () => {
  assert.equal([...DTYPES], ['f32', 'f64', 'f16', 'bf16', 'u8', 'u32', 'i64']);
  assert.equal(DTYPES.map(dtypeSize), [4, 8, 2, 2, 1, 4, 8]);
  assert.equal(DTYPES.map(isFloatDType), [true, true, true, true, false, false, false]);
  assert.ok(DTYPES.every((d) => DTYPE_INFO[d].isInt === !DTYPE_INFO[d].isFloat));
  assert.ok(isDType('bf16'));
  assert.not.ok(isDType('f8'));
  assert.not.ok(isDType(3));
  assert.ok(new DTYPE_INFO.i64.hostArray(2) instanceof BigInt64Array);
  assert.ok(new DTYPE_INFO.f16.hostArray(2) instanceof Uint16Array);
});

test('f16: exact values', () => {
  const cases: [number, number][] = [
    [1, 0x3c00],
    [-2, 0xc000],
    [0.5, 0x3800],
    [65504, 0x7bff],
    [2 ** -14, 0x0400], // min normal
    [2 ** -24, 0x0001],
    [1023 * 2 ** -24, 0x03ff],
    [0, 0x0000],
    [-0, 0x8000],
    [Infinity, 0x7c00],
    [-Infinity, 0xfc00],
    [1 + 2 ** -10, 0x3c01],
    [3, 0x4200],
  ];
  for (const [x, bits] of cases) {
    assert.is(hex(numberToF16Bits(x)), hex(bits), `${x}`);
    assert.ok(Object.is(f16BitsToNumber(bits), x), `${hex(bits)} -> ${x}`);
  }
});

test('f16: round to nearest even, ties, subnormals, overflow, NaN', () => {
  const cases: [number, number][] = [
    [1 + 2 ** -11, 0x3c00], // tie, even is 0x3c00
    [1 + 3 * 2 ** -11, 0x3c02], // tie, even is 0x3c02
    [1 + 2 ** -11 + 2 ** -40, 0x3c01], // just above the tie
    [1 + 2 ** -11 - 2 ** -40, 0x3c00],
    [0.1, 0x2e66], // 0.1 = 1.6 * 2^-4; 0.6 * 1024 = 614.4 -> 614 = 0x266
    [2 ** -25, 0x0000], // half the smallest subnormal: tie to even (0)
    [3 * 2 ** -25, 0x0002], // 1.5 subnormal units: tie to even (2)
    [2 ** -25 + 2 ** -40, 0x0001],
    [65519, 0x7bff], // below the tie with 65536
    [65520, 0x7c00], // the tie: even is the inf pattern
    [1e6, 0x7c00],
    [-1e6, 0xfc00],
    [2049, 0x6800],
    [2051, 0x6802], // 2048 = 0x6800, steps of 2 there
  ];
  for (const [x, bits] of cases) assert.is(hex(numberToF16Bits(x)), hex(bits), `${x}`);
  assert.is(hex(numberToF16Bits(NaN)), '0x7e00');
  const inf = new Float64Array([Infinity]);
  assert.is(hex(numberToF16Bits(inf[0]! - inf[0]!)), '0x7e00', 'a negative NaN');
  assert.ok(Number.isNaN(f16BitsToNumber(0x7e00)));
  assert.ok(Number.isNaN(f16BitsToNumber(0xfc01)));
  assert.is(f16round(1 + 2 ** -11), 1);
  assert.is(f16round(65520), Infinity);
});

test('bf16: exact values and round to nearest even', () => {
  const exact: [number, number][] = [
    [1, 0x3f80],
    [-2, 0xc000],
    [0.5, 0x3f00],
    [3, 0x4040],
    [2 ** -126, 0x0080],
    [2 ** -133, 0x0001],
    [(2 - 2 ** -7) * 2 ** 127, 0x7f7f],
    [Infinity, 0x7f80],
    [-Infinity, 0xff80],
    [0, 0x0000],
    [-0, 0x8000],
  ];
  for (const [x, bits] of exact) {
    assert.is(hex(numberToBf16Bits(x)), hex(bits), `${x}`);
    assert.ok(Object.is(bf16BitsToNumber(bits), x), `${hex(bits)} -> ${x}`);
  }
  const rounded: [number, number][] = [
    [1 + 2 ** -8, 0x3f80], // tie -> even
    [1 + 3 * 2 ** -8, 0x3f82], // tie -> even
    [1 + 2 ** -8 + 2 ** -30, 0x3f81], // above the tie by less than an f32 ulp: no double rounding
    [1 + 2 ** -8 - 2 ** -30, 0x3f80],
    [0.1, 0x3dcd], // 0.1 = 1.6 * 2^-4; 0.6 * 128 = 76.8 -> 77 = 0x4d
    [2 ** -134, 0x0000],
    [3 * 2 ** -134, 0x0002], // subnormal ties
    [3.4028234663852886e38, 0x7f80], // f32 max rounds up past bf16 max to inf
    [1e39, 0x7f80],
    [-1e39, 0xff80],
    [257, 0x4380],
    [259, 0x4382],
  ];
  for (const [x, bits] of rounded) assert.is(hex(numberToBf16Bits(x)), hex(bits), `${x}`);
  assert.is(hex(numberToBf16Bits(NaN)), '0x7fc0');
  assert.ok(Number.isNaN(bf16BitsToNumber(0x7fc0)));
  assert.is(bf16round(1 + 2 ** -8 + 2 ** -30), 1 + 2 ** -7);
});

test('every f16 and bf16 bit pattern survives a round trip through a number', () => {
  for (let b = 0; b < 0x10000; b++) {
    const f = f16BitsToNumber(b),
      g = bf16BitsToNumber(b);
    if (!Number.isNaN(f)) assert.is(numberToF16Bits(f), b);
    if (!Number.isNaN(g) && numberToBf16Bits(g) !== b) assert.unreachable(`bf16 ${hex(b)}`);
  }
});

test('f16BitsToNumber (a table built from bits) equals the float16 library on every bit pattern', () => {
  const dv = new DataView(new ArrayBuffer(2));
  for (let h = 0; h < 65536; h++) {
    dv.setUint16(0, h, true);
    const want = getFloat16(dv, 0, true);
    if (!Object.is(f16BitsToNumber(h), want))
      assert.unreachable(`${hex(h)}: ${f16BitsToNumber(h)}, the library ${want}`);
  }
});

test('roundTo: floats, and integers truncate toward zero then wrap; NaN -> 0', () => {
  assert.is(roundTo('f64', 0.1), 0.1);
  assert.is(roundTo('f32', 0.1), Math.fround(0.1));
  assert.is(roundTo('f16', 0.1), 0.0999755859375);
  assert.is(roundTo('bf16', 0.1), 0.10009765625);
  assert.equal(
    [256, -1, 3.9, -3.9, NaN, Infinity, 511.5].map((x) => roundTo('u8', x)),
    [0, 255, 3, 253, 0, 0, 255],
  );
  assert.equal(
    [2 ** 32 + 5, -1, 7.99, NaN].map((x) => roundTo('u32', x)),
    [5, 4294967295, 7, 0],
  );
  assert.equal(
    [-2.5, 2 ** 60, NaN, -Infinity].map((x) => roundTo('i64', x)),
    [-2, 2 ** 60, 0, 0],
  );
});

test('getElem / setElem / fromNumbers / toNumbers', () => {
  const h = fromNumbers('f16', [1, 0.1, 65520]);
  assert.ok(h instanceof Uint16Array);
  assert.equal(Array.from(h as Uint16Array), [0x3c00, 0x2e66, 0x7c00]);
  assert.equal(Array.from(toNumbers('f16', h)), [1, 0.0999755859375, Infinity]);
  const b = fromNumbers('i64', [-3.7, 2 ** 53]);
  assert.equal(Array.from(b as BigInt64Array), [-3n, 2n ** 53n]);
  assert.is(getElem('i64', b, 1), 2 ** 53);
  const u = new Uint8Array(2);
  setElem('u8', u, 0, -1);
  setElem('u8', u, 1, 300.7);
  assert.equal(Array.from(u), [255, 44]);
  const bf = new Uint16Array(1);
  setElem('bf16', bf, 0, 1 + 3 * 2 ** -8);
  assert.is(bf[0], 0x3f82);
  assert.is(getElem('bf16', bf, 0), 1 + 2 ** -6);
});

test.run();
