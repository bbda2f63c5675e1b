// The 1x1-convolution GEMM route (src/backends/gpu/conv-gemm.ts) without a GPU: which layouts and
// options take it (and with which views), and the same views run through the CPU reference
// matmul against the CPU convolution, in every float dtype and layout, with and without bias.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Layout } from '../../src/core/layout.ts';
import { Tensor, liveTensors, tidy, type DType } from '../../src/index.ts';
import type { RawTensor } from '../../src/device/raw-tensor.ts';
import type { Conv2dParams } from '../../src/core/op-types.ts';
import { conv1x1Gemm, gemmConvRoute, type GemmConvRoute } from '../../src/backends/gpu/conv-gemm.ts';
import { matrixView } from '../../src/backends/gpu/matmul.ts';
import { matmul as cpuMatmul } from '../../src/backends/cpu/matmul.ts';
import { contiguous } from '../../src/ops/copy.ts';
import { randT, withLayout, LAYOUTS, relErr, TOL } from '../helpers.ts';

const FLOATS: readonly DType[] = ['f32', 'f64', 'f16', 'bf16'];
const geo = (o: Partial<Conv2dParams> = {}): Conv2dParams => ({
  padding: [0, 0],
  stride: [1, 1],
  dilation: [1, 1],
  groups: 1,
  ...o,
});
const L = (shape: number[], strides: number[], offset = 0) => new Layout(shape, strides, offset);
const W = (cOut: number, cIn: number, k: [number, number] = [1, 1]) => Layout.contiguous([cOut, cIn, ...k]);

/** the route as a short string: 'batched [shape] [strides] @offset', 'folded ...', 'copy' or 'dnn' */
function describe(r: GemmConvRoute | null): string {
  if (!r) return 'dnn';
  if (r.copy) return 'copy';
  const x = r.view.x;
  return `${r.view.kind} [${x.shape.join(',')}] [${x.strides.join(',')}] @${x.offset}`;
}
const route = (x: Layout, w: Layout, p: Conv2dParams = geo(), d: DType = 'bf16') => describe(gemmConvRoute(d, x, w, p));

// ---- routing -------------------------------------------------------------------------------

test('route: contiguous NCHW 1x1 is one strided-batched GEMM over the images, every float dtype', () => {
  const x = Layout.contiguous([2, 8, 5, 7]);
  for (const d of FLOATS) assert.is(route(x, W(4, 8), geo(), d), 'batched [2,8,35] [280,35,1] @0', d);
  // the bench's conv2d 1x1 shape (cuDNN's own algorithm ran it at 0.18x PyTorch's speed, H200)
  assert.is(route(Layout.contiguous([32, 256, 56, 56]), W(256, 256)), 'batched [32,256,3136] [802816,3136,1] @0');
  // one image, and an input at an offset in its storage
  assert.is(route(Layout.contiguous([1, 3, 4, 4], 5), W(2, 3)), 'batched [1,3,16] [48,16,1] @5');
});

test('route: what stays on MIOpen / cuDNN (kernel, padding, groups, non-float dtypes)', () => {
  const x = Layout.contiguous([2, 8, 5, 7]);
  assert.is(route(x, W(4, 8, [3, 3])), 'dnn', '3x3');
  assert.is(route(x, W(4, 8, [1, 3])), 'dnn', '1x3');
  assert.is(route(x, W(4, 8, [3, 1])), 'dnn', '3x1');
  assert.is(route(x, W(4, 8), geo({ padding: [1, 1] })), 'dnn', 'padding 1');
  assert.is(route(x, W(4, 8), geo({ padding: [0, 1] })), 'dnn', 'padding [0, 1]');
  assert.is(route(x, W(4, 4), geo({ groups: 2 })), 'dnn', 'groups 2');
  assert.is(route(x, W(8, 1), geo({ groups: 8 })), 'dnn', 'depthwise');
  for (const d of ['u8', 'u32', 'i64'] as const) assert.is(route(x, W(4, 8), geo(), d), 'dnn', d);
});

