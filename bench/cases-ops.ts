// The op families beyond elementwise, reductions over the last dim and plain matmul:
// convolution, pooling, resampling, indexing, sorting and top-k, copies, nn ops, attention and the
// decode-sized shapes. Shapes are common model sizes (a ResNet stage, a Llama layer) or sized so the
// whole run with --torch stays within minutes. Memory-bound rows state the bytes read + written
// (their % is of the copy ceiling), compute-bound rows (convolution, matmul, prefill attention)
// the flops.
import type { DType } from '../src/index.ts';
import { fmt, mem, prod, setsFor, size, type BenchCase, type BenchOp, type CaseParams } from './case-base.ts';

interface Spec {
  op: BenchOp;
  label: string;
  shape: number[];
  shapeB?: number[];
  dtype: DType;
  params?: CaseParams;
  inputBytes: number;
  bytes?: number;
  flops?: number;
}

/** one row; the id is the label, the shapes and the dtype, unique across the whole list */
function row(s: Spec): BenchCase {
  const shapes = s.shapeB ? `${fmt(s.shape)} x ${fmt(s.shapeB)}` : fmt(s.shape);
  return {
    id: `${s.label} ${shapes} ${s.dtype}`,
    op: s.op,
    label: s.label,
    kind: s.flops ? 'compute' : 'memory',
    shape: s.shape,
    ...(s.shapeB ? { shapeB: s.shapeB } : {}),
    dtype: s.dtype,
    bytes: s.bytes ?? 0,
    flops: s.flops ?? 0,
    sets: setsFor(s.inputBytes),
    ...(s.params ? { params: s.params } : {}),
  };
}

function convolutions(out: BenchCase[]): void {
  // a ResNet stage-1 input; f32 is full f32 on both sides (FMA math here, TF32 off in torch)
  const x = [32, 256, 56, 56],
    [n, c, h, w] = x as [number, number, number, number];
  for (const d of ['f32', 'bf16'] as const) {
    const s = size(d);
    for (const k of [3, 1]) {
      const wt = [256, c, k, k];
      out.push(
        row({
          op: 'conv2d',
          label: `conv2d ${k}x${k}`,
          shape: x,
          shapeB: wt,
          dtype: d,
          params: { padding: (k - 1) / 2 },
          inputBytes: (prod(x) + prod(wt)) * s,
          flops: 2 * n * 256 * h * w * c * k * k,
        }),
      );
    }
    // the decoder's 2x upsampling: k4 s2 p1 doubles 28x28 to 56x56
    const xt = [32, 256, 28, 28],
      wt = [256, 128, 4, 4];
    out.push(
      row({
        op: 'convTranspose2d',
        label: 'convTranspose2d 4x4 s2 p1',
        shape: xt,
        shapeB: wt,
        dtype: d,
        params: { stride: 2, padding: 1 },
        inputBytes: (prod(xt) + prod(wt)) * s,
        flops: 2 * prod(xt) * 128 * 16,
      }),
    );
  }
  // pooling on the same input as the 3x3 convolution
  for (const d of ['f32', 'bf16'] as const) {
    const s = size(d),
      e = prod(x);
    out.push(
      row({
        op: 'maxPool2d',
        label: 'maxPool2d 2x2',
        shape: x,
        dtype: d,
        params: { kernel: 2, stride: 2, padding: 0 },
        inputBytes: e * s,
        bytes: e * s + (e / 4) * s,
      }),
    );
    out.push(
      row({
        op: 'avgPool2d',
        label: 'avgPool2d 3x3 s1 p1',
        shape: x,
        dtype: d,
        params: { kernel: 3, stride: 1, padding: 1 },
        inputBytes: e * s,
        bytes: 2 * e * s,
      }),
    );
  }
  const u = [32, 64, 128, 128],
    e = prod(u);
  for (const mode of ['Nearest', 'Bilinear'] as const) {
    out.push(
      row({
        op: `upsample${mode}2d`,
        label: `upsample${mode}2d x2`,
        shape: u,
        dtype: 'bf16',
        params: { size: [256, 256] },
        inputBytes: e * 2,
        bytes: 5 * e * 2,
      }),
    );
  }
}

