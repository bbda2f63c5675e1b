// The argument signatures ops pass to each kernel in hip-src/, and the by-value Geom record of
// strided kernels. test/abi/kernels-sigs.test.ts checks every signature here against every
// arch's code-object metadata and the PTX, so an op and its kernel cannot drift apart.
import type { DType } from '../core/dtype.ts';
import { DTYPES, FLOAT_DTYPES } from '../core/dtype.ts';
import { ShapeError, fmtShape } from '../core/errors.ts';
import { BINARY_OPS, CMP_OPS, PARAM_UNARY_OPS, UNARY_OPS } from '../core/op-types.ts';
import type { ArgSpec } from './arg-spec.ts';
import { ROW_KERNEL_SIGNATURES } from './kernel-sigs-reduce.ts';
import { INDEXING_KERNEL_SIGNATURES } from './kernel-sigs-indexing.ts';
import { SORT_KERNEL_SIGNATURES } from './kernel-sigs-sort.ts';
import { RANDOM_KERNEL_SIGNATURES } from './kernel-sigs-random.ts';
import { DECODE_KERNEL_SIGNATURES } from './kernel-sigs-decode.ts';
import { FLASH_BWD_KERNEL_SIGNATURES } from './kernel-sigs-flash-bwd.ts';
import { TRAIN_KERNEL_SIGNATURES } from './kernel-sigs-train.ts';

export type { ArgSpec };

export const GEOM_MAX_RANK = 8;
export const GEOM_MAX_OPERANDS = 4;
export const GEOM_BYTES = 368;
/** inputs one cat_rows launch takes (CAT_MAX in hip-src/copy.hip) */
export const CAT_MAX = 8;
export const CAT_ARGS_BYTES = 32 + 5 * 8 * CAT_MAX;

export function specSize(s: ArgSpec): number {
  switch (s) {
    case 'u32':
    case 'i32':
    case 'f32':
      return 4;
    case 'geom':
      return GEOM_BYTES;
    case 'cat':
      return CAT_ARGS_BYTES;
    default:
      return 8;
  }
}

export interface StridedOperand {
  readonly strides: readonly number[];
  /** in elements */
  readonly offset: number;
}

/** `shape` without its size-1 dims and with the dims that are contiguous for every operand
 *  merged (outermost first), and each operand's strides over the merged dims */
export function mergeDims(
  shape: readonly number[],
  operands: readonly StridedOperand[],
): { dims: number[]; strides: number[][] } {
  // merge from the innermost dim outwards
  const dims: number[] = [];
  const strides: number[][] = operands.map(() => []);
  for (let d = shape.length - 1; d >= 0; d--) {
    const n = shape[d]!;
    if (n === 1) continue;
    const last = dims.length - 1;
    if (last >= 0 && operands.every((o, k) => o.strides[d] === strides[k]![last]! * dims[last]!)) {
      dims[last] = dims[last]! * n;
    } else {
      dims.push(n);
      operands.forEach((o, k) => strides[k]!.push(o.strides[d]!));
    }
  }
  dims.reverse();
  strides.forEach((s) => s.reverse());
  return { dims, strides };
}

/**
 * Packs the Geom record of hip-src/compat.h: operand 0 is the output, then the inputs in the
 * kernel's parameter order, all over one logical `shape`. Size-1 dims are dropped and dims that
 * are contiguous for every operand are merged, so the kernel divides as little as possible.
 */
export function packGeom(op: string, shape: readonly number[], operands: readonly StridedOperand[]): Uint8Array {
  if (operands.length < 1 || operands.length > GEOM_MAX_OPERANDS) {
    throw new ShapeError(`${op}: a strided kernel takes 1 to ${GEOM_MAX_OPERANDS} operands, got ${operands.length}`);
  }
  operands.forEach((o, k) => {
    if (o.strides.length !== shape.length)
      throw new ShapeError(`${op}: operand ${k} has ${o.strides.length} strides for shape ${fmtShape(shape)}`);
  });
  const numel = shape.reduce((a, b) => a * b, 1);
  const { dims, strides } = mergeDims(shape, operands);
  if (dims.length > GEOM_MAX_RANK) {
    throw new ShapeError(
      `${op}: shape ${fmtShape(shape)} needs rank ${dims.length} after merging dims; strided kernels take at most ${GEOM_MAX_RANK}`,
    );
  }
  const buf = new Uint8Array(GEOM_BYTES);
  const dv = new DataView(buf.buffer);
  dv.setBigInt64(0, BigInt(numel), true);
  dv.setInt32(8, dims.length, true);
  dims.forEach((n, d) => dv.setBigInt64(16 + 8 * d, BigInt(n), true));
  operands.forEach((o, k) => {
    dv.setBigInt64(80 + 8 * k, BigInt(o.offset), true);
    strides[k]!.forEach((s, d) => dv.setBigInt64(112 + 64 * k + 8 * d, BigInt(s), true));
  });
  return buf;
}

// ---- signatures per kernel source ------------------------------------------------------------

export { FLOAT_DTYPES };
export const ALL_DTYPES = DTYPES;

/** the scalar parameter type of float kernels: f64 for f64 data, f32 otherwise */
export const computeSpec = (d: DType): 'f32' | 'f64' => (d === 'f64' ? 'f64' : 'f32');

/** fill's value parameter: the element itself for f32/f64/i64, else u32 (f16/bf16 as bits) */
export function fillValueSpec(d: DType): ArgSpec {
  return d === 'f32' ? 'f32' : d === 'f64' ? 'f64' : d === 'i64' ? 'i64' : 'u32';
}