test('route: dilation does not matter with one tap', () => {
  const x = Layout.contiguous([2, 8, 5, 7]);
  assert.is(route(x, W(4, 8), geo({ dilation: [2, 3] })), 'batched [2,8,35] [280,35,1] @0');
});

test('route: stride 1 on layouts BLAS cannot address copies x first (as the DNN path would)', () => {
  // spatial dims stored transposed: the pixels are not one strided run
  assert.is(route(L([2, 8, 5, 7], [280, 35, 1, 5]), W(4, 8)), 'copy');
  // narrowed in width: a gap after each row
  assert.is(route(L([2, 8, 5, 7], [600, 75, 15, 1], 3), W(4, 8)), 'copy');
  // channels broadcast (stride 0): no leading dimension
  assert.is(route(L([2, 8, 5, 7], [35, 0, 7, 1]), W(4, 8)), 'copy');
});

test('route: layouts BLAS addresses as they are (no copy)', () => {
  // narrowed over channels: the leading dimension grows
  assert.is(route(L([2, 8, 5, 7], [560, 35, 7, 1], 70), W(4, 8)), 'batched [2,8,35] [560,35,1] @70');
  // channels-last (NHWC storage): a transposed operand with leading dimension c
  assert.is(route(L([2, 8, 5, 7], [280, 1, 56, 8]), W(4, 8)), 'batched [2,8,35] [280,1,8] @0');
  // the batch broadcast (stride 0)
  assert.is(route(L([3, 8, 5, 7], [0, 35, 7, 1]), W(4, 8)), 'batched [3,8,35] [0,35,1] @0');
  // a width of 1: the rows are the pixels
  assert.is(route(L([2, 8, 5, 1], [40, 5, 1, 1]), W(4, 8)), 'batched [2,8,5] [40,5,1] @0');
});

test('route: one output pixel folds the images into one GEMM', () => {
  assert.is(route(Layout.contiguous([6, 8, 1, 1]), W(4, 8)), 'folded [6,8] [8,1] @0');
  // an unbatched input has a batch of 1
  assert.is(route(Layout.contiguous([1, 8, 1, 1], 2), W(4, 8)), 'folded [1,8] [8,1] @2');
  // channels strided, images dense: still one GEMM (BLAS's transposed operand)
  assert.is(route(L([6, 8, 1, 1], [1, 6, 1, 1]), W(4, 8)), 'folded [6,8] [1,6] @0');
  // neither dim unit-stride: one GEMV-shaped GEMM per image, still without a copy
  assert.is(route(L([6, 8, 1, 1], [40, 5, 1, 1]), W(4, 8)), 'batched [6,8,1] [40,5,1] @0');
});

test('route: a stride above 1 takes the GEMM only where the sampled input needs no copy', () => {
  // a contiguous input sampled at stride 2 is a gather: DNN
  assert.is(route(Layout.contiguous([2, 8, 5, 7]), W(4, 8), geo({ stride: [2, 2] })), 'dnn');
  assert.is(route(Layout.contiguous([2, 8, 5, 7]), W(4, 8), geo({ stride: [1, 2] })), 'dnn');
  // conv1d (h = 1) at stride 2 on a contiguous input: a pixel stride of 2 BLAS cannot take
  assert.is(route(L([2, 8, 1, 9], [72, 9, 72, 1]), W(4, 8), geo({ stride: [1, 2] })), 'dnn');
  // ... but on a channels-last input the sampled pixels are columns 2c apart: a GEMM
  assert.is(route(L([2, 8, 1, 9], [72, 1, 72, 8]), W(4, 8), geo({ stride: [1, 2] })), 'batched [2,8,5] [72,1,16] @0');
  // channels-last with a width of 1, stride 2 over the rows
  assert.is(route(L([2, 8, 5, 1], [40, 1, 8, 8]), W(4, 8), geo({ stride: [2, 1] })), 'batched [2,8,3] [40,1,16] @0');
  // one output pixel per image: each image's sampled pixel is a column
  assert.is(route(Layout.contiguous([3, 8, 2, 2]), W(4, 8), geo({ stride: [2, 2] })), 'batched [3,8,1] [32,4,4] @0');
  // stride past the image, one row: still one pixel (its stride within the image is moot)
  assert.is(route(Layout.contiguous([3, 8, 1, 3]), W(4, 8), geo({ stride: [1, 5] })), 'batched [3,8,1] [24,3,3] @0');
});