function indexing(out: BenchCase[]): void {
  const I = 8; // i64 ids
  {
    const x = [50000, 4096],
      n = 8192,
      s = 2;
    out.push(
      row({
        op: 'indexSelect',
        label: `indexSelect ${n} rows of`,
        shape: x,
        dtype: 'bf16',
        params: { dim: 0, ids: [n], idsBelow: x[0] },
        inputBytes: prod(x) * s,
        bytes: n * I + 2 * n * x[1]! * s,
      }),
    );
  }
  {
    const x = [4096, 4096],
      e = prod(x);
    out.push(
      row({
        op: 'gather',
        label: 'gather dim 1',
        shape: x,
        dtype: 'f32',
        params: { dim: 1, ids: x, idsBelow: x[1] },
        inputBytes: e * (4 + I),
        bytes: e * (4 + I + 4),
      }),
    );
    // src and ids as large as x: every element of src lands somewhere in its column
    out.push(
      row({
        op: 'scatterAdd',
        label: 'scatterAdd dim 0',
        shape: x,
        dtype: 'f32',
        params: { dim: 0, ids: x, idsBelow: x[0] },
        inputBytes: e * (4 + I + 4),
        bytes: e * (4 + I + 4 + 4),
      }),
    );
  }
  {
    const x = [16384, 4096],
      n = 8192,
      src = n * x[1]!;
    out.push(
      row({
        op: 'indexAdd',
        label: `indexAdd ${n} rows into`,
        shape: x,
        dtype: 'f32',
        params: { dim: 0, ids: [n], idsBelow: x[0] },
        inputBytes: (prod(x) + src) * 4,
        bytes: 2 * prod(x) * 4 + src * 4 + n * I,
      }),
    );
  }
  {
    // a Llama-3 vocabulary: 1 GiB of table, so the minimum of 2 sets
    const table = [128256, 4096],
      ids = [8, 1024],
      n = prod(ids),
      s = 2;
    out.push(
      row({
        op: 'embedding',
        label: `embedding ${fmt(ids)} ids from`,
        shape: table,
        dtype: 'bf16',
        params: { ids, idsBelow: table[0] },
        inputBytes: prod(table) * s,
        bytes: n * I + 2 * n * table[1]! * s,
      }),
    );
  }
}

/** sorting and selection along the last dim; ours gives u32 indices, torch i64: the bytes are ours */
function sorts(out: BenchCase[]): void {
  const x = [4096, 4096],
    e = prod(x);
  out.push(
    row({
      op: 'argsort',
      label: 'argsort',
      shape: x,
      dtype: 'f32',
      params: { dim: -1 },
      inputBytes: e * 4,
      bytes: 2 * e * 4,
    }),
  );
  out.push(
    row({
      op: 'sort',
      label: 'sort (values, indices)',
      shape: x,
      dtype: 'f32',
      params: { dim: -1 },
      inputBytes: e * 4,
      bytes: 3 * e * 4,
    }),
  );
  // short rows (the bitonic kernel), long rows (a pass per digit over tiles), a vocabulary row
  for (const s of [
    [65536, 64],
    [8, 1 << 20],
    [1, 128256],
  ]) {
    const n = prod(s);
    out.push(
      row({
        op: 'argsort',
        label: 'argsort',
        shape: s,
        dtype: 'f32',
        params: { dim: -1 },
        inputBytes: n * 4,
        bytes: 2 * n * 4,
      }),
    );
  }
  // top-k of sampling: a batch of Llama-3 logits (bf16) and one row (f32, as sampling.ts asks),
  // and a few of many medium rows
  const topk: [number[], DType, number][] = [
    [[64, 128256], 'bf16', 50],
    [[1, 128256], 'f32', 50],
    [[4096, 4096], 'f32', 8],
  ];
  for (const [s, d, k] of topk) {
    const n = prod(s),
      rows = n / s[s.length - 1]!;
    out.push(
      row({
        op: 'topk',
        label: `topk k=${k}`,
        shape: s,
        dtype: d,
        params: { dim: -1, k },
        inputBytes: n * size(d),
        bytes: n * size(d) + rows * k * (size(d) + 4),
      }),
    );
  }
}

function copies(out: BenchCase[]): void {
  {
    const x = [4096, 4096],
      e = prod(x);
    out.push(
      row({
        op: 'cat',
        label: 'cat dim 1',
        shape: x,
        shapeB: x,
        dtype: 'f32',
        params: { dim: 1 },
        inputBytes: 2 * e * 4,
        bytes: 4 * e * 4,
      }),
    );
  }
  const rows = 8192,
    cols = 4096,
    e = rows * cols;
  for (const d of ['f32', 'bf16'] as const) {
    const s = size(d);
    out.push(
      row({
        op: 'contiguousT',
        label: 'contiguous of .T',
        shape: [rows, cols],
        dtype: d,
        inputBytes: e * s,
        bytes: 2 * e * s,
      }),
    );
    out.push(
      row({
        op: 'sum',
        label: 'sum over dim 0',
        shape: [rows, cols],
        dtype: d,
        params: { dim: 0 },
        inputBytes: e * s,
        bytes: e * s + cols * s,
      }),
    );
  }
  // more column reductions (colreduce.hip): a max down the columns, and a batch of them (the
  // middle dim of [b, rows, cols])
  out.push(
    row({
      op: 'max',
      label: 'max over dim 0',
      shape: [rows, cols],
      dtype: 'f32',
      params: { dim: 0 },
      inputBytes: e * 4,
      bytes: e * 4 + cols * 4,
    }),
  );
  {
    const x = [32, 2048, 512],
      n = prod(x),
      kept = x[0]! * x[2]!;
    out.push(
      row({
        op: 'sum',
        label: 'sum over dim 1',
        shape: x,
        dtype: 'bf16',
        params: { dim: 1 },
        inputBytes: n * 2,
        bytes: n * 2 + kept * 2,
      }),
    );
  }
  {
    const x = [4096, 4096],
      e = prod(x);
    for (const d of ['f32', 'bf16'] as const) {
      out.push(
        row({
          op: 'cumsum',
          label: 'cumsum dim 1',
          shape: x,
          dtype: d,
          params: { dim: 1 },
          inputBytes: e * size(d),
          bytes: 2 * e * size(d),
        }),
      );
    }
  }
}

