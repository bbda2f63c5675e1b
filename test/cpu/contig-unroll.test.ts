// The contiguous elementwise launches' vectors a thread without a GPU: the host's counts
// (src/runtime/{cuda,rocm}/tuning.ts through copy.ts mapUnroll, elementwise.ts unaryUnroll) must be the kernels' (RT_UNROLL in
// hip-src/elementwise.h, UnaryUnroll in unary.hip), or each block covers the wrong tile (still
// correct, grid-stride, but not the launch that was measured).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Device } from '../../src/device/device.ts';
import { mapUnroll } from '../../src/backends/gpu/copy.ts';
import { unaryUnroll } from '../../src/backends/gpu/elementwise.ts';
import { REPO_ROOT } from '../runtime.ts';
import { tuningFor } from '../../src/runtime/tuning.ts';

const device = (vendor: 'cuda' | 'rocm'): Device => ({ tuning: tuningFor(vendor) }) as unknown as Device;

/** RT_UNROLL on NVIDIA and on AMD, as elementwise.h defines it */
function kernelUnroll(): { cuda: number; rocm: number } {
  const src = readFileSync(join(REPO_ROOT, 'hip-src/elementwise.h'), 'utf8');
  const m = /#if RT_CUDA\n#define RT_UNROLL (\d+)\n#else\n#define RT_UNROLL (\d+)\n#endif/.exec(src);
  assert.ok(m, 'hip-src/elementwise.h: the RT_UNROLL lines are not where this test looks for them');
  return { cuda: Number(m[1]), rocm: Number(m[2]) };
}

test("contiguous launches: the host takes the kernels' vectors a thread on each vendor", () => {
  const k = kernelUnroll();
  for (const v of ['cuda', 'rocm'] as const)
    assert.is(mapUnroll(device(v)), k[v], `${v}: host ${mapUnroll(device(v))}, kernel ${k[v]}`);
});

test("contiguous launches: unary.hip's exceptions (f64 1, sin/cos 2 at most, half gelu 4)", () => {
  const src = readFileSync(join(REPO_ROOT, 'hip-src/unary.hip'), 'utf8');
  assert.ok(
    src.includes(
      'struct UnaryUnroll<T, Op_gelu> { static constexpr int value = sizeof(T) == 8 ? 1 : sizeof(T) == 2 ? 4 : RT_UNROLL; };',
    ),
    'hip-src/unary.hip: the gelu UnaryUnroll line is not where this test looks for it',
  );
  const k = kernelUnroll();
  for (const v of ['cuda', 'rocm'] as const) {
    const dev = device(v);
    assert.is(unaryUnroll('exp', 'f64', dev), 1);
    assert.is(unaryUnroll('exp', 'bf16', dev), k[v]);
    assert.is(unaryUnroll('exp', 'f32', dev), k[v]);
    assert.is(unaryUnroll('sin', 'f16', dev), Math.min(2, k[v]));
    assert.is(unaryUnroll('gelu', 'bf16', dev), 4);
    assert.is(unaryUnroll('gelu', 'f16', dev), 4);
    assert.is(unaryUnroll('gelu', 'f32', dev), k[v]);
  }
});

test.run();
