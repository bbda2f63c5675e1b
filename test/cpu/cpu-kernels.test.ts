// The CPU's fast loops against their plain definitions: the block f16/bf16 conversions
// (cpu/convert.ts) against core/dtype.ts element by element, the WebAssembly SIMD loops
// (wasm-kernels.ts) against the scalar ones bit for bit, the f32 exp against Math.exp, and the
// exact reference's exp (setCpuExact) equal to Math.exp rounded once; and the committed module
// is what the assembler makes of the committed text.
import { readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor } from '../../src/index.ts';
import { numberToBf16Bits, numberToF16Bits, f16BitsToNumber, bf16BitsToNumber } from '../../src/core/dtype.ts';
import { decodeBf16, decodeF16, encodeBf16, encodeF16 } from '../../src/backends/cpu/convert.ts';
import { expF32Scalar } from '../../src/backends/cpu/fast-math.ts';
import { binaryF32, expF32Wasm, wasmKernels } from '../../src/backends/cpu/wasm-kernels.ts';
import { setCpuExact } from '../../src/backends/cpu/mode.ts';
import { WASM_BASE64 } from '../../src/backends/cpu/wasm/kernels-wasm.ts';
import { assemble, wasmModuleSource, WASM_DIR } from '../../scripts/wasm/assemble.ts';
import { nums } from '../helpers.ts';

/** a deterministic stream of doubles: xorshift bits as f64 patterns, plus scaled uniforms */
function doubles(n: number, seed = 7): Float64Array {
  const out = new Float64Array(n);
  const u = new Uint32Array(out.buffer);
  let s = seed >>> 0 || 1;
  const next = () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>>= 0);
  };
  for (let i = 0; i < n; i++) {
    if (i % 2) out[i] = ((next() / 2 ** 32) * 2 - 1) * 2 ** ((next() % 80) - 40);
    else {
      u[2 * i] = next();
      u[2 * i + 1] = next();
    }
  }
  return out;
}

const SPECIAL = [
  0,
  -0,
  1,
  -1,
  0.5,
  65504,
  65519.99,
  65520,
  2 ** -24,
  2 ** -25,
  2 ** -25 * 1.0000001,
  2 ** -14,
  2 ** -14 * (1 - 2 ** -11),
  3.4e38,
  3.5e38,
  1e-45,
  1e-300,
  Infinity,
  -Infinity,
  NaN,
  1 + 2 ** -8,
  1 + 2 ** -8 + 2 ** -40,
  1 + 2 ** -11,
  1 + 2 ** -11 + 2 ** -50,
  1 + 3 * 2 ** -11,
  2 ** 128,
  -(2 ** -130),
];

test('f16 and bf16 block encoders round every double as numberToF16Bits / numberToBf16Bits do', () => {
  const xs = new Float64Array([...SPECIAL, ...doubles(200000)]);
  const f16 = new Uint16Array(xs.length),
    bf16 = new Uint16Array(xs.length);
  encodeF16(xs, 0, f16, 0, xs.length);
  encodeBf16(xs, 0, bf16, 0, xs.length);
  for (let i = 0; i < xs.length; i++) {
    if (f16[i] !== numberToF16Bits(xs[i]!))
      assert.unreachable(`f16 of ${xs[i]}: ${f16[i]} vs ${numberToF16Bits(xs[i]!)}`);
    if (bf16[i] !== numberToBf16Bits(xs[i]!))
      assert.unreachable(`bf16 of ${xs[i]}: ${bf16[i]} vs ${numberToBf16Bits(xs[i]!)}`);
  }
  // every f16 and bf16 value (and the midpoints between neighbours) round-trips
  const all = new Float64Array(2 * 65536);
  for (let h = 0; h < 65536; h++) {
    all[2 * h] = f16BitsToNumber(h);
    all[2 * h + 1] = (f16BitsToNumber(h) + f16BitsToNumber(h + 1 < 65536 ? h + 1 : h)) / 2;
  }
  const enc = new Uint16Array(all.length);
  encodeF16(all, 0, enc, 0, all.length);
  for (let i = 0; i < all.length; i++)
    if (enc[i] !== numberToF16Bits(all[i]!)) assert.unreachable(`f16 of ${all[i]} (pattern ${i >> 1})`);
});

