// localResponseNorm and its input gradient composed from other ops, for what the GPU libraries'
// LRN does not do exactly: even windows (both libraries centre them one channel off PyTorch's, and
// MIOpen's header allows odd windows only) and f64 (not among the dtypes MIOpen's LRN is known to
// take). It is PyTorch's own construction: the window sums of squares are an average pool over the
// channels (x^2 seen as [n, 1, c, inner], window [size, 1], padded floor(size / 2) on both sides,
// padded cells counted), whose first c rows hold PyTorch's windows; for an even window, rows 1..c
// hold the mirrored ones the gradient sums over. Half dtypes compute in f32.
import type { DType } from '../core/dtype.ts';
import type { RawTensor } from '../device/raw-tensor.ts';
import type { LrnSettings } from '../backends/lrn-options.ts';
import { cast } from './cast.ts';
import { reshape } from './copy.ts';
import { binary, paramUnary, unary } from './elementwise.ts';
import { avgPool2d } from './pool.ts';
import { scoped } from './scoped.ts';

type Keep = (t: RawTensor) => RawTensor;

const work = (d: DType): DType => (d === 'f16' || d === 'bf16' ? 'f32' : d);

/** t in the working dtype (a cast kept, or a view) */
const inWork = (t: RawTensor, keep: Keep): RawTensor =>
  keep(t.dtype === work(t.dtype) ? t.view(t.layout) : cast(t, work(t.dtype)));

/** [n, 1, c, inner] view-or-copy of x ([n, c, ...]) */
function asColumns(x: RawTensor, keep: Keep): RawTensor {
  const s = x.layout.shape;
  let inner = 1;
  for (let i = 2; i < s.length; i++) inner *= s[i]!;
  return keep(reshape(x, [s[0]!, 1, s[1]!, inner]));
}

/** the window means of v over channels, rows [from, from + c) of the padded pool, in x's shape */
function windowMeans(v: RawTensor, x: RawTensor, size: number, from: number, keep: Keep): RawTensor {
  const c = x.layout.shape[1]!;
  const half = Math.floor(size / 2);
  const pooled = keep(
    avgPool2d(asColumns(v, keep), { kernel: [size, 1], stride: 1, padding: [half, 0], countIncludePad: true }),
  );
  // an odd window gives c rows (from is 0); an even one c + 1
  const rows = keep(pooled.narrow(2, from, c));
  return keep(reshape(rows, x.layout.shape));
}

/** base = k + alpha * mean of the squares over PyTorch's window (alpha / size times the sum) */
function base(xw: RawTensor, p: LrnSettings, keep: Keep): RawTensor {
  const sq = keep(unary(xw, 'sqr'));
  return keep(paramUnary(windowMeans(sq, xw, p.size, 0, keep), { op: 'affine', a: p.alpha, b: p.k }));
}

export function lrnComposed(x: RawTensor, p: LrnSettings): RawTensor {
  return scoped((keep) => {
    const xw = inWork(x, keep);
    const scale = keep(paramUnary(base(xw, p, keep), { op: 'powf', a: -p.beta, b: 0 }));
    const y = binary('mul', xw, scale);
    if (y.dtype === x.dtype) return y;
    keep(y);
    return cast(y, x.dtype);
  });
}

/** dx = dy d^-beta - 2 alpha beta x * (means over the mirrored windows of dy x d^(-beta - 1)) */
export function lrnBackwardComposed(x: RawTensor, dy: RawTensor, p: LrnSettings): RawTensor {
  return scoped((keep) => {
    const xw = inWork(x, keep),
      gw = inWork(dy, keep);
    const d = base(xw, p, keep);
    const direct = keep(binary('mul', gw, keep(paramUnary(d, { op: 'powf', a: -p.beta, b: 0 }))));
    const t = keep(
      binary('mul', keep(binary('mul', gw, xw)), keep(paramUnary(d, { op: 'powf', a: -p.beta - 1, b: 0 }))),
    );
    // channel c's window [c - size / 2, c + (size - 1) / 2] holds j when c is in
    // [j - (size - 1) / 2, j + size / 2]: pooled row j + 1 for an even window, j for an odd one
    const spread = windowMeans(t, xw, p.size, p.size % 2 === 0 ? 1 : 0, keep);
    const cross = keep(binary('mul', xw, keep(paramUnary(spread, { op: 'affine', a: -2 * p.alpha * p.beta, b: 0 }))));
    const dx = binary('add', direct, cross);
    if (dx.dtype === x.dtype) return dx;
    keep(dx);
    return cast(dx, x.dtype);
  });
}
