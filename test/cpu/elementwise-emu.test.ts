// binary.hip (arithmetic, comparisons, where), cast.hip (every pair of the seven dtypes) and
// unary.hip (every op) run through their HIP path on the host emulator
// (test/emu/elementwise-emu.cpp) at wave 64 and 32, against the CPU reference on the same inputs:
// bit for bit (any NaN matching any NaN) for everything but the libm-based unary ops, which are
// held to a few units in the last place. Contiguous with the 16-byte path and one element in (the
// element path), and strided (a transposed operand, a broadcast row). The emulator also checks
// that no kernel writes past its output. A missing g++ fails.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor, type DType } from '../../src/index.ts';
import { bf16BitsToNumber, f16BitsToNumber, type HostArray } from '../../src/core/dtype.ts';
import { runEmulator } from './emu-run.ts';

// as test/emu/elementwise-emu.cpp
const N = 37,
  R = 5,
  C = 7;

function decode(dt: DType, hex: string): HostArray {
  const b = Buffer.from(hex, 'hex');
  const buf = b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength);
  switch (dt) {
    case 'f32':
      return new Float32Array(buf);
    case 'f64':
      return new Float64Array(buf);
    case 'f16':
    case 'bf16':
      return new Uint16Array(buf);
    case 'u8':
      return new Uint8Array(buf);
    case 'u32':
      return new Uint32Array(buf);
    case 'i64':
      return new BigInt64Array(buf);
  }
}

/** a CPU tensor of `dt` holding `raw` (f16/bf16 as bits) from element `from`, `n` of them */
function tensorOf(dt: DType, raw: HostArray, from: number, n: number): Tensor {
  const part = raw.subarray(from, from + n);
  if (dt === 'f16' || dt === 'bf16') {
    const toNum = dt === 'f16' ? f16BitsToNumber : bf16BitsToNumber;
    return Tensor.from(Array.from(part as Uint16Array, toNum), { dtype: dt });
  }
  return Tensor.from(part as Float32Array);
}

// Known differences in the sign of a zero, tolerated and counted (docs/internals/amd-emulation.md):
// binary.hip's maximum and minimum return the second operand when the two compare equal, so of
// +0 and -0 they give whichever comes second, where the CPU (Math.max, Math.min: IEEE 754-2019's
// maximum and minimum, as torch) orders -0 below +0; unary.hip's relu keeps -0 (x < 0 is false)
// where the CPU gives +0; its round (rint) keeps the sign of a value that rounds to 0, where the
// CPU gives +0.
const SIGNED_ZERO = /^(binary_(maximum|minimum)|unary_(round|relu))_/;
let signedZeros = 0;
const isZero = (dt: DType, x: number | bigint): boolean =>
  dt === 'f16' || dt === 'bf16' ? ((x as number) & 0x7fff) === 0 : (dt === 'f32' || dt === 'f64') && x === 0;

/** the first element where got and want differ, or -1; any NaN matches any NaN (payloads and
 *  signs of NaN are not part of the contract: f32/f64 NaNs pass through as the hardware makes
 *  them, f16/bf16 stores canonicalize) */
function firstDiff(dt: DType, got: HostArray, want: HostArray, zerosAlike = false): number {
  if (got.length !== want.length) return Math.min(got.length, want.length);
  const isNan = (x: number | bigint): boolean => {
    if (dt === 'f16') return ((x as number) & 0x7c00) === 0x7c00 && ((x as number) & 0x3ff) !== 0;
    if (dt === 'bf16') return ((x as number) & 0x7f80) === 0x7f80 && ((x as number) & 0x7f) !== 0;
    return (dt === 'f32' || dt === 'f64') && Number.isNaN(x as number);
  };
  for (let i = 0; i < got.length; i++) {
    const g = got[i]!,
      w = want[i]!;
    if (isNan(g) && isNan(w)) continue;
    if (zerosAlike && isZero(dt, g) && isZero(dt, w)) {
      signedZeros++;
      continue;
    }
    if (dt === 'f32' || dt === 'f64') {
      // bits, not ==: -0 and 0 differ
      const gb = new (dt === 'f32' ? Float32Array : Float64Array)([g as number]),
        wb = new (dt === 'f32' ? Float32Array : Float64Array)([w as number]);
      if (Buffer.compare(Buffer.from(gb.buffer), Buffer.from(wb.buffer)) !== 0) return i;
    } else if (g !== w) return i;
  }
  return -1;
}