function linearAlgebra(out: BenchCase[]): void {
  const m = 4096,
    sq = [m, m];
  const t = (d: DType, transA: boolean, transB: boolean) =>
    row({
      op: 'matmul',
      label: `matmul ${transA ? 'A^T' : 'A'} ${transB ? 'B^T' : 'B'}`,
      shape: sq,
      shapeB: sq,
      dtype: d,
      params: { transA, transB },
      inputBytes: 2 * m * m * size(d),
      flops: 2 * m ** 3,
    });
  out.push(t('bf16', true, false), t('bf16', false, true), t('f32', false, true));
}

function nnOps(out: BenchCase[]): void {
  const x = [32, 256, 56, 56],
    e = prod(x);
  for (const d of ['f32', 'bf16'] as const) {
    const s = size(d);
    out.push(
      row({
        op: 'batchNorm',
        label: 'batchNorm (inference)',
        shape: x,
        dtype: d,
        inputBytes: e * s,
        bytes: 2 * e * s + 4 * x[1]! * s,
      }),
    );
  }
  {
    // a Llama prefill's q: [b, heads, t, head dim], cos and sin [t, d / 2]
    const q = [8, 32, 1024, 128],
      s = 2,
      cs = 1024 * 64;
    out.push(
      row({
        op: 'rope',
        label: 'rope (halves)',
        shape: q,
        dtype: 'bf16',
        inputBytes: prod(q) * s,
        bytes: 2 * prod(q) * s + 2 * cs * s,
      }),
    );
  }
  // prefill at [8, 16, 4096, 128], and one long sequence (32768: the composed path's scores alone
  // would take 34 GB there); flops count the visible scores only
  for (const q of [
    [8, 16, 4096, 128],
    [1, 16, 32768, 128],
  ]) {
    const [b, h, t, d] = q as [number, number, number, number];
    const inputBytes = 3 * prod(q) * 2,
      flops = 4 * b * h * t * t * d;
    if (t <= 4096)
      out.push(
        row({
          op: 'attention',
          label: 'attention',
          shape: q,
          shapeB: q,
          dtype: 'bf16',
          params: { causal: false },
          inputBytes,
          flops,
        }),
      );
    out.push(
      row({
        op: 'attention',
        label: 'attention causal',
        shape: q,
        shapeB: q,
        dtype: 'bf16',
        params: { causal: true },
        inputBytes,
        flops: flops / 2,
      }),
    );
  }
  // one decode step of an 8B-sized model: 32 query heads over 8 kv heads, 4096 and 32768 cached
  // keys; reading k and v is the work, so these are memory rows
  for (const tk of [4096, 32768]) {
    const q = [1, 32, 1, 128],
      kv = [1, 8, tk, 128];
    const bytes = (2 * prod(q) + 2 * prod(kv)) * 2;
    out.push(
      row({
        op: 'attention',
        label: 'attention decode',
        shape: q,
        shapeB: kv,
        dtype: 'bf16',
        params: { causal: false },
        inputBytes: bytes,
        bytes,
      }),
    );
  }
}

/** the norms and softmax at decode sizes (one token, a batch of 64) and on long rows (a vocabulary's logits) */
function decodeSized(out: BenchCase[]): void {
  const shapes: [number, number, DType][] = [
    [1, 4096, 'bf16'],
    [64, 4096, 'bf16'],
    [64, 131072, 'bf16'],
    [64, 131072, 'f32'],
  ];
  for (const [r, c, d] of shapes) {
    const s = size(d),
      n = r * c;
    out.push(mem('softmax', [r, c], d, n * s, 2 * n * s));
    if (d !== 'bf16') continue;
    out.push(mem('layerNorm', [r, c], d, n * s, 2 * n * s + 2 * c * s));
    // the one-token rmsNorm is already among the decode rows of cases.ts
    if (r !== 1) out.push(mem('rmsNorm', [r, c], d, n * s, 2 * n * s + c * s));
  }
}

export function opCases(): BenchCase[] {
  const out: BenchCase[] = [];
  convolutions(out);
  indexing(out);
  sorts(out);
  copies(out);
  linearAlgebra(out);
  nnOps(out);
  decodeSized(out);
  return out;
}
