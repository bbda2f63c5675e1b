// GPU path of the fused training ops: hip-src/softmax-grad.hip, norm-grad.hip, cross-entropy.hip
// and optim.hip. The row kernels take contiguous rows (other layouts are copied first, and the
// copies disposed once the kernel is queued: the allocator is stream-ordered), one row a block.
import { RawTensor, fromLastDim, lastDimView } from '../../device/raw-tensor.ts';
import type { DType } from '../../core/dtype.ts';
import { GraphCaptureError, ShapeError } from '../../core/errors.ts';
import { sig } from '../checks.ts';
import { arg, type Dim3 } from '../../runtime/kernels.ts';
import { NORM_GRAD_WAVE_V, OPTIM_CHUNK, OPTIM_WORDS } from '../../runtime/kernel-sigs-train.ts';
import type { AdamStepParams, CrossEntropyParams, SgdStepParams, StepList } from '../train-options.ts';
import { cast } from './cast.ts';
import { dense, filled } from './fill.ts';
import { base, baseOrNull, offsetOf, offsetOrZero, rowGrid } from './launch.ts';

export function softmaxBackward(g: RawTensor, y: RawTensor, dim: number, log: boolean): RawTensor {
  const dev = y.device;
  const gv = lastDimView(g, dim),
    yv = lastDimView(y, dim);
  const shape = yv.layout.shape;
  const dx = RawTensor.empty(shape, y.dtype, dev);
  const cols = y.rank === 0 ? 1 : shape[shape.length - 1]!;
  const rows = cols === 0 ? 0 : y.numel / cols;
  filled(dx, (temps) => {
    temps.push(gv, yv);
    if (rows === 0) return;
    const gc = dense(gv, temps),
      yc = dense(yv, temps);
    const { grid, block } = rowGrid(dev, rows);
    dev.kernels.launch('softmax-grad.hip', `softmaxgrad_${y.dtype}`, grid, block, 0, dev.stream, [
      base(dx),
      base(gc),
      base(yc),
      offsetOf(dx),
      offsetOf(gc),
      offsetOf(yc),
      arg.u64(rows),
      arg.u64(cols),
      arg.u32(log ? 1 : 0),
    ]);
  });
  return fromLastDim(dx, dim);
}

/** the partial sums' dtype: f64 for f64 data, else f32 */
const partDType = (d: DType): DType => (d === 'f64' ? 'f64' : 'f32');

export function normBackward(
  g: RawTensor,
  x: RawTensor,
  w: RawTensor,
  b: RawTensor | null,
  eps: number,
  rms: boolean,
): [RawTensor, RawTensor, RawTensor | null] {
  const dev = x.device;
  const cols = w.layout.shape[0]!;
  const rows = cols === 0 ? 0 : x.numel / cols;
  const dx = RawTensor.empty(x.layout.shape, x.dtype, dev);
  const dw = RawTensor.empty([cols], w.dtype, dev);
  const db = b ? RawTensor.empty([cols], b.dtype, dev) : null;
  const temps: RawTensor[] = [];
  try {
    if (cols > 0) {
      const nvec = db ? 2 : 1;
      // rows that fit a wave's registers go one a wave (norm-grad.hip's _w<V> kernels)
      const wave = dev.runtime.info.warpSize;
      const v = x.dtype === 'f64' ? undefined : NORM_GRAD_WAVE_V.find((n) => n * wave >= cols);
      // blocks of 4 waves for those: they hold a row and its partials in up to ~200 registers a
      // thread, so smaller blocks keep more of them resident a multiprocessor
      const waves = 4;
      // fewer blocks than the other row kernels: each keeps a row of partial sums for the fold
      const rg = rowGrid(dev, Math.max(v ? Math.ceil(rows / waves) : rows, 1), 4);
      const grid = rg.grid;
      const block: Dim3 = v ? [waves * wave, 1, 1] : rg.block;
      const suffix = v ? `_w${v}` : '';
      const parts = grid[0];
      const part = RawTensor.empty([parts * nvec * cols], partDType(x.dtype), dev);
      temps.push(part);
      if (rows > 0) {
        const gc = dense(g, temps),
          xc = dense(x, temps),
          wc = dense(w, temps);
        const args = [
          base(dx),
          base(part),
          base(gc),
          base(xc),
          base(wc),
          offsetOf(dx),
          offsetOf(gc),
          offsetOf(xc),
          offsetOf(wc),
          arg.u64(rows),
          arg.u64(cols),
          arg.f64(eps),
        ];
        if (rms)
          dev.kernels.launch('norm-grad.hip', `rmsnormgrad_${x.dtype}${suffix}`, grid, block, 0, dev.stream, args);
        else
          dev.kernels.launch('norm-grad.hip', `layernormgrad_${x.dtype}${suffix}`, grid, block, 0, dev.stream, [
            ...args,
            arg.u32(db ? 1 : 0),
          ]);
      } else {
        // no rows: every partial sum is 0
        dev.runtime.memsetAsync(part.storage.ptrAt(0), 0, part.storage.byteLength, dev.stream);
      }
      const cg = dev.kernels.grid1d(cols);
      dev.kernels.launch('norm-grad.hip', `normgrad_cols_${x.dtype}`, cg.grid, cg.block, 0, dev.stream, [
        base(dw),
        baseOrNull(db),
        base(part),
        offsetOf(dw),
        offsetOrZero(db),
        arg.u64(cols),
        arg.u32(parts),
        arg.u32(nvec),
      ]);
    }
  } catch (e) {
    dx.dispose();
    dw.dispose();
    db?.dispose();
    throw e;
  } finally {
    for (const t of temps) t.dispose();
  }
  return [dx, dw, db];
}

