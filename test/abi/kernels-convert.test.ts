// The kernels' dtype conversions (hip-src/compat.h, convert.h) against src/core/dtype.ts, bit for
// bit, without a GPU: the same device functions are compiled for the host with the system C++
// compiler (the CUDA-side branch of compat.h, with the few CUDA intrinsics shimmed) and run on
// special values, rounding boundaries and random inputs. Skips when no host compiler exists.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { f16BitsToNumber, numberToBf16Bits, numberToF16Bits, roundTo } from '../../src/core/dtype.ts';

const HIP_SRC = new URL('../../hip-src/', import.meta.url).pathname;
const cxx = ['c++', 'g++', 'clang++'].find((c) => spawnSync(c, ['--version']).status === 0);

// host stand-ins for what nvcc would provide; only the conversion functions are exercised
const HARNESS = String.raw`
#include <math.h>
#include <string.h>
#include <stdio.h>
#include <stdint.h>
#include <cmath>
using std::isfinite;
#define __device__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(x)
struct Dim3Shim { unsigned x, y, z; };
static Dim3Shim threadIdx, blockIdx, blockDim, gridDim;
static inline unsigned __float_as_uint(float f) { unsigned u; memcpy(&u, &f, 4); return u; }
static inline float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
static inline long long __double_as_longlong(double d) { long long u; memcpy(&u, &d, 8); return u; }
#include "convert.h"

int main(int argc, char** argv) {
  // argv[1]: doubles in, argv[2]: i64 in, argv[3]: results out
  FILE* fd = fopen(argv[1], "rb"); FILE* fi = fopen(argv[2], "rb"); FILE* out = fopen(argv[3], "wb");
  double d;
  while (fread(&d, 8, 1, fd) == 1) {
    const float f = (float)d;
    uint64_t r[12] = {
      cvt<f16>(d).bits, cvt<f16>(f).bits, cvt<bf16>(d).bits, cvt<bf16>(f).bits,
      cvt<u8>(d), cvt<u32>(d), (uint64_t)cvt<i64>(d),
      cvt<u8>(f), cvt<u32>(f), (uint64_t)cvt<i64>(f), __float_as_uint(cvt<float>(d)), 0 };
    fwrite(r, 8, 12, out);
  }
  long long v;
  while (fread(&v, 8, 1, fi) == 1) {
    const double dv = cvt<double>((i64)v);
    uint64_t r[6] = { cvt<f16>((i64)v).bits, cvt<bf16>((i64)v).bits, __float_as_uint(cvt<float>((i64)v)), 0, 0, 0 };
    memcpy(&r[3], &dv, 8);
    r[4] = cvt<u8>((i64)v); r[5] = cvt<u32>((i64)v);
    fwrite(r, 8, 6, out);
  }
  for (unsigned h = 0; h < 65536; h++) {
    f16 x; x.bits = (u16)h;
    bf16 y; y.bits = (u16)h;
    uint64_t r[2] = { __float_as_uint(cvt<float>(x)), __float_as_uint(cvt<float>(y)) };
    fwrite(r, 8, 2, out);
  }
  fclose(out);
  return 0;
}
`;

function doubles(): Float64Array {
  const xs: number[] = [
    0,
    -0,
    NaN,
    Infinity,
    -Infinity,
    1,
    -1,
    0.5,
    1.5,
    2.5,
    -2.5,
    -2.7,
    3.9,
    255.9,
    256,
    257,
    -1.5,
    65504,
    65519.99,
    65520,
    65536,
    2 ** -14,
    2 ** -24,
    2 ** -25,
    3 * 2 ** -26,
    2 ** -25 + 2 ** -60,
    1e-8,
    5.960464477539063e-8,
    2 ** 31,
    2 ** 32,
    2 ** 32 + 0.5,
    -(2 ** 31),
    2 ** 53 + 2,
    2 ** 63,
    -(2 ** 63),
    2 ** 64,
    2 ** 64 + 2 ** 12,
    1e19,
    -1e19,
    1e20,
    1e300,
    -1e300,
    3.4028234663852886e38,
    3.4028235677973366e38,
    3.4e38 * 1.01,
    1.401298464324817e-45,
    1e-310,
    Number.MIN_VALUE,
    1 + 2 ** -8,
    1 + 2 ** -8 + 2 ** -40,
    1 + 2 ** -11,
    1 + 2 ** -11 + 2 ** -45,
    1 + 3 * 2 ** -11,
  ];
  // halfway points of f16 and bf16 and their neighbours, across the exponent range
  for (let e = -26; e <= 16; e++) {
    for (const m of [1, 1.5, 1.25, 1.75]) {
      const base = m * 2 ** e;
      for (const bits of [11, 8]) {
        const half = 2 ** (e - bits);
        xs.push(base + half, base - half, base + half * (1 + 2 ** -30), base + half * (1 - 2 ** -30), -(base + half));
      }
    }
  }
  // random doubles across exponents, and random f32 values
  let s = 12345;
  const rnd = (): number => {
    s = (s * 1103515245 + 12345) >>> 0;
    return s / 2 ** 32;
  };
  for (let i = 0; i < 20000; i++) {
    const e = Math.floor(rnd() * 200) - 100;
    xs.push((rnd() < 0.5 ? -1 : 1) * (1 + rnd()) * 2 ** e);
    xs.push(Math.fround((rnd() - 0.5) * 2 ** (Math.floor(rnd() * 40) - 20)));
  }
  return Float64Array.from(xs);
}

