// GPU matmul on rocBLAS / cuBLAS: one strided-batched GEMM. BLAS is column-major, so the
// row-major C[m, n] = A[m, k] B[k, n] is computed as C^T = B^T A^T: B's data is BLAS's A and A's
// data BLAS's B. A transposed operand is a BLAS transpose flag and a broadcast batch a batch
// stride of 0, so neither is copied; only layouts BLAS cannot describe are made contiguous.
import { numel, type Shape } from '../../core/layout.ts';
import { RawTensor } from '../../device/raw-tensor.ts';
import type { BlasDType } from '../../runtime/gpu.ts';
import { contiguous, constSet } from './copy.ts';
import { linearRow } from './gemv-fused.ts';

interface BlasOperand {
  t: RawTensor;
  trans: boolean;
  ld: number;
  batchStride: number;
  owned: boolean;
}

/** how a row-major [rows, cols] matrix with these strides looks to column-major BLAS; null where
 *  it cannot be handed over without a copy (also the 1x1 convolution route's test, gpu/conv-gemm.ts) */
export function matrixView(rows: number, cols: number, sr: number, sc: number): { trans: boolean; ld: number } | null {
  // column-major view of the row-major data is [cols, rows] with leading dim sr
  if (sc === 1 || cols === 1) {
    const ld = rows === 1 ? Math.max(cols, 1) : sr;
    if (ld >= Math.max(cols, 1)) return { trans: false, ld };
  }
  // stored transposed: the data is a column-major [rows, cols] with leading dim sc
  if (sr === 1 || rows === 1) {
    const ld = cols === 1 ? Math.max(rows, 1) : sc;
    if (ld >= Math.max(rows, 1)) return { trans: true, ld };
  }
  return null;
}

/** one stride s with batch element i at i * s, for the operand broadcast to `batch` */
function batchStride(t: RawTensor, batch: Shape): number | null {
  const l = t.layout.broadcastAs([...batch, ...t.layout.shape.slice(-2)]);
  const st = l.strides.slice(0, batch.length);
  let s: number | null = null,
    inner = 1;
  for (let j = batch.length - 1; j >= 0; j--) {
    if (batch[j] === 1) continue;
    if (s === null) s = st[j]!;
    else if (st[j] !== s * inner) return null;
    inner *= batch[j]!;
  }
  return s ?? 0;
}

function operand(t: RawTensor, batch: Shape): BlasOperand {
  const sh = t.layout.shape,
    st = t.layout.strides,
    r = sh.length;
  const mv = matrixView(sh[r - 2]!, sh[r - 1]!, st[r - 2]!, st[r - 1]!);
  const bs = batchStride(t, batch);
  // fields spelled out: V8 (Node 20) builds `{ t, ...mv, more }` on a slow path, microseconds a call
  if (mv && bs !== null) return { t, trans: mv.trans, ld: mv.ld, batchStride: bs, owned: false };
  // BLAS cannot address this layout: materialize it broadcast to the full batch
  const full = t.broadcastAs([...batch, sh[r - 2]!, sh[r - 1]!]);
  const c = contiguous(full);
  full.dispose();
  const m = sh[r - 2]!,
    n = sh[r - 1]!;
  return { t: c, trans: false, ld: Math.max(n, 1), batchStride: m * n, owned: true };
}

export function matmul(a: RawTensor, b: RawTensor, outShape: Shape): RawTensor {
  const r = outShape.length;
  const m = outShape[r - 2]!,
    n = outShape[r - 1]!,
    k = a.layout.shape[a.rank - 1]!;
  const batch = outShape.slice(0, -2);
  const count = numel(batch);
  if (count * m === 1 && n > 0 && k > 0 && b.rank === 2) {
    // one row times a weight seen transposed (W [n, k] as nn.Linear keeps it): one GEMV launch
    // (gemv-fused.hip, nothing folded in) instead of a BLAS call, which costs several times its
    // host time; null where W's layout does not suit the kernel
    const w = b.T;
    try {
      const y = linearRow(a, w, {}, n, k, outShape);
      if (y) return y;
    } finally {
      w.dispose();
    }
  }
  const out = RawTensor.empty(outShape, a.dtype, a.device);
  if (out.numel === 0) return out;
  if (k === 0) {
    constSet(out, 0);
    return out;
  }
  const A = operand(a, batch),
    B = operand(b, batch);
  try {
    a.device.runtime.blas().gemmStridedBatched(
      {
        dtype: a.dtype as BlasDType,
        transA: B.trans,
        transB: A.trans,
        m: n,
        n: m,
        k,
        alpha: 1,
        beta: 0,
        a: B.t.storage.ptrAt(B.t.layout.offset),
        lda: B.ld,
        strideA: B.batchStride,
        b: A.t.storage.ptrAt(A.t.layout.offset),
        ldb: A.ld,
        strideB: A.batchStride,
        c: out.storage.ptrAt(0),
        ldc: n,
        strideC: m * n,
        batch: count,
      },
      a.device.stream,
    );
  } finally {
    if (A.owned) A.t.dispose();
    if (B.owned) B.t.dispose();
  }
  return out;
}