/** the class ids as contiguous i64 (u8 and u32 widened: every id and ignoreIndex compare alike) */
function targetI64(target: RawTensor, temps: RawTensor[]): RawTensor {
  if (target.dtype === 'i64') return dense(target, temps);
  const t = cast(target, 'i64');
  temps.push(t);
  return dense(t, temps);
}

/** the kernels index a row's classes in 32 bits */
function xentShape(op: string, x: RawTensor): [number, number] {
  const [rows, cols] = x.layout.shape as [number, number];
  if (cols >= 2 ** 32) throw new ShapeError(`${op}: at most 2^32 - 1 classes on a GPU, got ${sig(x)}`);
  return [rows, cols];
}

export function crossEntropyRows(x: RawTensor, target: RawTensor, p: CrossEntropyParams): RawTensor {
  const dev = x.device;
  const [rows, cols] = xentShape('crossEntropy', x);
  const loss = RawTensor.empty([rows], x.dtype, dev);
  return filled(loss, (temps) => {
    if (rows === 0) return;
    const xc = dense(x, temps),
      tc = targetI64(target, temps),
      wc = p.weight ? dense(p.weight, temps) : null;
    const { grid, block } = rowGrid(dev, rows);
    dev.kernels.launch('cross-entropy.hip', `xent_fwd_${x.dtype}`, grid, block, 0, dev.stream, [
      base(loss),
      base(xc),
      base(tc),
      baseOrNull(wc),
      offsetOf(loss),
      offsetOf(xc),
      offsetOf(tc),
      offsetOrZero(wc),
      arg.u64(rows),
      arg.u64(cols),
      arg.i64(p.ignoreIndex),
      arg.f64(p.smoothing),
    ]);
  });
}

/** g [M] may be a broadcast (stride 0) of one gradient, as a reduced loss hands back */
export function crossEntropyRowsBackward(
  g: RawTensor,
  x: RawTensor,
  target: RawTensor,
  p: CrossEntropyParams,
): RawTensor {
  const dev = x.device;
  const [rows, cols] = xentShape('crossEntropy backward', x);
  const dx = RawTensor.empty([rows, cols], x.dtype, dev);
  return filled(dx, (temps) => {
    if (rows === 0 || cols === 0) return;
    const xc = dense(x, temps),
      tc = targetI64(target, temps),
      wc = p.weight ? dense(p.weight, temps) : null;
    const { grid, block } = rowGrid(dev, rows);
    dev.kernels.launch('cross-entropy.hip', `xent_bwd_${x.dtype}`, grid, block, 0, dev.stream, [
      base(dx),
      base(g),
      base(xc),
      base(tc),
      baseOrNull(wc),
      offsetOf(dx),
      offsetOf(g),
      offsetOf(xc),
      offsetOf(tc),
      offsetOrZero(wc),
      arg.u64(rows),
      arg.u64(cols),
      arg.i64(g.layout.strides[0]!),
      arg.i64(p.ignoreIndex),
      arg.f64(p.smoothing),
    ]);
  });
}

// ---- multi-tensor steps -------------------------------------------------------------------

/** t's address as a table word (t contiguous) */
const addr = (t: RawTensor | null): bigint => (t ? BigInt.asIntN(64, t.storage.ptrAt(t.layout.offset)) : 0n);

/**
 * The list's table on the device (optim.hip's layout), uploaded only when a word changed, and
 * the chunk count. Gradients that are not contiguous are copied into temps first (their copies'
 * addresses change every step, so such a list uploads every step).
 */
