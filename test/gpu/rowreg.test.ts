// The register row kernels (hip-src/rowreg.h; softmax.hip's and norm.hip's _v<V>, _part and
// _fin, reduce-rows.hip's _v<V>; src/backends/gpu/rowreg.ts) against the CPU reference: every bucket of vectors a thread
// (ROCM_TENSOR_ROW_VECS forces each) over row lengths that fill a group, leave it partly empty,
// or give a group less than a wave (several rows a wave, and groups past the last row); the
// boundaries where one bucket ends and the next (or the split kernels) take over; the split
// kernels on forced and natural long rows, with a short last chunk; every float dtype (f64 and
// unaligned layouts take the general kernels) and layout; then NaN and infinities value by
// value on both the register and the split path (any NaN bits: a NaN's payload is no contract;
// CUDA's f32 inf - inf is 0x7fffffff, which rounds to f16 0x7fff).
import * as assert from 'uvu/assert';
import { gpuSuite, checkOp, LAYOUTS, FLOAT_DTYPES, cpuFrom, type LayoutKind } from './harness.ts';
import { randT } from '../helpers.ts';
import { Tensor, type DType } from '../../src/index.ts';
import { REG_FOLD_OPS, REG_ROW_VECS } from '../../src/runtime/kernel-sigs-reduce.ts';

const s = gpuSuite('gpu/rowreg');

/** runs fn with ROCM_TENSOR_ROW_VECS set to `v` (rowreg.ts reads it on every call) */
async function withVecs<T>(v: string, fn: () => Promise<T>): Promise<T> {
  const old = process.env['ROCM_TENSOR_ROW_VECS'];
  process.env['ROCM_TENSOR_ROW_VECS'] = v;
  try {
    return await fn();
  } finally {
    if (old === undefined) delete process.env['ROCM_TENSOR_ROW_VECS'];
    else process.env['ROCM_TENSOR_ROW_VECS'] = old;
  }
}

// Row lengths in elements, multiples of 8 so every dtype has whole 16-byte vectors (f32 4 a
// vector, f16/bf16 8): 1 or 2 vectors (a group of 1 or 2 lanes), 5 or 10 (a group past a
// power of two: lanes without a vector), 33 or 66 (a group of a wave or more, partly empty),
// 129 or 258, 257 or 514 (a block's worth for V = 1, 2 and past it).
const COLS = [8, 40, 264, 1032, 2056];
/** 7 rows: groups of a block past the last row */
const ROWS = 7;
const BIG: readonly LayoutKind[] = ['contiguous', 'transposed'];

type NormOp = 'layerNorm' | 'layerNorm no bias' | 'rmsNorm';
const NORMS: readonly NormOp[] = ['layerNorm', 'layerNorm no bias', 'rmsNorm'];

function normInputs(op: NormOp, shape: number[], d: DType): Tensor[] {
  const h = shape[shape.length - 1]!;
  // x in [1, 5): a mean well away from 0, so the variance is taken around it
  const x = randT(shape, d, op === 'rmsNorm' ? -2 : 1, op === 'rmsNorm' ? 2 : 5),
    w = randT([h], d, 0.5, 1.5);
  return op === 'layerNorm' ? [x, w, randT([h], d, -1, 1)] : [x, w];
}
function runNorm(op: NormOp, [x, w, b]: Tensor[]): Tensor {
  if (op === 'rmsNorm') return x!.rmsNorm(w!, 1e-6);
  return x!.layerNorm(w!, op === 'layerNorm' ? b! : null, 1e-5);
}
const normGpuOp = (op: NormOp): string => (op === 'rmsNorm' ? 'rmsNorm' : 'layerNorm');

