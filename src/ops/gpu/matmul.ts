// GPU matmul on rocBLAS / cuBLAS: one strided-batched GEMM. BLAS is column-major, so the
// row-major C[m, n] = A[m, k] B[k, n] is computed as C^T = B^T A^T: B's data is BLAS's A and A's
// data BLAS's B. A transposed operand is a BLAS transpose flag and a broadcast batch a batch
// stride of 0, so neither is copied; only layouts BLAS cannot describe are made contiguous.
import { numel, type Shape } from '../../layout.ts';
import { Tensor } from '../../tensor.ts';
import type { BlasDType } from '../../runtime/gpu.ts';
import { contiguous, constSet } from '../copy.ts';
import { arg } from '../../runtime/kernels.ts';
import { base, offsetOf } from './reduce.ts';

interface BlasOperand { t: Tensor; trans: boolean; ld: number; batchStride: number; owned: boolean }

/** how a row-major [rows, cols] matrix with these strides looks to column-major BLAS */
function matrixView(rows: number, cols: number, sr: number, sc: number): { trans: boolean; ld: number } | null {
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
function batchStride(t: Tensor, batch: Shape): number | null {
  const l = t.layout.broadcastAs([...batch, ...t.layout.shape.slice(-2)]);
  const st = l.strides.slice(0, batch.length);
  let s: number | null = null, inner = 1;
  for (let j = batch.length - 1; j >= 0; j--) {
    if (batch[j] === 1) continue;
    if (s === null) s = st[j]!;
    else if (st[j] !== s * inner) return null;
    inner *= batch[j]!;
  }
  return s ?? 0;
}

function operand(t: Tensor, batch: Shape): BlasOperand {
  const sh = t.layout.shape, st = t.layout.strides, r = sh.length;
  const mv = matrixView(sh[r - 2]!, sh[r - 1]!, st[r - 2]!, st[r - 1]!);
  const bs = batchStride(t, batch);
  if (mv && bs !== null) return { t, ...mv, batchStride: bs, owned: false };
  // BLAS cannot address this layout: materialize it broadcast to the full batch
  const full = t.broadcastAs([...batch, sh[r - 2]!, sh[r - 1]!]);
  const c = contiguous(full);
  full.dispose();
  const m = sh[r - 2]!, n = sh[r - 1]!;
  return { t: c, trans: false, ld: Math.max(n, 1), batchStride: m * n, owned: true };
}

// ---- one row times a weight: hip-src/gemv.hip ---------------------------------------------
const GEMV_DTYPES: ReadonlySet<string> = new Set(['f32', 'f16', 'bf16']);
const GEMV_BLOCK = 256;
const GEMV_BLOCK_DIMS: [number, number, number] = [GEMV_BLOCK, 1, 1];

/**
 * One row x [k] times a weight seen transposed (b [k, n] with unit stride along k: W [n, k] with
 * contiguous rows, as nn.Linear keeps it): one GEMV launch instead of a BLAS call, which costs
 * several times its host time (see gemv.hip). Returns false where it does not apply.
 */
function gemv(a: Tensor, b: Tensor, out: Tensor, n: number, k: number): boolean {
  if (b.rank !== 2 || !GEMV_DTYPES.has(a.dtype) || k > 0xffffffff || n > 0xffffffff) return false;
  const [sk, sn] = b.layout.strides as [number, number];
  if (!(sk === 1 || k === 1) || !(sn >= k || n === 1)) return false;
  const x = a.layout.isContiguous() ? a : contiguous(a);
  try {
    const dev = a.device, { warpSize, maxGridDim } = dev.runtime.info;
    const grid = Math.min(Math.ceil(n / (GEMV_BLOCK / warpSize)), maxGridDim[0]);
    dev.kernels.launch('gemv.hip', `gemv_${a.dtype}`, [grid, 1, 1], GEMV_BLOCK_DIMS, 0, dev.stream, [
      base(out), base(x), base(b), offsetOf(out), offsetOf(x), offsetOf(b), arg.u32(n), arg.u32(k), arg.u64(n === 1 ? k : sn)]);
  } finally {
    if (x !== a) x.dispose();
  }
  return true;
}
export function matmul(a: Tensor, b: Tensor, outShape: Shape): Tensor {
  const out = Tensor.empty(outShape, a.dtype, a.device);
  const r = outShape.length;
  const m = outShape[r - 2]!, n = outShape[r - 1]!, k = a.layout.shape[a.rank - 1]!;
  const batch = outShape.slice(0, -2);
  const count = numel(batch);
  if (out.numel === 0) return out;
  if (k === 0) { constSet(out, 0); return out; }
  if (count * m === 1 && gemv(a, b, out, n, k)) return out;
  const A = operand(a, batch), B = operand(b, batch);
  try {
    a.device.runtime.blas().gemmStridedBatched({
      dtype: a.dtype as BlasDType,
      transA: B.trans, transB: A.trans,
      m: n, n: m, k,
      alpha: 1, beta: 0,
      a: B.t.storage.ptrAt(B.t.layout.offset), lda: B.ld, strideA: B.batchStride,
      b: A.t.storage.ptrAt(A.t.layout.offset), ldb: A.ld, strideB: A.batchStride,
      c: out.storage.ptrAt(0), ldc: n, strideC: m * n,
      batch: count,
    }, a.device.stream);
  } finally {
    if (A.owned) A.t.dispose();
    if (B.owned) B.t.dispose();
  }
  return out;
}
