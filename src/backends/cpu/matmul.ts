// CPU matmul. By default on BLAS or the built-in kernel (cpu/gemm.ts, which says where that
// changes the rounding); with the exact reference on (cpu/mode.ts) every product is summed in
// f64 in index order and rounded once to the dtype on store. Batch dims broadcast by stride 0:
// each batch's matrices are read in place, never copied out to the broadcast shape.
import { contiguousStrides, numel, type Shape } from '../../core/layout.ts';
import type { RawTensor } from '../../device/raw-tensor.ts';
import { fromRaw, forEachRun, gather, outArray, scatter, walk } from './util.ts';
import { gemm, gemmHalf, type F, type Mat } from './gemm.ts';
import { cpuExact } from './mode.ts';

/** a [...batchA, m, k], b [...batchB, k, n] -> [...batch, m, n] = outShape */
export function matmul(a: RawTensor, b: RawTensor, outShape: Shape): RawTensor {
  const r = outShape.length;
  const m = outShape[r - 2]!,
    n = outShape[r - 1]!,
    k = a.layout.shape[a.rank - 1]!;
  const batch = outShape.slice(0, -2);
  const la = a.layout.broadcastAs([...batch, m, k]),
    lb = b.layout.broadcastAs([...batch, k, n]);
  const dtype = a.dtype;
  const out = outArray(dtype, numel(outShape));
  const [ars, acs] = la.strides.slice(-2) as [number, number],
    [brs, bcs] = lb.strides.slice(-2) as [number, number];
  const exact = cpuExact();
  const one = (ao: number, bo: number, co: number, rows: number, rs: number) => {
    if (exact) return exactProduct(a, b, ao, rs, acs, bo, brs, bcs, out, co, rows, n, k);
    if (dtype === 'f16' || dtype === 'bf16') {
      const ha = a.storage.host as Uint16Array,
        hb = b.storage.host as Uint16Array;
      gemmHalf(
        dtype,
        { host: ha, off: ao, rs, cs: acs },
        { host: hb, off: bo, rs: brs, cs: bcs },
        out as Uint16Array,
        co,
        rows,
        n,
        k,
      );
    } else {
      const A: Mat = { host: a.storage.host as F, off: ao, rs, cs: acs },
        B: Mat = { host: b.storage.host as F, off: bo, rs: brs, cs: bcs };
      gemm(A, B, out as F, co, rows, n, k);
    }
  };
  const nb = numel(batch);
  if (nb === 0 || m === 0 || n === 0) return fromRaw(out, outShape, dtype, a.device);
  const bBatch = lb.strides.slice(0, -2);
  if (!exact && nb > 1 && bBatch.every((s) => s === 0)) {
    // one B for every batch: when A's batch and row dims step evenly, the whole batch is one
    // product with nb m rows
    const wa = walk([...batch, m], [la.strides.slice(0, -1)]);
    if (wa.shape.length === 1) {
      one(la.offset, lb.offset, 0, nb * m, wa.strides[0]![0]!);
      return fromRaw(out, outShape, dtype, a.device);
    }
  }
  // batches in row-major order: C's batch p starts at p m n
  const w = walk(batch, [la.strides.slice(0, -2), bBatch, contiguousStrides(batch)]);
  const last = w.shape.length - 1;
  const [sa, sb] = [w.strides[0]![last]!, w.strides[1]![last]!];
  forEachRun(w, [la.offset, lb.offset, 0], (offs, len) => {
    for (let i = 0; i < len; i++)
      one(offs[0]! + i * sa, offs[1]! + i * sb, (offs[2]! + i * w.strides[2]![last]!) * m * n, m, ars);
  });
  return fromRaw(out, outShape, dtype, a.device);
}

/**
 * The exact reference for one batch: A and B read as f64, C row i accumulated as
 * sum_q A[i, q] B[q, :] (each output element's products added in order q = 0, 1, ...), rounded
 * once to the dtype.
 */
function exactProduct(
  a: RawTensor,
  b: RawTensor,
  ao: number,
  ars: number,
  acs: number,
  bo: number,
  brs: number,
  bcs: number,
  out: ReturnType<typeof outArray>,
  co: number,
  m: number,
  n: number,
  k: number,
): void {
  const bv = new Float64Array(k * n),
    arow = new Float64Array(k),
    acc = new Float64Array(n);
  for (let q = 0; q < k; q++) gather(b.dtype, b.storage.host, bo + q * brs, bcs, bv, q * n, n);
  for (let i = 0; i < m; i++) {
    gather(a.dtype, a.storage.host, ao + i * ars, acs, arow, 0, k);
    acc.fill(0);
    for (let q = 0; q < k; q++) {
      const x = arow[q]!,
        br = q * n;
      for (let j = 0; j < n; j++) acc[j] += x * bv[br + j]!;
    }
    scatter(a.dtype, acc, 0, out, co + i * n, n);
  }
}
