// The dtype names safetensors files use, what each takes per element, and which of our dtypes
// load() gives for it. Ours map one to one; BOOL is bytes of 0/1 (u8); the narrower integers
// widen on the host, chunk by chunk, to the nearest dtype that holds every value (signed to
// i64, U16 to u32). float8, U64 and the complex types have no dtype here: listed, never loaded.
import type { DType } from '../core/dtype.ts';

/** how a file dtype becomes one of ours: the same bytes, or widened element by element */
export type Widen = 'i32' | 'i16' | 'i8' | 'u16';

export interface FileDType {
  /** bytes per element in the file */
  readonly size: number;
  /** what load() gives without a dtype option; null where it cannot load it */
  readonly target: DType | null;
  readonly widen: Widen | null;
  /** why it cannot be loaded (target null only) */
  readonly why?: string;
}

const same = (size: number, target: DType): FileDType => ({ size, target, widen: null });
const wide = (size: number, target: DType, widen: Widen): FileDType => ({ size, target, widen });
const FLOAT8 = 'float8 has no dtype here (f32 f64 f16 bf16 u8 u32 i64): convert the checkpoint to BF16 or F16 first';
const none = (size: number, why: string): FileDType => ({ size, target: null, widen: null, why });

export const FILE_DTYPES: Readonly<Record<string, FileDType>> = {
  F64: same(8, 'f64'),
  F32: same(4, 'f32'),
  F16: same(2, 'f16'),
  BF16: same(2, 'bf16'),
  I64: same(8, 'i64'),
  U32: same(4, 'u32'),
  U8: same(1, 'u8'),
  BOOL: same(1, 'u8'),
  I32: wide(4, 'i64', 'i32'),
  I16: wide(2, 'i64', 'i16'),
  I8: wide(1, 'i64', 'i8'),
  U16: wide(2, 'u32', 'u16'),
  U64: none(8, 'u64 has no dtype here (values above 2^63 fit neither i64 nor u32)'),
  F8_E4M3: none(1, FLOAT8),
  F8_E5M2: none(1, FLOAT8),
  F8_E8M0: none(1, FLOAT8),
  C64: none(8, 'complex numbers have no dtype here'),
};

/** the file's name for each of our dtypes, for saving */
export const FILE_NAME_OF: Readonly<Record<DType, string>> = {
  f64: 'F64',
  f32: 'F32',
  f16: 'F16',
  bf16: 'BF16',
  i64: 'I64',
  u32: 'U32',
  u8: 'U8',
};

export function fileDType(name: string): FileDType | undefined {
  return Object.hasOwn(FILE_DTYPES, name) ? FILE_DTYPES[name] : undefined;
}
