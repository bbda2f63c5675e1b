// Programmatic dependent launch (NVIDIA sm_90+): kernels start while the kernel ahead of them on
// the stream still runs and wait for it themselves (src/runtime/ptx-grid-dep.ts). Long chains of
// small dependent kernels, whose every result feeds the next and whose freed outputs the next
// ones overwrite, give exactly the serial answer, eagerly and replayed from a graph; on an sm_90+
// device every kernel is launched that way (unless ROCM_TENSOR_GRID_DEP=0), elsewhere none.
import { gpuSuite } from './harness.ts';
import * as assert from 'uvu/assert';
import { Tensor } from '../../src/index.ts';
import { tidy } from '../../src/core/scope.ts';
import { hasGridDep } from '../../src/runtime/ptx-grid-dep.ts';

const s = gpuSuite('gpu/grid-dep', { needsRuntime: true });

s.test('grid-dep: kernels launch early exactly where the device has griddepcontrol', async (dev) => {
  const info = dev.runtime.info;
  const want = info.vendor === 'cuda' && hasGridDep(info.arch) && process.env.ROCM_TENSOR_GRID_DEP !== '0';
  for (const [file, name] of [
    ['binary.hip', 'binary_add_f32'],
    ['gemv-fused.hip', 'gemvf_n_bf16'],
    ['flash.hip', 'flash_dec_bf16_128'],
    ['norm.hip', 'rmsnorm_bf16_v4'],
  ] as const) {
    assert.is(dev.kernels.startsEarly(file, name), want, `${file} ${name} on ${info.arch}`);
  }
  console.log(`grid-dep: ${info.arch}: kernels ${want ? 'start early' : 'start in order'}`);
});

/** 300 dependent steps of small kernels (a reduction, a broadcast, elementwise ops, a cast) and a
 *  BLAS product of four rows (cuBLAS / rocBLAS: our kernels after a library's launch in order)
 *  over fresh outputs each time, so a step that ran ahead of the one before would read a stale
 *  or half-written value */
function chain(x: Tensor, w: Tensor, steps: number): Tensor {
  let y = x.mul(1);
  for (let i = 0; i < steps; i++) {
    const next = tidy(() => {
      const m = y.sum(-1, true); // [1, 1]
      const z = y.add(1).sub(m.mul(0)).toDtype('bf16').toDtype('f32');
      return z
        .matmul(w)
        .mul(1 / 64)
        .add(z.mul(0.5));
    });
    y.dispose();
    y = next;
  }
  return y;
}

s.test('grid-dep: a chain of 300 dependent steps equals the CPU, eagerly and replayed', async (dev) => {
  const n = 64;
  // the identity keeps the product exact: y -> (y + 1) rounded to bf16, times 33 / 64
  const x = Tensor.from(
      Array.from({ length: 4 * n }, (_, i) => i % 5),
      { shape: [4, n] },
    ),
    w = Tensor.eye(n).mul(1);
  const want = Array.from(await chain(x, w, 300).toArray(), Number);
  const xd = x.to(dev),
    wd = w.to(dev);
  const got = chain(xd, wd, 300);
  assert.equal(Array.from(await got.toArray(), Number), want, 'eager');
  got.dispose();
  const g = dev.captureGraph(() => chain(xd, wd, 100));
  for (let r = 0; r < 3; r++) {
    g.replay();
    assert.equal(
      Array.from(await g.outputs.toArray(), Number),
      Array.from(await chain(x, w, 100).toArray(), Number),
      `replay ${r}`,
    );
  }
  g.dispose();
  xd.dispose();
  wd.dispose();
});

s.run();
