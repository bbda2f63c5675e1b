// The fused linear layers of a decode step (ops/linear.ts, hip-src/gemv-fused.hip) against the
// CPU, which composes them from separate ops: one row through W with every combination of
// RMSNorm before, bias, SwiGLU and residual after; row counts that split a row over several
// waves and that do not; k that takes 16-byte loads and k that does not; several rows and f64
// (composed on the GPU too). Then q/k/v of one token: rotary embedding, the cache write at a host
// or device-held position (whole caches only: non-contiguous ones are rejected on both), GQA, bias, caches narrowed from a longer one. Every dtype, layout.
import { gpuSuite, checkOp, LAYOUTS, FLOAT_DTYPES } from './harness.ts';
import { Tensor, qkvToCache, type DType, type LinearOptions } from '../../src/index.ts';
import { randT } from '../helpers.ts';

const s = gpuSuite('gpu/linear-fused');
const r = (shape: number[], d: DType, lo = -1, hi = 1) => randT(shape, d, lo, hi);

interface LinearCase {
  name: string;
  x: number[];
  n: number;
  norm?: boolean;
  bias?: boolean;
  swiglu?: boolean;
  residual?: boolean;
}
const LINEAR: readonly LinearCase[] = [
  { name: 'one row [1, 256] x W [40, 256]: split over waves', x: [1, 256], n: 40 },
  { name: 'one row, 3000 outputs (split only on NVIDIA)', x: [1, 512], n: 3000 },
  { name: 'norm', x: [1, 264], n: 77, norm: true },
  { name: 'bias + residual', x: [1, 1, 256], n: 96, bias: true, residual: true },
  { name: 'norm + swiglu', x: [1, 256], n: 130, norm: true, swiglu: true },
  {
    name: 'norm + swiglu + bias + residual, odd k',
    x: [1, 37],
    n: 50,
    norm: true,
    swiglu: true,
    bias: true,
    residual: true,
  },
  // more units than a capped SwiGLU grid holds at once on a 132-multiprocessor GPU (4 blocks of 8
  // units each): blocks walk them grid-stride
  { name: 'swiglu, 4500 outputs (grid-stride on NVIDIA)', x: [1, 64], n: 4500, swiglu: true, residual: true },
  { name: 'long k [1, 4104]', x: [1, 4104], n: 24, norm: true, residual: true },
  { name: 'several rows (composed) [3, 64]', x: [3, 64], n: 33, norm: true, swiglu: true, bias: true, residual: true },
];

s.opTest(
  'linear',
  async () => {
    for (const c of LINEAR) {
      const k = c.x.at(-1)!,
        rows = c.swiglu ? 2 * c.n : c.n;
      await checkOp(
        'linear',
        FLOAT_DTYPES,
        LAYOUTS,
        (d) => {
          const ins = [r(c.x, d, -2, 2), r([rows, k], d)];
          if (c.norm) ins.push(r([k], d, 0.5, 1.5));
          if (c.bias) ins.push(r([rows], d));
          if (c.residual) ins.push(r([...c.x.slice(0, -1), c.n], d, -2, 2));
          return ins;
        },
        (ins) => {
          let i = 2;
          const o: LinearOptions = {
            ...(c.norm ? { norm: { weight: ins[i++]!, eps: 1e-5 } } : {}),
            ...(c.bias ? { bias: ins[i++]! } : {}),
            ...(c.residual ? { residual: ins[i++]! } : {}),
            ...(c.swiglu ? { act: 'swiglu' as const } : {}),
          };
          return ins[0]!.linear(ins[1]!, o);
        },
        { variant: c.name },
      );
    }
  },
  'linear: one row fused (norm, bias, swiglu, residual), several rows composed',
);

interface QkvCase {
  name: string;
  hidden: number;
  heads: number;
  kv: number;
  d: number;
  len: number;
  pos: number;
  bias?: boolean;
  norm?: boolean;
  device?: boolean;
  narrowFrom?: number;
}
const QKV: readonly QkvCase[] = [
  { name: 'GQA 4/2, d 64, norm, host position', hidden: 128, heads: 4, kv: 2, d: 64, len: 20, pos: 7, norm: true },
  {
    name: 'MHA 2/2, d 80, bias, device position',
    hidden: 96,
    heads: 2,
    kv: 2,
    d: 80,
    len: 9,
    pos: 8,
    bias: true,
    device: true,
  },
  {
    name: 'MQA 4/1, d 16, odd hidden, norm + bias',
    hidden: 45,
    heads: 4,
    kv: 1,
    d: 16,
    len: 5,
    pos: 0,
    norm: true,
    bias: true,
  },
  {
    name: 'cache narrowed from 32 positions',
    hidden: 64,
    heads: 2,
    kv: 1,
    d: 32,
    len: 12,
    pos: 11,
    norm: true,
    narrowFrom: 32,
  },
];