test('route: sampled views satisfy the GEMM layer without a copy', () => {
  // every non-copy view the table above produced is a matrix gpu/matmul.ts hands to BLAS as is
  const cases: [Layout, Conv2dParams][] = [
    [Layout.contiguous([2, 8, 5, 7]), geo()],
    [L([2, 8, 5, 7], [280, 1, 56, 8]), geo()],
    [L([2, 8, 1, 9], [72, 1, 72, 8]), geo({ stride: [1, 2] })],
    [Layout.contiguous([3, 8, 2, 2]), geo({ stride: [2, 2] })],
    [Layout.contiguous([6, 8, 1, 1]), geo()],
  ];
  for (const [x, p] of cases) {
    const r = gemmConvRoute('f32', x, W(4, 8), p);
    assert.ok(r && !r.copy, `route for [${x.shape}] [${x.strides}]`);
    const v = r.view.x,
      rk = v.rank;
    assert.ok(
      matrixView(v.shape[rk - 2]!, v.shape[rk - 1]!, v.strides[rk - 2]!, v.strides[rk - 1]!),
      `[${v.shape}] [${v.strides}]`,
    );
  }
});

// ---- the views through the CPU reference matmul ------------------------------------------

/** expect: the route of the contiguous input (other layouts may copy or batch instead) */
interface Case {
  name: string;
  x: number[];
  w: number[];
  p: Conv2dParams;
  bias: boolean;
  expect: 'batched' | 'folded';
}

const CASES: readonly Case[] = [
  { name: 'odd channels, bias', x: [2, 7, 5, 3], w: [5, 7, 1, 1], p: geo(), bias: true, expect: 'batched' },
  { name: 'batch 1, no bias', x: [1, 9, 4, 6], w: [13, 9, 1, 1], p: geo(), bias: false, expect: 'batched' },
  { name: 'one pixel (folded)', x: [5, 6, 1, 1], w: [3, 6, 1, 1], p: geo(), bias: true, expect: 'folded' },
  { name: 'one pixel, batch 1', x: [1, 6, 1, 1], w: [3, 6, 1, 1], p: geo(), bias: false, expect: 'folded' },
  { name: 'dilation 2', x: [2, 4, 5, 5], w: [3, 4, 1, 1], p: geo({ dilation: [2, 2] }), bias: true, expect: 'batched' },
  {
    name: 'stride 2 to one pixel',
    x: [3, 5, 2, 2],
    w: [4, 5, 1, 1],
    p: geo({ stride: [2, 2] }),
    bias: true,
    expect: 'batched',
  },
  { name: 'width 1', x: [2, 5, 6, 1], w: [3, 5, 1, 1], p: geo(), bias: false, expect: 'batched' },
  { name: 'no input channels', x: [2, 0, 3, 4], w: [5, 0, 1, 1], p: geo(), bias: true, expect: 'batched' },
];

/** the CPU reference matmul, recording the operands it was handed */
function recording(): { mm: typeof cpuMatmul; seen: RawTensor[] } {
  const seen: RawTensor[] = [];
  return {
    seen,
    mm: (a, b, out) => {
      seen.push(a, b);
      return cpuMatmul(a, b, out);
    },
  };
}

function outShape(x: number[], w: number[], p: Conv2dParams): number[] {
  const o = (i: number, d: 0 | 1) => Math.floor((i - 1) / p.stride[d]) + 1;
  return [x[0]!, w[0]!, o(x[2]!, 0), o(x[3]!, 1)];
}

