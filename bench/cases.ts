// The benchmark cases, defined once: bench/run.ts times them here and hands the same list (as
// JSON) to bench/compare-torch.py, so both sides run the same ops, shapes, dtypes, rotation
// and iteration rules.
import type { DType } from '../src/index.ts';
import { fmt, mem, prod, setsFor, size, type BenchCase, type TimingRules } from './case-base.ts';
import { opCases } from './cases-ops.ts';

export {
  ROTATE_BYTES,
  fmt,
  mem,
  prod,
  setsFor,
  size,
  type BenchCase,
  type BenchKind,
  type BenchOp,
  type CaseParams,
  type TimingRules,
} from './case-base.ts';

export function benchCases(quick: boolean): BenchCase[] {
  const out: BenchCase[] = [];
  // ceilings, measured in the same run
  const GiB = 1 << 30;
  out.push({
    id: 'ceiling: device copy 1 GiB',
    op: 'copy',
    kind: 'ceiling-memory',
    shape: [GiB],
    dtype: 'u8',
    bytes: 2 * GiB,
    flops: 0,
    sets: 1,
  });
  // what a write-only op (random numbers) is held to: the driver's memset of 1 GiB
  out.push({
    id: 'ceiling: device write 1 GiB',
    op: 'fill',
    kind: 'ceiling-write',
    shape: [GiB],
    dtype: 'u8',
    bytes: GiB,
    flops: 0,
    sets: 1,
  });
  for (const d of ['bf16', 'f16', 'f32'] as const) {
    const n = 8192;
    out.push({
      id: `ceiling: library gemm ${n}^3 ${d}`,
      op: 'gemm',
      kind: 'ceiling-compute',
      shape: [n, n, n],
      dtype: d,
      bytes: 0,
      flops: 2 * n ** 3,
      sets: 1,
    });
  }
  // elementwise at 2^26 and 2^28 elements
  for (const n of quick ? [2 ** 26] : [2 ** 26, 2 ** 28]) {
    for (const d of ['f32', 'bf16'] as const) {
      const s = size(d);
      out.push(mem('add', [n], d, 2 * n * s, 3 * n * s));
      out.push(mem('mul', [n], d, 2 * n * s, 3 * n * s));
      out.push(mem('exp', [n], d, n * s, 2 * n * s));
      out.push(mem('gelu', [n], d, n * s, 2 * n * s));
      const to: DType = d === 'f32' ? 'bf16' : 'f32';
      out.push(mem('cast', [n], d, n * s, n * (s + size(to)), { to }));
      // cond is u8 (torch: bool, also one byte)
      out.push(mem('where', [n], d, n * (1 + 2 * s), n * (1 + 3 * s)));
    }
  }
  // broadcasting as models do it: a weight along the rows, a value per row (bytes: x read, y
  // written; the broadcast operand is small)
  for (const [op, b, d] of [
    ['mul', [4096], 'bf16'],
    ['add', [8192, 1], 'bf16'],
    ['mul', [4096], 'f32'],
  ] as const) {
    const x = [8192, 4096],
      n = prod(x),
      s = size(d);
    out.push({
      ...mem(op, x, d, n * s, 2 * n * s + prod(b) * s),
      id: `${op} [8192, 4096] by ${fmt(b)} ${d}`,
      shapeB: b,
      label: `${op} broadcast ${fmt(b)}`,
    });
  }
  // random numbers generated on the device: bytes written only, held to the write ceiling (the
  // driver's memset) rather than the copy's read + write
  for (const n of quick ? [2 ** 26] : [2 ** 20, 2 ** 28]) {
    for (const d of n === 2 ** 20 ? (['f32'] as const) : (['f32', 'bf16'] as const)) {
      out.push(mem('randn', [n], d, 0, n * size(d)));
      out.push(mem('rand', [n], d, 0, n * size(d)));
    }
  }
  // reductions and normalizations over the last dim of [8192, 4096]
  const rows = 8192,
    cols = 4096;
  for (const d of ['f32', 'bf16'] as const) {
    const s = size(d),
      n = rows * cols;
    out.push(mem('sum', [rows, cols], d, n * s, n * s + rows * s));
    out.push(mem('max', [rows, cols], d, n * s, n * s + rows * s));
    out.push(mem('softmax', [rows, cols], d, n * s, 2 * n * s));
    out.push(mem('layerNorm', [rows, cols], d, n * s, 2 * n * s + 2 * cols * s));
    out.push(mem('rmsNorm', [rows, cols], d, n * s, 2 * n * s + cols * s));
  }
  // the rest of the row family, bf16 only
  {
    const n = rows * cols;
    out.push(mem('mean', [rows, cols], 'bf16', n * 2, n * 2 + rows * 2));
    out.push(mem('logSoftmax', [rows, cols], 'bf16', n * 2, 2 * n * 2));
  }
  // matmul
  for (const d of ['f32', 'bf16', 'f16'] as const) {
    const m = 4096;
    out.push({
      id: `matmul [${m}, ${m}] x [${m}, ${m}] ${d}`,
      op: 'matmul',
      kind: 'compute',
      shape: [m, m],
      shapeB: [m, m],
      dtype: d,
      bytes: 0,
      flops: 2 * m ** 3,
      sets: setsFor(2 * m * m * size(d)),
    });
  }
  {
    const b = 32,
      m = 1024;
    out.push({
      id: `matmul [${b}, ${m}, ${m}] x [${b}, ${m}, ${m}] bf16`,
      op: 'matmul',
      kind: 'compute',
      shape: [b, m, m],
      shapeB: [b, m, m],
      dtype: 'bf16',
      bytes: 0,
      flops: 2 * b * m ** 3,
      sets: setsFor(2 * b * m * m * 2),
    });
  }
  // decode-sized products: x [m, k] times an nn.Linear weight [n, k] transposed (the weight
  // bytes dominate, so these are memory rows), and the norm of one token
  for (const [m, n, k] of [
    [1, 14336, 4096],
    [1, 4096, 14336],
    [4, 14336, 4096],
    [1, 128256, 4096],
  ] as const) {
    const bytes = (n * k + m * k + m * n) * 2;
    out.push({
      id: `linear [${m}, ${k}] x [${n}, ${k}]^T bf16`,
      op: 'linear',
      kind: 'memory',
      shape: [m, k],
      shapeB: [n, k],
      dtype: 'bf16',
      bytes,
      flops: 0,
      sets: setsFor(bytes),
    });
  }
  out.push(mem('rmsNorm', [1, 4096], 'bf16', 4096 * 2, 3 * 4096 * 2));
  // every other op family (bench/cases-ops.ts), each beside PyTorch
  out.push(...opCases());
  // the host cost of one tiny async op
  out.push({
    id: 'tiny add [4] f32 (host time per op)',
    op: 'tinyAdd',
    kind: 'host',
    shape: [4],
    dtype: 'f32',
    bytes: 0,
    flops: 0,
    sets: 1,
  });
  return out;
}

export function timingRules(quick: boolean): TimingRules {
  return quick
    ? { warmup: 2, warmupMs: 10, targetMs: 60, minIters: 5, maxIters: 30, tinyOps: 2000, tinyReps: 3 }
    : { warmup: 5, warmupMs: 50, targetMs: 400, minIters: 15, maxIters: 200, tinyOps: 10_000, tinyReps: 7 };
}

export function numelOf(c: BenchCase): number {
  return prod(c.shape);
}