function int64s(): BigInt64Array {
  const vs: bigint[] = [
    0n,
    1n,
    -1n,
    255n,
    256n,
    65504n,
    65519n,
    65520n,
    2n ** 24n + 1n,
    2n ** 53n + 1n,
    2n ** 62n + 2n ** 30n + 1n,
    2n ** 63n - 1n,
    -(2n ** 63n),
    -(2n ** 53n) - 3n,
  ];
  let s = 777n;
  for (let i = 0; i < 5000; i++) {
    s = (s * 6364136223846793005n + 1442695040888963407n) & (2n ** 64n - 1n);
    vs.push(BigInt.asIntN(64, s >> BigInt(i % 60)));
  }
  return BigInt64Array.from(vs);
}

if (!cxx) {
  console.log('kernels-convert: skipped (no host C++ compiler: c++, g++ or clang++)');
  test.skip('kernel conversions match src/core/dtype.ts (no host C++ compiler)', () => {});
} else {
  const dir = mkdtempSync(join(tmpdir(), 'rt-convert-'));
  const ds = doubles(),
    is = int64s();
  writeFileSync(join(dir, 'h.cpp'), HARNESS);
  writeFileSync(join(dir, 'd.bin'), new Uint8Array(ds.buffer));
  writeFileSync(join(dir, 'i.bin'), new Uint8Array(is.buffer));
  // -ffp-contract=off and no fast-math: the host must round like the device code does
  execFileSync(cxx, [
    '-std=c++17',
    '-O1',
    '-ffp-contract=off',
    '-I',
    HIP_SRC,
    join(dir, 'h.cpp'),
    '-o',
    join(dir, 'h'),
  ]);
  execFileSync(join(dir, 'h'), [join(dir, 'd.bin'), join(dir, 'i.bin'), join(dir, 'out.bin')]);
  const raw = readFileSync(join(dir, 'out.bin'));
  const out = new BigUint64Array(raw.buffer, raw.byteOffset, raw.byteLength / 8);
  rmSync(dir, { recursive: true, force: true });
  const f32bits = (x: number): number => new Uint32Array(Float32Array.of(x).buffer)[0]!;
  const sameF32 = (bits: bigint, want: number): boolean =>
    Number.isNaN(want)
      ? Number.isNaN(new Float32Array(Uint32Array.of(Number(bits)).buffer)[0])
      : Number(bits) === f32bits(want);

  test(`float -> f16, bf16, f32, u8, u32, i64 on ${ds.length} values, as roundTo / the encoders do`, () => {
    assert.is(out.length, ds.length * 12 + is.length * 6 + 65536 * 2, 'harness output size');
    const bad: string[] = [];
    ds.forEach((d, i) => {
      const r = out.subarray(i * 12, i * 12 + 12);
      const f = Math.fround(d);
      const i64 = (x: number): bigint => BigInt.asUintN(64, BigInt(roundTo('i64', x)));
      const checks: [string, bigint, bigint][] = [
        ['f64->f16', r[0]!, BigInt(numberToF16Bits(d))],
        ['f32->f16', r[1]!, BigInt(numberToF16Bits(f))],
        ['f64->bf16', r[2]!, BigInt(numberToBf16Bits(d))],
        ['f32->bf16', r[3]!, BigInt(numberToBf16Bits(f))],
        ['f64->u8', r[4]!, BigInt(roundTo('u8', d))],
        ['f64->u32', r[5]!, BigInt(roundTo('u32', d))],
        ['f64->i64', r[6]!, i64(d)],
        ['f32->u8', r[7]!, BigInt(roundTo('u8', f))],
        ['f32->u32', r[8]!, BigInt(roundTo('u32', f))],
        ['f32->i64', r[9]!, i64(f)],
      ];
      for (const [what, got, want] of checks) if (got !== want) bad.push(`${what} of ${d}: got ${got}, want ${want}`);
      if (!sameF32(r[10]!, f)) bad.push(`f64->f32 of ${d}`);
    });
    assert.equal(bad.slice(0, 10), [], `${bad.length} mismatches`);
  });

  test(`i64 -> f16, bf16, f32, f64, u8, u32 on ${is.length} values, through the exact double like Number()`, () => {
    const base = ds.length * 12;
    const bad: string[] = [];
    const dv = new Float64Array(1),
      dvBits = new BigUint64Array(dv.buffer);
    is.forEach((v, i) => {
      const r = out.subarray(base + i * 6, base + i * 6 + 6);
      const n = Number(v);
      dv[0] = n;
      if (r[0] !== BigInt(numberToF16Bits(n))) bad.push(`i64->f16 of ${v}`);
      if (r[1] !== BigInt(numberToBf16Bits(n))) bad.push(`i64->bf16 of ${v}`);
      if (!sameF32(r[2]!, Math.fround(n))) bad.push(`i64->f32 of ${v}`);
      if (r[3] !== dvBits[0]) bad.push(`i64->f64 of ${v}`);
      // the integer narrowings keep the low bits, as src/backends/cpu/cast.ts does with BigInt
      if (r[4] !== BigInt.asUintN(8, v)) bad.push(`i64->u8 of ${v}`);
      if (r[5] !== BigInt.asUintN(32, v)) bad.push(`i64->u32 of ${v}`);
    });
    assert.equal(bad.slice(0, 10), [], `${bad.length} mismatches`);
  });

  test('f16 and bf16 -> f32 for all 65536 bit patterns', () => {
    const base = ds.length * 12 + is.length * 6;
    const bad: string[] = [];
    for (let h = 0; h < 65536; h++) {
      if (!sameF32(out[base + 2 * h]!, f16BitsToNumber(h))) bad.push(`f16 ${h.toString(16)}`);
      if (Number(out[base + 2 * h + 1]!) !== h * 65536) bad.push(`bf16 ${h.toString(16)}`);
    }
    assert.equal(bad.slice(0, 10), [], `${bad.length} mismatches`);
  });
}

test.run();