const BIN = ['add', 'sub', 'mul', 'div', 'maximum', 'minimum'] as const;

type UnaryName = 'exp' | 'log' | 'sin' | 'cos' | 'tanh' | 'neg' | 'recip' | 'sqr' | 'sqrt' | 'gelu' | 'geluErf' | 'erf';
// the parameters test/emu/elementwise-emu.cpp passes
const PARAM: Record<string, (x: Tensor) => Tensor> = {
  affine: (x) => x.affine(1.5, -0.25),
  powf: (x) => x.powf(2.5),
  elu: (x) => x.elu(0.7),
  clamp: (x) => x.clamp(-1.5, 2.25),
  leakyRelu: (x) => x.leakyRelu(0.05),
};
// ops whose result is one rounding of an exact value (or no rounding), bit for bit; the others
// (libm functions, expressions of them, and products with a parameter the f32 kernels take in
// f32 where the CPU keeps it in f64) are held to a few units in the last place
const EXACT = new Set(['neg', 'recip', 'sqr', 'sqrt', 'relu', 'abs', 'ceil', 'floor', 'round', 'sign', 'clamp']);
// units in the last place. The kernels and the CPU write some ops as different formulas (gelu:
// x sigmoid(2u) against 0.5 x (1 + tanh u); erf: the host libm against the CPU's own; elu: exp - 1
// against expm1), which in f64 land up to 490 ulps (1e-13) apart; f16/bf16 results agreed to the
// bit (their rounding hides the f32 differences)
const UNARY_TOL: Record<string, number> = { f32: 16, f64: 1024, f16: 1, bf16: 1 };
const worst = new Map<string, number>();

/** the largest distance in units of the dtype's last place at the CPU's value (NaN alike, the
 *  same infinity, or Infinity) */
function unaryError(dt: DType, got: HostArray, want: HostArray): number {
  const num = (x: number | bigint): number =>
    dt === 'f16' ? f16BitsToNumber(x as number) : dt === 'bf16' ? bf16BitsToNumber(x as number) : (x as number);
  const mant = { f32: 23, f64: 52, f16: 10, bf16: 7 }[dt as 'f32']!;
  // results near 0 (gelu, silu, elu of large negative x; sin near a multiple of pi) are
  // cancellations: their error counts against the last place of 2^-10, not of the tiny value
  const floor = 2 ** -10;
  let e = 0;
  for (let i = 0; i < got.length; i++) {
    const g = num(got[i]!),
      w = num(want[i]!);
    if (Number.isNaN(g) && Number.isNaN(w)) continue;
    if (!Number.isFinite(g) || !Number.isFinite(w)) {
      if (g !== w) return Number.POSITIVE_INFINITY;
      continue;
    }
    const ulp = 2 ** (Math.floor(Math.log2(Math.max(Math.abs(w), floor))) - mant);
    e = Math.max(e, Math.abs(g - w) / ulp);
  }
  return e;
}
const CMP = ['eq', 'ne', 'lt', 'le', 'gt', 'ge'] as const;

