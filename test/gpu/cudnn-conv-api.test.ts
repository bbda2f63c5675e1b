// cuDNN's two ways to a convolution agree: execution plans of the graph API (the default) and the
// legacy entry points, on the same inputs, for the forward, the data gradient (transposed
// convolutions) and the weight gradient, in every float dtype. (Both are checked against the CPU
// reference by ops-dnn and grad; this pins the graph path to the legacy one on NVIDIA.)
import * as assert from 'uvu/assert';
import { gpuSuite, compareNorm, FLOAT_DTYPES } from './harness.ts';
import type { Device, Tensor } from '../../src/index.ts';
import { cudnnTuning } from '../../src/runtime/cuda/cudnn.ts';
import { randT } from '../helpers.ts';

const s = gpuSuite('gpu/cudnn-conv-api', { needsRuntime: true });
const TOL: Record<string, number> = { f32: 1e-5, f64: 1e-12, f16: 2e-3, bf16: 1e-2 };

// [variant, x shape, w shape, padding, stride, dilation, groups]
const CASES: readonly [string, number[], number[], number, number, number, number][] = [
  ['3x3 padding 1', [4, 8, 16, 16], [16, 8, 3, 3], 1, 1, 1, 1],
  ['stride 2', [2, 6, 15, 13], [10, 6, 3, 3], 1, 2, 1, 1],
  ['dilation 2, groups 2', [2, 8, 12, 12], [8, 4, 3, 3], 2, 1, 2, 2],
  ['1x1', [3, 16, 7, 9], [32, 16, 1, 1], 0, 1, 1, 1],
];

/** the same data on the device for each API (fresh draws per run would compare two unrelated results) */
const onDev = (t: Tensor, dev: Device) => t.to(dev);
const values = async (ts: Tensor[]) => Promise.all(ts.map(async (t) => Array.from(await t.toArray(), Number)));

/** conv2d's output, and the gradients of sum(out * g) for x and w, under one conv API */
async function run(dev: Device, api: 'graph' | 'legacy', host: { x: Tensor; w: Tensor; g: Tensor }, o: number[]) {
  const [pad, stride, dil, groups] = o as [number, number, number, number];
  cudnnTuning.convApi = api;
  try {
    const x = onDev(host.x, dev);
    const w = onDev(host.w, dev);
    x.requiresGrad = true;
    w.requiresGrad = true;
    const y = x.conv2d(w, { padding: pad, stride, dilation: dil, groups });
    const g = onDev(host.g, dev);
    y.mul(g).sum().backward();
    const out = await values([y, x.grad!, w.grad!]);
    for (const t of [x, w, y, g]) t.dispose();
    return out;
  } finally {
    cudnnTuning.convApi = 'graph';
  }
}

s.test('conv2d forward, data and weight gradients: graph-API plans match the legacy calls', async (dev) => {
  if (dev.runtime.info.vendor !== 'cuda') return;
  for (const [variant, xs, ws, ...o] of CASES) {
    for (const d of FLOAT_DTYPES) {
      const [pad, stride, dil, groups] = o as [number, number, number, number];
      const x = randT(xs, d, -1, 1);
      const w = randT(ws, d, -1, 1);
      const ys = x.conv2d(w, { padding: pad, stride, dilation: dil, groups }).shape;
      const host = { x, w, g: randT([...ys], d, -1, 1) };
      const legacy = await run(dev, 'legacy', host, o);
      const graph = await run(dev, 'graph', host, o);
      for (const t of Object.values(host)) t.dispose();
      ['out', 'dx', 'dw'].forEach((name, i) => {
        const c = compareNorm(graph[i]!, legacy[i]!, TOL[d]!);
        assert.ok(c.ok, `${variant} ${d} ${name}: error ${c.err} ${c.note}`);
      });
    }
  }
});

s.test('a transposed convolution (the data gradient as a forward) agrees too', async (dev) => {
  if (dev.runtime.info.vendor !== 'cuda') return;
  const once = async (api: 'graph' | 'legacy', hx: Tensor, hw: Tensor) => {
    cudnnTuning.convApi = api;
    try {
      const x = onDev(hx, dev);
      const w = onDev(hw, dev);
      const y = x.convTranspose2d(w, { stride: 2, padding: 1, outputPadding: 1 });
      const [v] = await values([y]);
      for (const t of [x, w, y]) t.dispose();
      return v!;
    } finally {
      cudnnTuning.convApi = 'graph';
    }
  };
  for (const d of FLOAT_DTYPES) {
    const x = randT([2, 6, 7, 9], d, -1, 1);
    const w = randT([6, 4, 3, 3], d, -1, 1);
    const c = compareNorm(await once('graph', x, w), await once('legacy', x, w), TOL[d]!);
    x.dispose();
    w.dispose();
    assert.ok(c.ok, `convTranspose2d ${d}: error ${c.err} ${c.note}`);
  }
});

s.run();