for (const log of [false, true]) {
  const op = log ? 'logSoftmax' : 'softmax';
  const run = (x: Tensor): Tensor => (log ? x.logSoftmax(-1) : x.softmax(-1));
  s.opTest(
    op,
    async () => {
      for (const v of REG_ROW_VECS.softmax) {
        for (const cols of COLS) {
          await withVecs(String(v), () =>
            checkOp(
              op,
              FLOAT_DTYPES,
              LAYOUTS,
              (d) => [randT([ROWS, cols], d, -4, 4)],
              ([x]) => run(x!),
              { variant: `V ${v}, [${ROWS}, ${cols}]` },
            ),
          );
        }
      }
    },
    `${op}: register kernels, every V over short and partial rows`,
  );

  s.opTest(
    op,
    async () => {
      // f32 rows of 8192 and 16-bit rows of 16384 are 2048 vectors, the most the register kernels
      // hold (256 threads x 8); one vector more goes to the split kernels
      for (const cols of [8192, 8200, 16384, 16392]) {
        await checkOp(
          op,
          FLOAT_DTYPES,
          BIG,
          (d) => [randT([3, cols], d, -4, 4)],
          ([x]) => run(x!),
          { variant: `[3, ${cols}]` },
        );
      }
      // split forced on rows of 1 to 1250 vectors: chunks of 256 vectors, the last short
      for (const cols of [8, 1032, 2064, 5000]) {
        await withVecs('split', () =>
          checkOp(
            op,
            FLOAT_DTYPES,
            LAYOUTS,
            (d) => [randT([ROWS, cols], d, -4, 4)],
            ([x]) => run(x!),
            { variant: `split forced, [${ROWS}, ${cols}]` },
          ),
        );
      }
      // a vocabulary's logits: the long rows of the benchmark, fewer of them
      await checkOp(
        op,
        FLOAT_DTYPES,
        BIG,
        (d) => [randT([4, 131072], d, -8, 8)],
        ([x]) => run(x!),
        { variant: '[4, 131072]' },
      );
    },
    `${op}: bucket boundaries and the split kernels`,
  );
}

for (const op of NORMS) {
  const g = normGpuOp(op);
  s.opTest(
    g,
    async () => {
      for (const v of REG_ROW_VECS.norm) {
        for (const cols of COLS) {
          await withVecs(String(v), () =>
            checkOp(
              g,
              FLOAT_DTYPES,
              LAYOUTS,
              (d) => normInputs(op, [ROWS, cols], d),
              (ins) => runNorm(op, ins),
              { variant: `${op}, V ${v}, [${ROWS}, ${cols}]` },
            ),
          );
        }
      }
    },
    `${op}: register kernels, every V over short and partial rows`,
  );

  s.opTest(
    g,
    async () => {
      // f32 rows of 4096 and 16-bit rows of 8192 are 1024 vectors, the most the norms' register
      // kernels hold (256 threads x 4); one vector more goes to the split kernels
      for (const cols of [4096, 4104, 8192, 8200]) {
        await checkOp(
          g,
          FLOAT_DTYPES,
          BIG,
          (d) => normInputs(op, [3, cols], d),
          (ins) => runNorm(op, ins),
          { variant: `${op}, [3, ${cols}]` },
        );
      }
      for (const cols of [8, 1032, 2064, 5000]) {
        await withVecs('split', () =>
          checkOp(
            g,
            FLOAT_DTYPES,
            LAYOUTS,
            (d) => normInputs(op, [ROWS, cols], d),
            (ins) => runNorm(op, ins),
            { variant: `${op}, split forced, [${ROWS}, ${cols}]` },
          ),
        );
      }
      await checkOp(
        g,
        FLOAT_DTYPES,
        BIG,
        (d) => normInputs(op, [4, 131072], d),
        (ins) => runNorm(op, ins),
        { variant: `${op}, [4, 131072]` },
      );
    },
    `${op}: bucket boundaries and the split kernels`,
  );
}

// ---- reductions over the last dim (reduce-rows.hip) -------------------------------------------------
// They take rows only where there are at least as many as multiprocessors (fewer go to
// reduce.hip's split segments): 320 rows, more than any current GPU has (MI300X: 304). Only a
// contiguous view at a 16-byte boundary is theirs; 'offset' checks the kernels beside them.
const FOLD_ROWS = 320;
for (const op of REG_FOLD_OPS) {
  s.opTest(
    op,
    async () => {
      const exact = op === 'max' || op === 'min';
      for (const v of REG_ROW_VECS.fold) {
        for (const cols of [8, 40, 264, 2056]) {
          await withVecs(String(v), () =>
            checkOp(
              op,
              FLOAT_DTYPES,
              ['contiguous', 'offset'],
              (d) => [exact ? randT([FOLD_ROWS, cols], d, -3, 3).floor() : randT([FOLD_ROWS, cols], d, -3, 3)],
              ([x]) => x!.reduce(op, -1, false),
              { variant: `V ${v}, [${FOLD_ROWS}, ${cols}]`, ...(exact ? { tol: 0 } : {}) },
            ),
          );
        }
      }
      // the plan's own choice at the benchmark's row length
      await checkOp(
        op,
        FLOAT_DTYPES,
        ['contiguous'],
        (d) => [randT([FOLD_ROWS, 4096], d, -3, 3)],
        ([x]) => x!.reduce(op, -1, true),
        { variant: `[${FOLD_ROWS}, 4096] keepdim` },
      );
    },
    `${op}: register reductions, every V`,
  );
}

