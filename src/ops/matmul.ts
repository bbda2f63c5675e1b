// matmul: PyTorch's rules. Rank >= 2 operands multiply their last two dims and broadcast the
// batch dims; a 1-d left operand is a row ([k] -> [1, k]) and a 1-d right operand a column
// ([k] -> [k, 1]), the added dim dropped from the result.
import { broadcastShapes, type Shape } from '../core/layout.ts';
import { ShapeError } from '../core/errors.ts';
import type { RawTensor } from '../device/raw-tensor.ts';
import { FLOATS, dtypeIn, sameDType, sameDevice, sig } from '../backends/checks.ts';
import * as cpu from '../backends/cpu/matmul.ts';
import * as gpu from '../backends/gpu/matmul.ts';
import { defineOp } from './registry.ts';

type Backend = (a: RawTensor, b: RawTensor, outShape: Shape) => RawTensor;

/** the backend's product over matrices: 1-d operands as row or column views (no copies: the GPU
 *  path maps these strides onto BLAS), the added dims dropped from the result */
function product(mm: Backend, a: RawTensor, b: RawTensor, outShape: Shape): RawTensor {
  if (a.rank > 1 && b.rank > 1) return mm(a, b, outShape);
  const a2 = a.rank === 1 ? a.unsqueeze(0) : a;
  const b2 = b.rank === 1 ? b.unsqueeze(1) : b;
  try {
    const full = mm(a2, b2, outShape);
    let l = full.layout;
    if (b.rank === 1) l = l.squeeze(l.rank - 1);
    if (a.rank === 1) l = l.squeeze(l.rank - (b.rank === 1 ? 1 : 2));
    try {
      return full.view(l);
    } finally {
      full.dispose();
    }
  } finally {
    if (a2 !== a) a2.dispose();
    if (b2 !== b) b2.dispose();
  }
}

export const matmul = defineOp({
  name: 'matmul',
  family: 'linear algebra',
  summary: 'batched matrix product, broadcasting batch dims; 1-d operands as in PyTorch',
  dtypes: FLOATS,
  check: (a: RawTensor, b: RawTensor): [RawTensor, RawTensor, Shape] => {
    const op = 'matmul';
    sameDevice(op, a, b);
    dtypeIn(op, a, FLOATS);
    sameDType(op, a, b);
    if (a.rank === 0 || b.rank === 0)
      throw new ShapeError(`${op}: operands must have rank >= 1 (${sig(a)} x ${sig(b)})`);
    const sa = a.rank === 1 ? [1, a.layout.shape[0]!] : a.layout.shape;
    const sb = b.rank === 1 ? [b.layout.shape[0]!, 1] : b.layout.shape;
    const m = sa[sa.length - 2]!,
      k = sa[sa.length - 1]!,
      kb = sb[sb.length - 2]!,
      n = sb[sb.length - 1]!;
    if (k !== kb) throw new ShapeError(`${op}: inner dims differ (${sig(a)} x ${sig(b)}: ${k} vs ${kb})`);
    let batch: number[];
    try {
      batch = broadcastShapes(op, sa.slice(0, -2), sb.slice(0, -2));
    } catch {
      throw new ShapeError(`${op}: batch dims cannot be broadcast (${sig(a)} x ${sig(b)})`);
    }
    return [a, b, [...batch, m, n]];
  },
  cpu: (a, b, s) => product(cpu.matmul, a, b, s),
  gpu: (a, b, s) => product(gpu.matmul, a, b, s),
  grad: 'missing',
});