const CONTIG1: readonly ArgSpec[] = ['ptr', 'ptr', 'i64', 'i64', 'u64'];
const CONTIG2: readonly ArgSpec[] = ['ptr', 'ptr', 'ptr', 'i64', 'i64', 'i64', 'u64'];
const CONTIG3: readonly ArgSpec[] = ['ptr', 'ptr', 'ptr', 'ptr', 'i64', 'i64', 'i64', 'i64', 'u64'];

function unarySigs(): Map<string, readonly ArgSpec[]> {
  const m = new Map<string, readonly ArgSpec[]>();
  for (const d of FLOAT_DTYPES) {
    for (const op of UNARY_OPS) {
      m.set(`unary_${op}_${d}`, CONTIG1);
      m.set(`unary_${op}_${d}_strided`, ['ptr', 'ptr', 'geom']);
    }
    const c = computeSpec(d);
    for (const op of PARAM_UNARY_OPS) {
      m.set(`unary_${op}_${d}`, [...CONTIG1, c, c]);
      m.set(`unary_${op}_${d}_strided`, ['ptr', 'ptr', 'geom', c, c]);
    }
  }
  return m;
}

function binarySigs(): Map<string, readonly ArgSpec[]> {
  const m = new Map<string, readonly ArgSpec[]>();
  for (const d of ALL_DTYPES) {
    for (const op of BINARY_OPS) {
      m.set(`binary_${op}_${d}`, CONTIG2);
      m.set(`binary_${op}_${d}_strided`, ['ptr', 'ptr', 'ptr', 'geom']);
      // y, a, b, offsets, nv, vpr, r0, then each input's s1, s0, inner (broadcast rows)
      if ((FLOAT_DTYPES as readonly DType[]).includes(d))
        m.set(`binary_${op}_${d}_rows`, [
          'ptr',
          'ptr',
          'ptr',
          'i64',
          'i64',
          'i64',
          'u32',
          'u32',
          'u32',
          'i64',
          'i64',
          'u32',
          'i64',
          'i64',
          'u32',
        ]);
    }
    for (const op of CMP_OPS) {
      m.set(`cmp_${op}_${d}`, CONTIG2);
      m.set(`cmp_${op}_${d}_strided`, ['ptr', 'ptr', 'ptr', 'geom']);
    }
    m.set(`where_u8_${d}`, CONTIG3);
    m.set(`where_u8_${d}_strided`, ['ptr', 'ptr', 'ptr', 'ptr', 'geom']);
  }
  return m;
}

function castSigs(): Map<string, readonly ArgSpec[]> {
  const m = new Map<string, readonly ArgSpec[]>();
  for (const from of ALL_DTYPES) {
    for (const to of ALL_DTYPES) {
      if (from === to) continue;
      m.set(`cast_${from}_${to}`, CONTIG1);
      m.set(`cast_${from}_${to}_strided`, ['ptr', 'ptr', 'geom']);
    }
  }
  return m;
}

export const COPY_WIDTHS = ['b1', 'b2', 'b4', 'b8'] as const;
export type CopyWidth = (typeof COPY_WIDTHS)[number];
export const copyWidth = (d: DType): CopyWidth =>
  `b${d === 'u8' ? 1 : d === 'f16' || d === 'bf16' ? 2 : d === 'f64' || d === 'i64' ? 8 : 4}` as CopyWidth;

function copySigs(): Map<string, readonly ArgSpec[]> {
  const m = new Map<string, readonly ArgSpec[]>();
  for (const d of ALL_DTYPES) {
    const v = fillValueSpec(d);
    m.set(`fill_${d}`, ['ptr', 'i64', 'u64', v]);
    m.set(`fill_${d}_strided`, ['ptr', 'geom', v]);
  }
  for (const w of [...COPY_WIDTHS, 'b16']) m.set(`copy_strided_${w}`, ['ptr', 'ptr', 'geom']);
  // y, x, yOff, xOff, rows, len, yRowStride, xRowStride (in units of w), group
  for (const w of [...COPY_WIDTHS, 'b16'])
    m.set(`copy_rows_${w}`, ['ptr', 'ptr', 'i64', 'i64', 'u64', 'u64', 'i64', 'i64', 'u32']);
  // y, x, yOff, xOff, nI, nJ, batch, yI, xJ, yB, xB (in elements)
  for (const w of COPY_WIDTHS)
    m.set(`transpose_${w}`, ['ptr', 'ptr', 'i64', 'i64', 'u64', 'u64', 'u64', 'i64', 'i64', 'i64', 'i64']);
  for (const w of [...COPY_WIDTHS, 'b16']) m.set(`cat_rows_${w}`, ['ptr', 'cat']);
  return m;
}

/** every kernel source and the full set of kernels it must define, with their signatures */
export const KERNEL_SIGNATURES: Readonly<Record<string, () => ReadonlyMap<string, readonly ArgSpec[]>>> = {
  'unary.hip': unarySigs,
  'binary.hip': binarySigs,
  'cast.hip': castSigs,
  'copy.hip': copySigs,
  ...ROW_KERNEL_SIGNATURES,
  ...INDEXING_KERNEL_SIGNATURES,
  ...SORT_KERNEL_SIGNATURES,
  ...RANDOM_KERNEL_SIGNATURES,
  ...DECODE_KERNEL_SIGNATURES,
  ...TRAIN_KERNEL_SIGNATURES,
  ...FLASH_BWD_KERNEL_SIGNATURES,
};
