// Indexing ops: indexSelect, gather, scatter / scatterAdd, indexAdd, embedding. Each returns a
// new tensor (inputs unchanged), except indexSet, which writes into x. Ids are u8, u32 or i64; an id outside its dim is an IndexError.
import { normDim } from '../core/layout.ts';
import { ShapeError, TensorError, fmtShape } from '../core/errors.ts';
import type { RawTensor } from '../device/raw-tensor.ts';
import { ALL_DTYPES, INDEX_DTYPES, dtypeIn, sameDType, sameDevice, sig } from '../backends/checks.ts';
import * as cpu from '../backends/cpu/indexing.ts';
import * as gpu from '../backends/gpu/indexing.ts';
import { defineOp } from './registry.ts';
import { describeValue, expectInt, expectTensor } from './args.ts';

/** how each call reads here, named when an argument has the wrong type (PyTorch puts dim first) */
const ORDER: Record<string, string> = {
  indexSelect: "x.indexSelect(ids, dim); PyTorch's index_select takes (dim, ids)",
  gather: "x.gather(ids, dim); PyTorch's gather takes (dim, ids)",
  scatter: "x.scatter(ids, src, dim); PyTorch's scatter takes (dim, ids, src)",
  scatterAdd: "x.scatterAdd(ids, src, dim); PyTorch's scatter_add takes (dim, ids, src)",
  indexAdd: "x.indexAdd(ids, src, dim); PyTorch's index_add takes (dim, ids, src)",
  indexSet: "x.indexSet(ids, src, dim); PyTorch's index_copy_ takes (dim, ids, src)",
  indexSetDistinct: 'x.indexSetDistinct(ids, src, dim)',
  embedding: 'Tensor.embedding(ids, table)',
};

/** the tensor arguments of an indexing op, by name, and its dim: types first, with the call's order */
function args(op: string, ts: Record<string, unknown>, ...dim: unknown[]): void {
  for (const [name, v] of Object.entries(ts)) expectTensor(op, name, v, ORDER[op]);
  if (dim.length === 0) return;
  if (typeof dim[0] !== 'number')
    throw new TensorError(
      `${op}: dim must be an integer, got ${describeValue(dim[0])} (the arguments are ${ORDER[op]})`,
    );
  expectInt(op, 'dim', dim[0]);
}

/** normDim, with the tensor named in the error */
function dimOf(op: string, dim: number, x: RawTensor, rank = x.rank): number {
  try {
    return normDim(op, dim, rank);
  } catch (e) {
    if (e instanceof ShapeError) throw new ShapeError(`${e.message} (x ${sig(x)})`);
    throw e;
  }
}

function checkIds(op: string, ids: RawTensor): void {
  dtypeIn(op, ids, INDEX_DTYPES);
}

function oneDim(op: string, ids: RawTensor, x: RawTensor): void {
  if (ids.rank !== 1) throw new ShapeError(`${op}: ids must be 1-d, got ids ${sig(ids)} (x ${sig(x)})`);
}

export const indexSelect = defineOp({
  name: 'indexSelect',
  family: 'indexing',
  summary: 'slices along dim picked by 1-d ids (u8/u32/i64)',
  dtypes: ALL_DTYPES,
  check: (x: RawTensor, ids: RawTensor, dim: number): [RawTensor, RawTensor, number, number[]] => {
    const op = 'indexSelect';
    args(op, { x, ids }, dim);
    sameDevice(op, x, ids);
    dtypeIn(op, x, ALL_DTYPES);
    checkIds(op, ids);
    oneDim(op, ids, x);
    const d = dimOf(op, dim, x);
    const outShape = [...x.layout.shape];
    outShape[d] = ids.layout.shape[0]!;
    return [x, ids, d, outShape];
  },
  cpu: cpu.indexSelect,
  gpu: gpu.indexSelect,
  grad: 'missing',
});

export const gather = defineOp({
  name: 'gather',
  family: 'indexing',
  summary: 'out[i][j] = x[ids[i][j]][j] along dim; ids the rank of x',
  dtypes: ALL_DTYPES,
  check: (x: RawTensor, ids: RawTensor, dim: number): [RawTensor, RawTensor, number] => {
    const op = 'gather';
    args(op, { x, ids }, dim);
    sameDevice(op, x, ids);
    dtypeIn(op, x, ALL_DTYPES);
    checkIds(op, ids);
    const d = dimOf(op, dim, x);
    const fits = ids.rank === x.rank && ids.layout.shape.every((n, i) => i === d || n <= x.layout.shape[i]!);
    if (!fits) {
      throw new ShapeError(
        `${op}: ids ${sig(ids)} must have the rank of x ${sig(x)} and no larger size outside dim ${d}`,
      );
    }
    return [x, ids, d];
  },
  cpu: cpu.gather,
  gpu: gpu.gather,
  grad: 'missing',
});

