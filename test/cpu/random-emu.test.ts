// random.hip's kernels (rand, randn, randint, bernoulli_scalar, dropout) run through their HIP
// path on the host emulator (test/emu/random-emu.cpp) at wave 64 and 32, and held bit for bit
// against the CPU reference (src/backends/cpu/random.ts) for the same Philox key: the GPU and
// the CPU draw the same numbers for a seed. The emulator also checks that two launch shapes draw
// the same. A missing g++ fails here, loudly.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { HostArray } from '../../src/core/dtype.ts';
import { bernoulliScalar, dropout, rand, randint, randn } from '../../src/backends/cpu/random.ts';
import { runEmulator } from './emu-run.ts';

// as test/emu/random-emu.cpp
const N = 1003,
  K0 = 0x12345678,
  K1 = 0x9abcdef0,
  THR = 5033165,
  SCALE = Math.fround(1 / 0.7);
const x = Float32Array.from({ length: N }, (_, i) => (((i * 37) % 64) - 32) / 8);

const EXPECTED: Record<string, () => HostArray> = {
  rand_f32: () => rand(N, K0, K1, 'f32'),
  rand_f16: () => rand(N, K0, K1, 'f16'),
  rand_bf16: () => rand(N, K0, K1, 'bf16'),
  rand_f64: () => rand(N, K0, K1, 'f64'),
  randn_f32: () => randn(N, K0, K1, 'f32'),
  randn_f16: () => randn(N, K0, K1, 'f16'),
  randn_bf16: () => randn(N, K0, K1, 'bf16'),
  randn_f64: () => randn(N, K0, K1, 'f64'),
  randint_i64: () => randint(N, K0, K1, -5, 1000, 'i64'),
  randint_i64_full: () => randint(N, K0, K1, 7, 2 ** 32, 'i64'),
  bernoulli_scalar_u8: () => bernoulliScalar(N, K0, K1, THR, 'u8'),
  dropout_f32: () => dropout(x, K0, K1, THR, SCALE, 'f32'),
  dropout_bf16: () => dropout(x, K0, K1, THR, SCALE, 'bf16'),
};

const hex = (a: HostArray): string => Buffer.from(a.buffer, a.byteOffset, a.byteLength).toString('hex');

test('random.hip draws bit for bit what the CPU draws, at wave 64 and 32 (test/emu/random-emu.cpp)', () => {
  const out = runEmulator('random-emu', { std: 'c++20' });
  assert.match(out, /^ok: 0 mismatches/m);
  const got = new Map<string, string>();
  for (const m of out.matchAll(/^data (\S+) (\d+) ([0-9a-f]+)$/gm)) got.set(`${m[1]} ${m[2]}`, m[3]!);
  for (const [name, cpu] of Object.entries(EXPECTED)) {
    const want = hex(cpu());
    for (const wave of [64, 32]) {
      const g = got.get(`${name} ${wave}`);
      assert.ok(g, `no output of ${name} at wave ${wave}`);
      if (g !== want) {
        const at = [...g!].findIndex((c, i) => c !== want[i]);
        assert.unreachable(
          `${name} at wave ${wave}: differs from the CPU from byte ${at >> 1} (${g!.slice(at & ~15, (at & ~15) + 32)} vs ${want.slice(at & ~15, (at & ~15) + 32)})`,
        );
      }
    }
  }
});

test.run();
