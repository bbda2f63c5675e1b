// The CPU's WebAssembly random path (src/backends/cpu/random-wasm.ts, wasm/random.wat) against the
// scalar reference (philox.ts, normal.ts, src/core/dtype.ts's rounding), bit for bit: several keys,
// sizes that end inside a block, a group of eight and a chunk, counters across 2^32 blocks, the
// f16/bf16 rounding at every binade's rounding edges, randint's integers against BigInt,
// dropout's products; and the committed module is what scripts/wasm/assemble.ts makes of the
// committed text.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { block, roundKeys } from '../../src/backends/cpu/philox.ts';
import { normalOfWord } from '../../src/backends/cpu/normal.ts';
import {
  dropoutF32,
  eachInteger,
  eachWords,
  floats,
  halfFromF32,
  philoxWords,
} from '../../src/backends/cpu/random-wasm.ts';
import { numberToBf16Bits, numberToF16Bits } from '../../src/core/dtype.ts';
import { WASM_BASE64 } from '../../src/backends/cpu/wasm/random-wasm.ts';
import { assemble, wasmModuleSource, WASM_DIR } from '../../scripts/wasm/assemble.ts';

const KEYS: [number, number][] = [
  [0, 0],
  [5, 0],
  [-1, -1],
  [0x243f6a88, 0x85a308d3 | 0],
];

/** the first difference between a and the scalar reference f(i), or '' */
function firstDiff(a: ArrayLike<number>, f: (i: number) => number): string {
  for (let i = 0; i < a.length; i++) if (!Object.is(a[i], f(i))) return `element ${i}: wasm ${a[i]} reference ${f(i)}`;
  return '';
}

/** scalar words of blocks first.. as a function of the element index */
function scalarWords(k0: number, k1: number, first = 0): (i: number) => number {
  const ks = roundKeys(k0, k1),
    w = new Int32Array(4);
  let have = -1;
  return (i) => {
    const b = first + Math.floor(i / 4);
    if (b !== have) {
      block(b, ks, w);
      have = b;
    }
    return w[i % 4]!;
  };
}

test('words, uniform and normal f32 equal the scalar reference', () => {
  for (const [k0, k1] of KEYS) {
    for (const n of [1, 3, 4, 5, 63, 64, 65, 1000, 262143, 262144 + 17, 1048576 + 5]) {
      const ref = scalarWords(k0, k1);
      assert.is(firstDiff(philoxWords(Math.ceil(n / 4), k0, k1), ref), '', `words n ${n} key ${k0},${k1}`);
      const u = scalarWords(k0, k1),
        z = scalarWords(k0, k1);
      assert.is(
        firstDiff(floats('uniform', n, k0, k1, 'f32'), (i) => Math.fround((u(i) >>> 8) * 2 ** -24)),
        '',
        `uniform n ${n}`,
      );
      assert.is(
        firstDiff(floats('normal', n, k0, k1, 'f32'), (i) => normalOfWord(z(i))),
        '',
        `normal n ${n}`,
      );
    }
  }
});

test('counters past 2^32 blocks: the high counter word carries', () => {
  const first = 2 ** 32 - 8;
  for (const [k0, k1] of KEYS) {
    assert.is(firstDiff(philoxWords(16, k0, k1, first), scalarWords(k0, k1, first)), '');
  }
  assert.throws(() => philoxWords(4, 1, 2, 3), /multiple of 4/);
});

/** f32 values of the given bit patterns */
const f32Of = (bits: readonly number[]): Float32Array => new Float32Array(Uint32Array.from(bits).buffer);

test('f16 and bf16 rounding equals src/core/dtype.ts: every binade at its rounding edges, f16 subnormals, NaN', () => {
  const bits: number[] = [];
  // sign, exponent and the top 6 significand bits, times low 17 bits at f16's (bit 13) and bf16's
  // (bit 16) rounding points: ties, one either side, the kept bit odd and even
  const lows = [
    0, 1, 0xfff, 0x1000, 0x1001, 0x1fff, 0x2000, 0x2001, 0x2fff, 0x3000, 0x3001, 0x7fff, 0x8000, 0x8001, 0xffff,
    0x10000, 0x17fff, 0x18000, 0x18001, 0x1ffff,
  ];
  for (let top = 0; top < 1 << 15; top++) for (const low of lows) bits.push(((top << 17) | low) >>> 0);
  // f16's subnormal steps 2^-24: each midpoint (h + 1/2) 2^-24 and its neighbours, both signs
  const mid = new Uint32Array(new Float32Array(1).buffer);
  for (let h = 0; h <= 0x400; h++) {
    new Float32Array(mid.buffer)[0] = (h + 0.5) * 2 ** -24;
    for (let d = -2; d <= 2; d++) bits.push(mid[0]! + d, (mid[0]! + d + 0x80000000) >>> 0);
  }
  let x = 7;
  for (let i = 0; i < 100000; i++) {
    x = (Math.imul(x, 1103515245) + 12345) | 0;
    bits.push(x >>> 0);
  }
  const v = f32Of(bits),
    h = halfFromF32(v, 'f16'),
    b = halfFromF32(v, 'bf16');
  assert.ok(v.length > 2 * 262144, 'several chunks');
  for (let i = 0; i < v.length; i++) {
    if (h[i] !== numberToF16Bits(v[i]!))
      assert.unreachable(
        `f16 of bits ${bits[i]!.toString(16)}: ${h[i]!.toString(16)}, dtype.ts ${numberToF16Bits(v[i]!).toString(16)}`,
      );
    if (b[i] !== numberToBf16Bits(v[i]!))
      assert.unreachable(
        `bf16 of bits ${bits[i]!.toString(16)}: ${b[i]!.toString(16)}, dtype.ts ${numberToBf16Bits(v[i]!).toString(16)}`,
      );
  }
  assert.is(halfFromF32(new Float32Array(0), 'f16').length, 0);
});