// ---- NaN and infinities, value by value ----------------------------------------------------------
const REG: readonly DType[] = ['f32', 'f16', 'bf16'];

/**
 * The GPU result is NaN where the CPU reference is, equals it where that is infinite, and is
 * within tol elsewhere.
 */
async function sameSpecials(what: string, got: Tensor, want: Tensor, tol: number): Promise<void> {
  const a = Array.from(await got.toArray(), Number),
    b = Array.from(want.toArraySync(), Number);
  assert.is(a.length, b.length, `${what}: length`);
  for (let i = 0; i < b.length; i++) {
    const x = a[i]!,
      y = b[i]!;
    if (Number.isNaN(y)) {
      assert.ok(Number.isNaN(x), `${what}: element ${i} is ${x}, the CPU gives NaN`);
    } else if (!Number.isFinite(y)) {
      assert.is(x, y, `${what}: element ${i}`);
    } else {
      assert.ok(Math.abs(x - y) <= tol * Math.max(1, Math.abs(y)), `${what}: element ${i} is ${x}, the CPU gives ${y}`);
    }
  }
}
const tolOf = (d: DType): number => (d === 'f32' ? 1e-5 : 1e-2);

/** the special rows of softmax: NaN, -inf entries, all -inf, +inf, and a first half of -inf
 *  (on the split path: whole chunks of -inf before finite ones) */
function specialRows(n: number): number[] {
  const v: number[] = [];
  for (let r = 0; r < 5; r++) {
    for (let i = 0; i < n; i++) {
      if (r === 0) v.push(i === 1 ? NaN : (i % 7) / 7);
      else if (r === 1) v.push(i === 0 ? -Infinity : i === 1 ? 1 : (i % 5) / 5);
      else if (r === 2) v.push(-Infinity);
      else if (r === 3) v.push(i === 5 ? Infinity : 0);
      else v.push(i < n / 2 ? -Infinity : (i % 3) / 3);
    }
  }
  return v;
}

s.opTest(
  'softmax',
  async (dev) => {
    // 2000: the register kernels; 40000 (5000 or 10000 vectors): the split kernels, chunks of
    // -inf only in the last row
    for (const n of [2000, 40000]) {
      for (const d of REG) {
        const cpu = cpuFrom(specialRows(n), [5, n], d),
          x = cpu.to(dev);
        for (const log of [false, true]) {
          const what = `${log ? 'logSoftmax' : 'softmax'} ${d} [5, ${n}]`;
          await sameSpecials(
            what,
            log ? x.logSoftmax(-1) : x.softmax(-1),
            log ? cpu.logSoftmax(-1) : cpu.softmax(-1),
            tolOf(d),
          );
        }
      }
    }
  },
  'softmax, logSoftmax: NaN, -inf and +inf rows on the register and split kernels',
);

