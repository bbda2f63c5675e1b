// cat on a GPU: the inputs that are rows of contiguous elements (the dims from the cat dim on
// merge into one unit-stride run, the dims before it into one run of any stride) are copied by
// copy.hip's cat_rows_<unit>, up to CAT_MAX inputs a launch: one launch
// where there were as many as inputs, each unit moved 16 bytes at a time where every row start
// allows it. Inputs of other layouts, and cats whose output is a single row (dim 0, or only
// size-1 dims before it: each input is then one dense block, a device memcpy), are left to the
// caller's copy into the output's slice.
import { dtypeSize } from '../../core/dtype.ts';
import type { RawTensor } from '../../device/raw-tensor.ts';
import { arg } from '../../runtime/kernels.ts';
import { CAT_ARGS_BYTES, CAT_MAX } from '../../runtime/kernel-sigs.ts';
import type { DevicePtr } from '../../runtime/gpu.ts';
import { mergedRuns, rowUnitBytes, unitName } from './rows.ts';

const FILE = 'copy.hip';
/** units a thread moves per tile (cat_rows' four loads in flight) */
const UNITS_PER_THREAD = 4;

/** an input and where it starts along the cat dim of the output */
export interface CatPart {
  readonly t: RawTensor;
  readonly at: number;
}

/** one input as rows: elements, from its view's offset */
interface RowPart {
  readonly ptr: DevicePtr;
  readonly off: number;
  readonly rowStride: number;
  readonly len: number;
  readonly col: number;
}

/**
 * Copies the parts that are rows into `out` (new, contiguous; cat along dim d) and returns the
 * parts it left, for the caller to copy one by one.
 */
export function catRows(out: RawTensor, parts: readonly CatPart[], d: number): CatPart[] {
  const shape = out.layout.shape;
  const rows = shape.slice(0, d).reduce((a, b) => a * b, 1);
  if (rows <= 1) return [...parts];
  const inner = shape.slice(d + 1).reduce((a, b) => a * b, 1);
  const taken: RowPart[] = [];
  const left: CatPart[] = [];
  for (const p of parts) {
    const l = p.t.layout;
    const after = mergedRuns(l.shape.slice(d), l.strides.slice(d));
    const before = mergedRuns(l.shape.slice(0, d), l.strides.slice(0, d));
    if (after.length > 1 || (after[0] && after[0].s !== 1) || before.length > 1) {
      left.push(p);
      continue;
    }
    taken.push({
      ptr: p.t.storage.ptrAt(0),
      off: l.offset,
      rowStride: before[0]?.s ?? 0,
      len: l.shape[d]! * inner,
      col: p.at * inner,
    });
  }
  for (let k = 0; k < taken.length; k += CAT_MAX) launchCat(out, taken.slice(k, k + CAT_MAX), rows, shape[d]! * inner);
  return left;
}

function launchCat(out: RawTensor, parts: readonly RowPart[], rows: number, rowLen: number): void {
  const dev = out.device,
    es = dtypeSize(out.dtype);
  const yPtr = out.storage.ptrAt(0),
    yOff = out.layout.offset;
  const unit = rowUnitBytes(
    es,
    [yPtr, ...parts.map((p) => p.ptr)],
    [yOff, rowLen, ...parts.flatMap((p) => [p.off, p.rowStride, p.len, p.col])],
  );
  const per = unit / es;
  const buf = new Uint8Array(CAT_ARGS_BYTES);
  const v = new DataView(buf.buffer);
  const put = (at: number, x: number | bigint) => v.setBigInt64(at, BigInt(x), true);
  put(0, yOff / per);
  put(8, rowLen / per);
  put(16, rows);
  put(24, parts.length);
  parts.forEach((p, k) => {
    v.setBigUint64(32 + 8 * k, p.ptr as bigint, true);
    put(32 + 8 * CAT_MAX + 8 * k, p.off / per);
    put(32 + 16 * CAT_MAX + 8 * k, p.rowStride / per);
    put(32 + 24 * CAT_MAX + 8 * k, p.len / per);
    put(32 + 32 * CAT_MAX + 8 * k, p.col / per);
  });
  // the contiguous kernels' block (64 threads on CUDA: 2% faster than 256 here, as for them);
  // input k takes blocks k, k + n, ... (n inputs), one tile each where the grid allows
  const block = dev.kernels.contigBlockSize,
    tile = block * UNITS_PER_THREAD,
    n = parts.length;
  const tiles = Math.max(...parts.map((p) => Math.ceil((rows * p.len) / per / tile)));
  const grid = Math.max(1, Math.min(tiles, Math.floor(dev.runtime.info.maxGridDim[0] / n))) * n;
  dev.kernels.launch(FILE, `cat_rows_${unitName(unit)}`, [grid, 1, 1], [block, 1, 1], 0, dev.stream, [
    arg.ptr(yPtr),
    arg.bytes(buf),
  ]);
}