test('conv1x1Gemm through the CPU matmul equals the CPU convolution: every float dtype and layout', () => {
  for (const c of CASES) {
    for (const d of FLOATS) {
      for (const kind of LAYOUTS)
        tidy(() => {
          const b = c.bias ? randT([c.w[0]!], d) : null;
          const { x, ref } = withLayout(randT(c.x, d, -1, 1), kind);
          const wl = withLayout(randT(c.w, d, -1, 1), kind);
          const label = `${c.name} ${d} ${kind}`;
          const r = gemmConvRoute(d, x.layout, wl.x.layout, c.p);
          assert.ok(r, `${label}: no GEMM route`);
          if (kind === 'contiguous') assert.is(describe(r).split(' ')[0], c.expect, label);
          const { mm, seen } = recording();
          const live = liveTensors().length;
          const y = Tensor.wrap(conv1x1Gemm(x, wl.x, c.p, r, outShape(c.x, c.w, c.p), { matmul: mm, contiguous }));
          assert.is(liveTensors().length, live + 1, `${label}: the route's temporaries are disposed`);
          const got = b ? y.add(b.reshape([1, -1, 1, 1])) : y;
          // the input reaches the matmul as a view of its own storage unless a copy was planned
          const xOperand = r.copy || r.view.kind === 'batched' ? seen[1]! : seen[0]!;
          assert.is(xOperand.storage === x.storage, !r.copy, `${label}: x read in place`);
          const want = ref.conv2d(wl.ref, { ...c.p, bias: b });
          assert.equal(got.shape, want.shape, label);
          const err = relErr(got.toArraySync() as ArrayLike<number>, want.toArraySync() as ArrayLike<number>);
          assert.ok(err <= TOL[d], `${label}: relative error ${err} > ${TOL[d]}`);
        });
    }
  }
});

test('conv1x1Gemm hands BLAS the input storage itself where the route plans no copy', () => {
  const x = randT([2, 8, 9], 'f32').transpose(1, 2).contiguous().transpose(1, 2); // conv1d input, channels-last
  const x4 = x.unsqueeze(2),
    w = randT([4, 8, 1, 1], 'f32');
  const p = geo({ stride: [1, 2] });
  const r = gemmConvRoute('f32', x4.layout, w.layout, p);
  assert.ok(r && !r.copy && r.view.kind === 'batched');
  let sawInput = false;
  const mm: typeof cpuMatmul = (a, b, out) => {
    sawInput ||= b.storage === x.storage;
    return cpuMatmul(a, b, out);
  };
  const got = Tensor.wrap(conv1x1Gemm(x4, w, p, r, [2, 4, 1, 5], { matmul: mm, contiguous }));
  assert.ok(sawInput, 'the matmul read x in place');
  const want = x.conv1d(w.squeeze(3), { stride: 2 });
  const err = relErr(
    got.reshape([2, 4, 5]).toArraySync() as ArrayLike<number>,
    want.toArraySync() as ArrayLike<number>,
  );
  assert.ok(err <= TOL.f32, `relative error ${err}`);
});

test('conv1x1Gemm with a copy: the matmul reads a contiguous copy, the result is the same', () => {
  const x = randT([2, 6, 5, 7], 'f32').transpose(2, 3).contiguous().transpose(2, 3);
  const w = randT([3, 6, 1, 1], 'f32');
  const r = gemmConvRoute('f32', x.layout, w.layout, geo());
  assert.equal(r, { copy: true });
  let sawInput = false;
  const mm: typeof cpuMatmul = (a, b, out) => {
    sawInput ||= b.storage === x.storage;
    return cpuMatmul(a, b, out);
  };
  const got = Tensor.wrap(conv1x1Gemm(x, w, geo(), r!, [2, 3, 5, 7], { matmul: mm, contiguous }));
  assert.not.ok(sawInput, 'x was copied first');
  const want = x.conv2d(w, {});
  assert.ok(relErr(got.toArraySync() as ArrayLike<number>, want.toArraySync() as ArrayLike<number>) <= TOL.f32);
});

test.run();