test('rand and randn in f64, f16 and bf16 are the f32 values widened or rounded (rand below 1)', () => {
  for (const [k0, k1] of KEYS.slice(1, 3)) {
    for (const n of [0, 1, 7, 9, 17, 262144 + 9]) {
      for (const kind of ['uniform', 'normal'] as const) {
        const f = floats(kind, n, k0, k1, 'f32');
        assert.equal(floats(kind, n, k0, k1, 'f64'), Float64Array.from(f), `${kind} f64 n ${n}`);
        for (const [dtype, enc, one] of [
          ['f16', numberToF16Bits, 0x3c00],
          ['bf16', numberToBf16Bits, 0x3f80],
        ] as const) {
          const got = floats(kind, n, k0, k1, dtype);
          for (let i = 0; i < n; i++) {
            const r = enc(f[i]!),
              want = kind === 'uniform' && r === one ? one - 1 : r;
            if (got[i] !== want) assert.unreachable(`${kind} ${dtype} n ${n} element ${i}: ${got[i]} want ${want}`);
          }
        }
      }
    }
  }
});

test('eachWords: the words of philoxWords, a chunk at a time', () => {
  for (const n of [0, 2, 6, 1048576 + 10]) {
    const got = new Int32Array(n);
    let next = 0;
    eachWords(n, 5, 0, (w, at, count) => {
      assert.is(at, next);
      assert.ok(count % 2 === 0 && count > 0 && count <= w.length);
      got.set(w.subarray(0, count), at);
      next = at + count;
    });
    assert.is(next, n);
    assert.equal(got, philoxWords(Math.ceil(n / 4), 5, 0).subarray(0, n));
  }
});

test('eachInteger: low + floor(w range / 2^64) of each 64-bit draw, as i64, for every range', () => {
  const lows = [0, -5, 7, -(2 ** 31), -Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER - 2 ** 32];
  const ranges = [1, 2, 1000, 65535, 65536, 65537, 2 ** 31, 2 ** 32 - 1, 2 ** 32];
  for (const [k0, k1] of KEYS.slice(0, 3)) {
    for (const n of [0, 1, 7, 9, 131072 + 3]) {
      const w = philoxWords(Math.ceil(n / 2), k0, k1);
      for (const low of lows)
        for (const range of ranges) {
          if (n > 100 && range !== 1000 && range !== 2 ** 32 - 1) continue;
          const got = new BigInt64Array(n),
            words = new Int32Array(got.buffer);
          eachInteger(n, k0, k1, low, range, (v, at, count) => words.set(v.subarray(0, 2 * count), 2 * at));
          for (let i = 0; i < n; i++) {
            const draw = (BigInt(w[2 * i]! >>> 0) << 32n) | BigInt(w[2 * i + 1]! >>> 0);
            const want = BigInt(low) + ((draw * BigInt(range)) >> 64n);
            if (got[i] !== want)
              assert.unreachable(`n ${n} low ${low} range ${range} element ${i}: ${got[i]} want ${want}`);
          }
        }
    }
  }
});

test('dropoutF32: the f32 product where (w >>> 8) >= thr, else +0, in f32, f16 and bf16', () => {
  const specials = [Infinity, -Infinity, NaN, -0, 0, 3.4e38, -1e-45, 1e-40, 65504, 70000, 1, -2.5];
  for (const n of [0, 1, 13, 262144 + 5]) {
    const x = new Float64Array(n).map((_, i) =>
      i % 7 === 0 ? specials[(i / 7) % specials.length]! : Math.fround(Math.sin(i) * 100),
    );
    const w = philoxWords(Math.ceil(n / 4), 9, 4);
    for (const [thr, scale] of [
      [0, 1],
      [Math.ceil(0.3 * 2 ** 24), Math.fround(1 / 0.7)],
      [2 ** 24, 0],
    ] as const) {
      const want = x.map((v, i) => (w[i]! >>> 8 >= thr ? Math.fround(v * scale) : 0));
      assert.is(
        firstDiff(dropoutF32(x, 9, 4, thr, scale, 'f32'), (i) => want[i]!),
        '',
        `f32 n ${n} thr ${thr}`,
      );
      const h = dropoutF32(x, 9, 4, thr, scale, 'f16'),
        b = dropoutF32(x, 9, 4, thr, scale, 'bf16');
      assert.is(
        firstDiff(h, (i) => numberToF16Bits(want[i]!)),
        '',
        `f16 n ${n} thr ${thr}`,
      );
      assert.is(
        firstDiff(b, (i) => numberToBf16Bits(want[i]!)),
        '',
        `bf16 n ${n} thr ${thr}`,
      );
    }
  }
});

test('the committed module is the assembly of the committed random.wat', () => {
  const bytes = assemble(readFileSync(`${WASM_DIR}random.wat`, 'utf8'));
  assert.is(
    Buffer.from(bytes).toString('base64'),
    WASM_BASE64,
    'src/backends/cpu/wasm/random-wasm.ts is stale: npx tsx scripts/wasm/assemble.ts',
  );
  assert.is(readFileSync(`${WASM_DIR}random-wasm.ts`, 'utf8'), wasmModuleSource('random', bytes));
});

test.run();