s.opTest(
  'layerNorm',
  async (dev) => {
    for (const n of [2000, 40000]) {
      for (const d of REG) {
        // row 0 plain, row 1 with +inf, row 2 with NaN; the weight NaN at column 3, +inf at 7 and
        // 0 at 9, the bias -inf at 11
        const xs: number[] = [];
        for (let r = 0; r < 3; r++)
          for (let i = 0; i < n; i++)
            xs.push(r === 1 && i === 4 ? Infinity : r === 2 && i === 6 ? NaN : 1 + (i % 11) / 11);
        const ws = Array.from({ length: n }, (_, i) =>
          i === 3 ? NaN : i === 7 ? Infinity : i === 9 ? 0 : 0.5 + (i % 3) / 3,
        );
        const bs = Array.from({ length: n }, (_, i) => (i === 11 ? -Infinity : (i % 4) / 4 - 0.5));
        const [cx, cw, cb] = [cpuFrom(xs, [3, n], d), cpuFrom(ws, [n], d), cpuFrom(bs, [n], d)];
        const [gx, gw, gb] = [cx.to(dev), cw.to(dev), cb.to(dev)];
        await sameSpecials(
          `layerNorm ${d} [3, ${n}]`,
          gx.layerNorm(gw, gb, 1e-5),
          cx.layerNorm(cw, cb, 1e-5),
          tolOf(d),
        );
        await sameSpecials(`rmsNorm ${d} [3, ${n}]`, gx.rmsNorm(gw, 1e-6), cx.rmsNorm(cw, 1e-6), tolOf(d));
      }
    }
  },
  'layerNorm, rmsNorm: NaN and infinities in x, the weight and the bias on the register and split kernels',
);

s.opTest(
  'layerNorm',
  async (dev) => {
    // bf16's register kernels take the statistics about a pivot, the mean of the row's first
    // vector (norm.hip): rows whose first vector sits far out (near the cancellation bound of
    // 1 + n/8), a row far from 0 with a small spread, a row whose first vector is constant
    const n = 4096,
      xs: number[] = [];
    for (let i = 0; i < n; i++) xs.push(i < 8 ? 64 : ((i * 37) % 17) / 8 - 1);
    for (let i = 0; i < n; i++) xs.push(i < 8 ? -300 : ((i * 53) % 29) / 14 - 1);
    for (let i = 0; i < n; i++) xs.push(20000 + 128 * ((i * 13) % 7));
    for (let i = 0; i < n; i++) xs.push(i < 8 ? 3 : 3 + ((i * 11) % 5) / 4);
    const ws = Array.from({ length: n }, (_, i) => 0.5 + (i % 3) / 3),
      bs = Array.from({ length: n }, (_, i) => (i % 4) / 4 - 0.5);
    for (const d of REG) {
      const [cx, cw, cb] = [cpuFrom(xs, [4, n], d), cpuFrom(ws, [n], d), cpuFrom(bs, [n], d)];
      const [gx, gw, gb] = [cx.to(dev), cw.to(dev), cb.to(dev)];
      for (const v of REG_ROW_VECS.norm) {
        await withVecs(String(v), () =>
          sameSpecials(
            `layerNorm ${d} V ${v} [4, ${n}], far first vectors`,
            gx.layerNorm(gw, gb, 1e-5),
            cx.layerNorm(cw, cb, 1e-5),
            tolOf(d),
          ),
        );
      }
    }
  },
  'layerNorm: rows whose first vector is far from the mean, and far from 0, on every V',
);

s.opTest(
  'max',
  async (dev) => {
    // rows: a NaN, a +inf, a -inf, both infinities, then plain ones; long enough (2000) for V > 1
    for (const d of REG) {
      const n = 2000,
        vals = Array.from({ length: FOLD_ROWS * n }, (_, i) => ((i * 7919) % 13) - 6);
      vals[5] = NaN;
      vals[n + 7] = Infinity;
      vals[2 * n + 9] = -Infinity;
      vals[3 * n] = Infinity;
      vals[3 * n + 1] = -Infinity;
      const cpu = cpuFrom(vals, [FOLD_ROWS, n], d),
        x = cpu.to(dev);
      for (const op of REG_FOLD_OPS)
        await sameSpecials(
          `${op} ${d} [${FOLD_ROWS}, ${n}]`,
          x.reduce(op, -1, false),
          cpu.reduce(op, -1, false),
          tolOf(d),
        );
    }
  },
  'sum, mean, max, min: NaN and infinities on the register reductions',
);

s.opTest(
  'softmax',
  async (dev) => {
    // the split kernels' rows sum to 1 (each row's chunks merged right)
    for (const d of REG) {
      const y = randT([3, 131072], d, -8, 8, dev).softmax(-1);
      const sums = Array.from(await y.toDtype('f64').sum(-1).toArray(), Number);
      sums.forEach((v, i) => assert.ok(Math.abs(v - 1) <= (d === 'f32' ? 1e-4 : 2e-2), `${d} row ${i} sums to ${v}`));
    }
  },
  'softmax: long rows sum to 1',
);

s.run();