test('f16 and bf16 block decoders read every bit pattern as the dtype table does, at a stride', () => {
  const bits = new Uint16Array(2 * 65536);
  for (let h = 0; h < 65536; h++) bits[2 * h + 1] = h;
  const f = new Float64Array(65536),
    b = new Float64Array(65536);
  decodeF16(bits, 1, 2, f, 0, 65536);
  decodeBf16(bits, 1, 2, b, 0, 65536);
  for (let h = 0; h < 65536; h++) {
    assert.ok(Object.is(f[h], f16BitsToNumber(h)), `f16 ${h}`);
    assert.ok(Object.is(b[h], bf16BitsToNumber(h)), `bf16 ${h}`);
  }
});

/** f32 inputs over exp's whole range, its edges and the special values */
function expInputs(): Float32Array {
  const n = 1 << 20;
  const x = new Float32Array(n + 32);
  const d = doubles(n, 11);
  for (let i = 0; i < n; i++) x[i] = (d[i]! % 1) * 120 - 10; // [-130, 110], NaN from NaN patterns
  x.set(
    [
      NaN,
      Infinity,
      -Infinity,
      0,
      -0,
      88.72283,
      88.7229,
      88.8,
      100,
      100.5,
      -87.33,
      -103.9,
      -104,
      -110,
      -110.5,
      -150,
      1e30,
      -1e30,
      3.4e38,
      -3.4e38,
      1e-45,
      -1e-45,
      1e-30,
      0.5,
      -0.5,
      1,
      -1,
      10,
      -10,
      20,
      -20,
      7e-8,
    ],
    n,
  );
  return x;
}

test('f32 exp: the WebAssembly loop and the scalar loop agree bit for bit, and round as Math.exp does', () => {
  const x = expInputs();
  const a = new Float32Array(x.length),
    b = new Float32Array(x.length);
  expF32Scalar(x, 0, 1, a, 0, x.length);
  assert.ok(wasmKernels(), 'WebAssembly SIMD runs here');
  assert.ok(expF32Wasm(x, 0, 1, b, 0, x.length));
  const ua = new Uint32Array(a.buffer),
    ub = new Uint32Array(b.buffer);
  // bits equal, but a NaN's payload (engines differ: JavaScriptCore canonicalizes NaNs in scalar code)
  for (let i = 0; i < x.length; i++)
    if (ua[i] !== ub[i] && !(Number.isNaN(a[i]!) && Number.isNaN(b[i]!)))
      assert.unreachable(`exp(${x[i]}): scalar ${a[i]}, wasm ${b[i]}`);
  // against the correctly rounded value: at most a few in a million differ, each by one ulp
  let off = 0;
  for (let i = 0; i < x.length; i++) {
    const want = Math.fround(Math.exp(x[i]!));
    if (Object.is(want, a[i]) || (Number.isNaN(want) && Number.isNaN(a[i]))) continue;
    off++;
    assert.ok(Math.abs(a[i]! - want) <= Math.abs(want) * 2 ** -23, `exp(${x[i]}): ${a[i]} vs ${want}`);
  }
  assert.ok(off <= 4, `${off} of ${x.length} differ from Math.exp rounded`);
  // strided input
  const c = new Float32Array(1000);
  expF32Wasm(x, 3, 7, c, 0, 1000);
  for (let i = 0; i < 1000; i++) assert.ok(Object.is(c[i], a[3 + 7 * i]) || Number.isNaN(c[i]!), `strided ${i}`);
});