function stepTable(list: StepList, temps: RawTensor[]): { table: RawTensor; n: number; chunks: number } {
  const dev = list.params[0]!.device;
  const rowsOf: bigint[][] = [];
  let chunks = 0;
  list.params.forEach((p, i) => {
    if (p.numel === 0) return;
    const g = dense(list.grads[i]!, temps);
    const s = (k: number): RawTensor | null => list.state[k]?.[i] ?? null;
    rowsOf.push([
      addr(p),
      addr(g),
      addr(s(0)),
      addr(s(1)),
      addr(s(2)),
      addr(list.masters ? list.masters[i]! : null),
      BigInt(p.numel),
      BigInt(chunks),
    ]);
    chunks += Math.ceil(p.numel / OPTIM_CHUNK);
  });
  const words = new BigInt64Array(rowsOf.length * OPTIM_WORDS);
  rowsOf.forEach((r, i) => words.set(r, i * OPTIM_WORDS));
  const c = list.cache;
  const same = c.words !== null && c.words.length === words.length && c.words.every((v, i) => v === words[i]);
  if (!same || c.table === null) {
    if (c.table === null || c.table.numel !== Math.max(words.length, 1) || c.table.device !== dev) {
      c.table?.dispose();
      c.table = RawTensor.empty([Math.max(words.length, 1)], 'i64', dev);
    }
    // a table that changes during a graph capture cannot be recorded (the next eager step
    // uploads it)
    if (dev.isCapturing)
      throw new GraphCaptureError(
        'fused optimizer step: its table of parameter, gradient and state addresses changed during a graph capture ' +
          '(the first two steps make the state; gradients made anew each step move): step eagerly twice before capturing, ' +
          'with gradients that keep their storage',
      );
    c.words = null;
    dev.upload(c.table.storage.ptrAt(0), words);
    c.words = words;
  }
  return { table: c.table, n: rowsOf.length, chunks };
}

/** the kernel's state dtype: the master copies' (f32), else the state's, else (no state) the parameters' */
const stateType = (list: StepList): DType =>
  list.masters?.[0]?.dtype ?? list.state[0]?.[0]?.dtype ?? list.params[0]!.dtype;

export function adamStep(list: StepList, h: AdamStepParams): void {
  const dev = list.params[0]!.device;
  // the bias corrections are numbers of this step's count in the launch: a replay would repeat
  // them unchanged, a wrong update from the second replay on
  if (dev.isCapturing)
    throw new GraphCaptureError(
      `${h.decoupled ? 'AdamW' : 'Adam'} step: its bias corrections are host numbers of the step count, which a graph replay would repeat; run the optimizer's step() outside captureGraph (SGD's step can be captured)`,
    );
  const temps: RawTensor[] = [];
  try {
    const { table, n, chunks } = stepTable(list, temps);
    if (chunks === 0) return;
    const { grid, block } = dev.kernels.grid1d(chunks * dev.kernels.preferredBlockSize);
    const flags = (h.decoupled ? 1 : 0) | (h.amsgrad ? 2 : 0);
    dev.kernels.launch(
      'optim.hip',
      `optim_adam_${list.params[0]!.dtype}_${stateType(list)}`,
      grid,
      block,
      0,
      dev.stream,
      [
        base(table),
        arg.u32(n),
        arg.u64(chunks),
        arg.f64(h.beta1),
        arg.f64(1 - h.beta1),
        arg.f64(h.beta2),
        arg.f64(1 - h.beta2),
        arg.f64(h.eps),
        arg.f64(h.weightDecay),
        arg.f64(1 - h.lr * h.weightDecay),
        arg.f64(h.stepSize),
        arg.f64(h.invBc2Sqrt),
        arg.u32(flags),
      ],
    );
  } finally {
    for (const t of temps) t.dispose();
  }
}

export function sgdStep(list: StepList, h: SgdStepParams): void {
  const temps: RawTensor[] = [];
  try {
    const dev = list.params[0]!.device;
    const { table, n, chunks } = stepTable(list, temps);
    if (chunks === 0) return;
    const { grid, block } = dev.kernels.grid1d(chunks * dev.kernels.preferredBlockSize);
    const flags = (h.momentum !== 0 ? 1 : 0) | (h.nesterov ? 2 : 0) | (h.first ? 4 : 0);
    dev.kernels.launch(
      'optim.hip',
      `optim_sgd_${list.params[0]!.dtype}_${stateType(list)}`,
      grid,
      block,
      0,
      dev.stream,
      [
        base(table),
        arg.u32(n),
        arg.u64(chunks),
        arg.f64(h.lr),
        arg.f64(h.momentum),
        arg.f64(1 - h.dampening),
        arg.f64(h.weightDecay),
        arg.u32(flags),
      ],
    );
  } finally {
    for (const t of temps) t.dispose();
  }
}