s.opTest(
  'qkvToCache',
  async () => {
    for (const c of QKV) {
      const rows = (c.heads + 2 * c.kv) * c.d,
        full = c.narrowFrom ?? c.len;
      await checkOp(
        'qkvToCache',
        FLOAT_DTYPES,
        LAYOUTS,
        (d) => [
          r([1, 1, c.hidden], d, -2, 2),
          r([rows, c.hidden], d),
          r([c.len + 3, c.d / 2], d),
          r([c.len + 3, c.d / 2], d),
          // fresh random caches: every entry not written must come back unchanged
          r([1, c.kv, full, c.d], d),
          r([1, c.kv, full, c.d], d),
          r([c.hidden], d, 0.5, 1.5),
          r([rows], d),
        ],
        (ins) => {
          const [x, w, cos, sin, kAll, vAll, g, b] = ins as [
            Tensor,
            Tensor,
            Tensor,
            Tensor,
            Tensor,
            Tensor,
            Tensor,
            Tensor,
          ];
          const keys = c.narrowFrom ? kAll.narrow(2, 0, c.len) : kAll,
            values = c.narrowFrom ? vAll.narrow(2, 0, c.len) : vAll;
          const pos = c.device ? Tensor.from(new Uint32Array([c.pos]), { device: x.device }) : c.pos;
          const q = qkvToCache({
            x,
            weight: w,
            cos,
            sin,
            pos,
            keys,
            values,
            heads: c.heads,
            kvHeads: c.kv,
            headDim: c.d,
            ...(c.norm ? { norm: { weight: g, eps: 1e-6 } } : {}),
            ...(c.bias ? { bias: b } : {}),
          });
          return Tensor.cat([q.reshape([-1]), kAll.reshape([-1]), vAll.reshape([-1])], 0);
          // a device-held position writes whole caches only (views are rejected: see the error test)
        },
        { variant: c.name, fixed: c.device ? [2, 3, 4, 5] : [2, 3] },
      );
    }
  },
  'qkvToCache: rotary q/k and the cache write of one token',
);

s.test('linear and qkvToCache: argument errors name the op and shapes', (dev) => {
  const x = Tensor.zeros([1, 8], { dtype: 'bf16', device: dev }),
    w = Tensor.zeros([6, 8], { dtype: 'bf16', device: dev });
  const expectThrow = (fn: () => unknown, re: RegExp) => {
    let err: unknown = null;
    try {
      fn();
    } catch (e) {
      err = e;
    }
    if (!(err instanceof Error) || !re.test(err.message))
      throw new Error(`expected an error matching ${re}, got ${String(err)}`);
  };
  expectThrow(
    () => x.linear(Tensor.zeros([6, 9], { dtype: 'bf16', device: dev })),
    /linear: x \[1, 8\] bf16 has 8 features, weight \[6, 9\] bf16 takes 9/,
  );
  expectThrow(
    () => x.linear(Tensor.zeros([5, 8], { dtype: 'bf16', device: dev }), { act: 'swiglu' }),
    /linear: swiglu needs .* even row count/,
  );
  expectThrow(
    () => x.linear(w, { residual: Tensor.zeros([1, 5], { dtype: 'bf16', device: dev }) }),
    /linear: residual must be \[1, 6\]/,
  );
  expectThrow(() => x.linear(Tensor.zeros([6, 8], { dtype: 'f32', device: dev })), /linear: dtype mismatch/);
  const cache = Tensor.zeros([1, 1, 4, 2], { dtype: 'bf16', device: dev }),
    tab = Tensor.zeros([4, 1], { dtype: 'bf16', device: dev });
  const qkvW = Tensor.zeros([(2 + 2) * 2, 8], { dtype: 'bf16', device: dev });
  expectThrow(
    () =>
      qkvToCache({
        x,
        weight: qkvW,
        cos: tab,
        sin: tab,
        pos: 4,
        keys: cache,
        values: cache,
        heads: 2,
        kvHeads: 1,
        headDim: 2,
      }),
    /qkvToCache: position 4 outside the cache and rotary tables \(4 positions\)/,
  );
  expectThrow(
    () =>
      qkvToCache({
        x,
        weight: qkvW,
        cos: tab,
        sin: tab,
        pos: 0,
        keys: cache,
        values: cache,
        heads: 3,
        kvHeads: 1,
        headDim: 2,
      }),
    /qkvToCache: weight must be \[10, 8\]/,
  );
  const at = Tensor.from(new Uint32Array([1]), { device: dev }),
    view = Tensor.zeros([1, 1, 2, 4], { dtype: 'bf16', device: dev }).transpose(2, 3);
  expectThrow(
    () =>
      qkvToCache({
        x,
        weight: Tensor.zeros([3 * 2, 8], { dtype: 'bf16', device: dev }),
        cos: tab,
        sin: tab,
        pos: at,
        keys: view,
        values: view,
        heads: 1,
        kvHeads: 1,
        headDim: 2,
      }),
    /qkvToCache: with a device-held position, keys \[1, 1, 4, 2\] bf16 must be contiguous/,
  );
});

s.run();