test('binary.hip, cast.hip and unary.hip give what the CPU gives, at wave 64 and 32 (test/emu/elementwise-emu.cpp)', async () => {
  const out = runEmulator('elementwise-emu', { std: 'c++20' });
  assert.match(out, /^ok: 0 mismatches/m);
  const inputs = new Map<string, string>();
  for (const m of out.matchAll(/^in (\S+) (\S+) ([0-9a-f]+)$/gm)) inputs.set(`${m[1]} ${m[2]}`, m[3]!);
  // `as`: how the bytes read (where's condition is u8 whatever the data's dtype)
  const input = (dt: DType, which: string, as: DType = dt): HostArray => {
    const h = inputs.get(`${dt} ${which}`);
    assert.ok(h, `no input ${which} of ${dt}`);
    return decode(as, h!);
  };
  let checked = 0;
  for (const m of out.matchAll(/^data (\S+) (contig|contig\+1|strided) (64|32) ([0-9a-f]+)$/gm)) {
    const [, name, variant, wave, hex] = m as unknown as [string, string, string, string, string];
    // the operands as the run read them: contiguous from element 0 or 1, or [R, C] with the
    // first transposed (storage [C, R]) and the second one broadcast row
    const view = (dt: DType, raw: HostArray, role: 'first' | 'second' | 'cond'): Tensor => {
      if (variant !== 'strided') return tensorOf(dt, raw, variant === 'contig+1' ? 1 : 0, N);
      if (role === 'cond') return tensorOf(dt, raw, 0, R * C).reshape([R, C]);
      if (role === 'first')
        return tensorOf(dt, raw, 0, R * C)
          .reshape([C, R])
          .transpose(0, 1);
      return tensorOf(dt, raw, 0, C).reshape([1, C]);
    };
    let want: Tensor;
    let outDt: DType;
    let bm: RegExpExecArray | null;
    if ((bm = /^(binary|cmp)_(\w+?)_(f32|f64|f16|bf16|u8|u32|i64)$/.exec(name))) {
      const dt = bm[3] as DType,
        op = bm[2]!;
      const a = view(dt, input(dt, 'a'), 'first'),
        b = view(dt, input(dt, 'b'), 'second');
      assert.ok(bm[1] === 'binary' ? BIN.includes(op as never) : CMP.includes(op as never), name);
      want = (a[op as (typeof BIN)[number] | (typeof CMP)[number]] as (x: Tensor) => Tensor).call(a, b);
      outDt = bm[1] === 'binary' ? dt : 'u8';
    } else if ((bm = /^where_u8_(\w+)$/.exec(name))) {
      const dt = bm[1] as DType;
      outDt = dt;
      want = Tensor.where(
        view('u8', input(dt, 'c', 'u8'), 'cond'),
        view(dt, input(dt, 'a'), 'first'),
        view(dt, input(dt, 'b'), 'second'),
      );
    } else if ((bm = /^unary_(\w+)_(f32|f64|f16|bf16)$/.exec(name))) {
      const dt = bm[2] as DType,
        op = bm[1]!;
      const x = view(dt, input(dt, 'u'), 'first');
      const param = PARAM[op];
      want = param ? param(x) : (x[op as UnaryName] as () => Tensor).call(x);
      outDt = dt;
      if (!EXACT.has(op)) {
        const got = decode(dt, hex),
          w = await want.contiguous().toRawArray();
        const err = unaryError(dt, got, w);
        worst.set(`${op} ${dt}`, Math.max(worst.get(`${op} ${dt}`) ?? 0, err));
        if (err > UNARY_TOL[dt]!)
          assert.unreachable(`${name} ${variant} at wave ${wave}: ${err} ulps from the CPU (at most ${UNARY_TOL[dt]})`);
        checked++;
        continue;
      }
    } else if ((bm = /^cast_(\w+?)_(\w+)$/.exec(name))) {
      const from = bm[1] as DType,
        to = bm[2] as DType;
      want = view(from, input(from, 'x'), 'first').toDtype(to);
      outDt = to;
    } else {
      assert.unreachable(`unexpected kernel ${name}`);
      return;
    }
    const w = await want.contiguous().toRawArray();
    const got = decode(outDt, hex);
    const at = firstDiff(outDt, got, w, SIGNED_ZERO.test(name));
    if (at >= 0)
      assert.unreachable(`${name} ${variant} at wave ${wave}: element ${at} is ${got[at]}, the CPU gives ${w[at]}`);
    checked++;
  }
  // 7 dtypes x (6 arithmetic + 6 comparisons + where) + 42 casts + 4 dtypes x 25 unary ops, 3
  // runs each, 2 waves
  assert.is(checked, (7 * 13 + 42 + 4 * 25) * 3 * 2);
  console.log(
    `  unary, ulps from the CPU at most: ${[...worst].map(([k, v]) => `${k} ${Number(v.toPrecision(2))}`).join(', ')}`,
  );
  console.log(
    `  ${checked} kernel runs bit for bit; ${signedZeros} zeros of maximum/minimum/relu/round with the other sign than the CPU's`,
  );
});

test.run();