test('f32 exp on tensors: the exact reference is Math.exp rounded once; the default is within one ulp', () => {
  const x = Tensor.from(expInputs().subarray(0, 5000));
  const want = nums(x).map((v) => Math.fround(Math.exp(v)));
  setCpuExact(true);
  try {
    assert.equal(nums(x.exp()), want);
    // the same values with a stride of 2
    const strided = Tensor.cat([x.unsqueeze(1), x.unsqueeze(1)], 1)
      .reshape([2 * x.numel])
      .slice(0, 0, undefined, 2);
    assert.equal(nums(strided.exp()), want);
  } finally {
    setCpuExact(null);
  }
  const got = nums(x.exp());
  for (let i = 0; i < got.length; i++)
    assert.ok(
      Object.is(got[i], want[i]) || Math.abs(got[i]! - want[i]!) <= Math.abs(want[i]!) * 2 ** -23,
      `exp(${nums(x)[i]})`,
    );
});

test('f32 add, sub, mul, div: the SIMD loop gives the scalar results bit for bit (NaN, inf, odd lengths, a scalar)', () => {
  const n = 20003;
  const d = doubles(2 * n, 5);
  const x = new Float32Array(n),
    y = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    x[i] = d[i]!;
    y[i] = d[n + i]!;
  }
  x.set([NaN, Infinity, -Infinity, 0, -0, 1e-45], 0);
  y.set([1, Infinity, Infinity, -0, 0, 1e-45], 0);
  const f = {
    add: (a: number, b: number) => a + b,
    sub: (a: number, b: number) => a - b,
    mul: (a: number, b: number) => a * b,
    div: (a: number, b: number) => a / b,
  };
  for (const [op, fn] of Object.entries(f) as [keyof typeof f, (a: number, b: number) => number][]) {
    for (const scalar of [false, true]) {
      for (const [off, len] of [
        [0, n],
        [5, 13],
        [1, 3],
        [2, 9000],
      ] as const) {
        const out = new Float32Array(len + 2).fill(42);
        assert.ok(binaryF32(op, x, off, scalar ? null : y, off, 2.5, out, 1, len));
        const want = new Float32Array(len);
        for (let i = 0; i < len; i++) want[i] = fn(x[off + i]!, scalar ? 2.5 : y[off + i]!);
        for (let i = 0; i < len; i++)
          if (!Object.is(out[1 + i], want[i]) && !(Number.isNaN(out[1 + i]!) && Number.isNaN(want[i]!)))
            assert.unreachable(
              `${op} ${scalar ? 'scalar' : 'tensor'} [${off}, ${len}) at ${i}: ${out[1 + i]} vs ${want[i]}`,
            );
        assert.is(out[0], 42, 'nothing written before the output');
        assert.is(out[len + 1], 42, 'nothing written past the output');
      }
    }
  }
});

test('f32 binary ops on tensors: contiguous (SIMD), strided and broadcast runs agree', () => {
  const a = Tensor.rand([300, 70], { seed: 3 }),
    b = Tensor.rand([300, 70], { seed: 4 });
  for (const op of ['add', 'sub', 'mul', 'div'] as const) {
    const dense = nums(a[op](b));
    const viaT = nums(a.T.contiguous().T[op](b.T.contiguous().T));
    assert.equal(viaT, dense, op);
    const row = b.narrow(0, 0, 1);
    assert.equal(nums(a[op](row)), nums(a[op](row.expand([300, 70]).contiguous())), `${op} broadcast row`);
  }
});

test('the committed module is what scripts/wasm/assemble.ts makes of kernels.wat', () => {
  const bytes = assemble(readFileSync(`${WASM_DIR}kernels.wat`, 'utf8'));
  assert.is(
    Buffer.from(bytes).toString('base64'),
    WASM_BASE64,
    'src/backends/cpu/wasm/kernels-wasm.ts is stale: npx tsx scripts/wasm/assemble.ts',
  );
  assert.is(readFileSync(`${WASM_DIR}kernels-wasm.ts`, 'utf8'), wasmModuleSource('kernels', bytes));
});

test.run();