export const scatter = defineOp({
  name: 'scatter',
  family: 'indexing',
  summary: 'a copy of x with src written (scatterAdd: added) at ids along dim',
  variants: ['scatter', 'scatterAdd'],
  dtypes: ALL_DTYPES,
  check: (
    x: RawTensor,
    ids: RawTensor,
    src: RawTensor,
    dim: number,
    add: boolean,
  ): [RawTensor, RawTensor, RawTensor, number, boolean] => {
    const op = add ? 'scatterAdd' : 'scatter';
    args(op, { x, ids, src }, dim);
    sameDevice(op, x, ids, src);
    dtypeIn(op, x, ALL_DTYPES);
    sameDType(op, x, src);
    checkIds(op, ids);
    const d = dimOf(op, dim, x);
    const is = ids.layout.shape;
    const fits =
      ids.rank === x.rank &&
      src.rank === x.rank &&
      is.every((n, i) => n <= src.layout.shape[i]! && (i === d || n <= x.layout.shape[i]!));
    if (!fits) {
      throw new ShapeError(
        `${op}: ids ${sig(ids)} must have the rank of x ${sig(x)} and src ${sig(src)}, be no larger than src in any dim and no larger than x outside dim ${d}`,
      );
    }
    return [x, ids, src, d, add];
  },
  cpu: cpu.scatter,
  gpu: gpu.scatter,
  grad: 'missing',
});

/** the checks of indexAdd and indexSet: src is x with dim the length of the 1-d ids; returns dim */
function sliceWriteDim(op: string, x: RawTensor, ids: RawTensor, src: RawTensor, dim: number): number {
  args(op, { x, ids, src }, dim);
  sameDevice(op, x, ids, src);
  dtypeIn(op, x, ALL_DTYPES);
  sameDType(op, x, src);
  checkIds(op, ids);
  oneDim(op, ids, x);
  const d = dimOf(op, dim, x);
  const want = [...x.layout.shape];
  want[d] = ids.layout.shape[0]!;
  if (src.rank !== x.rank || !src.layout.shape.every((n, i) => n === want[i])) {
    throw new ShapeError(
      `${op}: src ${sig(src)} must have shape ${fmtShape(want)} (x ${sig(x)} with dim ${d} the length of ids ${sig(ids)})`,
    );
  }
  return d;
}

export const indexAdd = defineOp({
  name: 'indexAdd',
  family: 'indexing',
  summary: "a copy of x with src's slices added at 1-d ids along dim",
  dtypes: ALL_DTYPES,
  check: (x: RawTensor, ids: RawTensor, src: RawTensor, dim: number): [RawTensor, RawTensor, RawTensor, number] => [
    x,
    ids,
    src,
    sliceWriteDim('indexAdd', x, ids, src, dim),
  ],
  cpu: cpu.indexAdd,
  gpu: gpu.indexAdd,
  grad: 'missing',
});

/** the checks of indexSet and indexSetDistinct: indexAdd's, and x contiguous (written in place) */
const inPlaceWrite =
  (op: 'indexSet' | 'indexSetDistinct') =>
  (x: RawTensor, ids: RawTensor, src: RawTensor, dim: number): [RawTensor, RawTensor, RawTensor, number] => {
    const d = sliceWriteDim(op, x, ids, src, dim);
    if (!x.isContiguous()) throw new ShapeError(`${op}: x ${sig(x)} must be contiguous: it is written in place`);
    return [x, ids, src, d];
  };

/** in place: x's slices at positions ids along dim become src's (PyTorch's index_copy_) */
export const indexSet = defineOp({
  name: 'indexSet',
  family: 'indexing',
  summary: "in place: x's slices at 1-d ids (on the device) along dim become src's",
  dtypes: ALL_DTYPES,
  check: inPlaceWrite('indexSet'),
  writes: (x) => x,
  cpu: cpu.indexSet,
  gpu: gpu.indexSet,
  grad: 'missing',
});

/**
 * indexSet for ids the caller knows not to repeat (where one does, which of its slices lands is
 * unspecified, as PyTorch's index_put_): the GPU then writes every slice in one launch with no
 * buffer ordering duplicates (the serving KV cache's writes, a few hundred thousand slots a pool)
 */
export const indexSetDistinct = defineOp({
  name: 'indexSetDistinct',
  family: 'indexing',
  summary: 'in place: as indexSet, for ids that do not repeat (one launch on the GPU, no ordering buffer)',
  dtypes: ALL_DTYPES,
  check: inPlaceWrite('indexSetDistinct'),
  writes: (x) => x,
  // distinct ids leave nothing to order: the CPU's sequential writes are the reference
  cpu: (x: RawTensor, ids: RawTensor, src: RawTensor, dim: number) =>
    cpu.indexSet(x, ids, src, dim, 'indexSetDistinct'),
  gpu: gpu.indexSetDistinct,
  grad: 'missing',
});

export const embedding = defineOp({
  name: 'embedding',
  family: 'indexing',
  summary: 'rows of table [vocab, hidden] picked by ids of any shape',
  dtypes: ALL_DTYPES,
  check: (ids: RawTensor, table: RawTensor): [RawTensor, RawTensor, number[]] => {
    const op = 'embedding';
    args(op, { ids, table });
    sameDevice(op, ids, table);
    dtypeIn(op, table, ALL_DTYPES);
    checkIds(op, ids);
    if (table.rank !== 2)
      throw new ShapeError(`${op}: table must be [vocab, hidden], got table ${sig(table)} (ids ${sig(ids)})`);
    const outShape = [...ids.layout.shape, table.layout.shape[1]!];
    return [ids, table, outShape];
  },
  device: (_ids, table) => table.device,
  cpu: cpu.embedding,
  gpu: gpu.embedding,
  grad: 'missing',
});
