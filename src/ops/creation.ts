// Tensors from host data, constants, ranges and identities.
import {
  DTYPES,
  DTYPE_INFO,
  fromNumbers as hostFromNumbers,
  isDType,
  type DType,
  type HostArray,
} from '../core/dtype.ts';
import { Layout, checkShape, numel, type Shape } from '../core/layout.ts';
import { ShapeError, TensorError, fmtShape } from '../core/errors.ts';
import type { Device } from '../device/device.ts';
import { Storage } from '../device/storage.ts';
import { RawTensor } from '../device/raw-tensor.ts';
import type { NestedArray } from '../core/dtype.ts';
import { constSet } from './copy.ts';
import { defineOp } from './registry.ts';
import {
  describeValue,
  expectDType,
  expectDevice,
  expectFits,
  expectFitsBig,
  expectFitsValue,
  expectNumber,
  expectShape,
} from './args.ts';

function fromHost(host: HostArray, shape: Shape, dtype: DType, device: Device): RawTensor {
  return new RawTensor(Storage.fromHost(device, dtype, host), Layout.contiguous(shape), dtype);
}

function nestedShape(data: NestedArray): number[] {
  const shape: number[] = [];
  let cur: NestedArray = data;
  while (Array.isArray(cur)) {
    shape.push(cur.length);
    cur = cur[0] as NestedArray;
    if (cur === undefined) break;
  }
  return shape;
}

function flattenNested(data: NestedArray, shape: number[], out: number[], depth = 0): void {
  if (depth === shape.length) {
    if (typeof data !== 'number')
      throw new ShapeError(`from: nested array is ragged or holds a non-number (expected shape ${fmtShape(shape)})`);
    out.push(data);
    return;
  }
  if (!Array.isArray(data) || data.length !== shape[depth])
    throw new ShapeError(`from: nested array is ragged (expected shape ${fmtShape(shape)})`);
  for (const x of data) flattenNested(x, shape, out, depth + 1);
}

function dtypeOf(a: ArrayLike<number> | BigInt64Array): DType | null {
  if (a instanceof Float32Array) return 'f32';
  if (a instanceof Float64Array) return 'f64';
  if (a instanceof Uint8Array) return 'u8';
  if (a instanceof Uint32Array) return 'u32';
  if (a instanceof BigInt64Array || a instanceof Int32Array) return 'i64';
  return null;
}

/** host values, their shape and dtype, and the device they go to: what the creation ops build */
type HostValues = [HostArray, Shape, DType, Device];

function valuesOf(
  data: ArrayLike<number> | BigInt64Array | NestedArray,
  shape: Shape | undefined,
  dtype: DType | undefined,
  device: Device,
): HostValues {
  if (dtype !== undefined && !isDType(dtype)) throw new TensorError(`from: unknown dtype '${String(dtype)}'`);
  if (shape !== undefined) expectShape('from', 'shape', shape);
  expectDevice('from', 'device', device);
  if (typeof data === 'number') {
    const d = dtype ?? 'f32';
    expectFits('from', d, [data]);
    return hostValues(hostFromNumbers(d, [data]), shape ?? [], d, device);
  }
  if (Array.isArray(data)) {
    const s = nestedShape(data);
    const flat: number[] = [];
    flattenNested(data, s, flat);
    const finalShape = shape ?? s;
    if (numel(finalShape) !== flat.length)
      throw new ShapeError(`from: shape ${fmtShape(finalShape)} does not hold ${flat.length} values`);
    const d = dtype ?? 'f32';
    expectFits('from', d, flat);
    return hostValues(hostFromNumbers(d, flat), finalShape, d, device);
  }
  if (!isArrayLike(data))
    throw new TensorError(
      `from: data must be a typed array, an array of numbers or a number, got ${describeValue(data)}`,
    );
  const arr = data as ArrayLike<number> | BigInt64Array;
  const finalShape = shape ?? [arr.length];
  checkShape('from', finalShape);
  if (numel(finalShape) !== arr.length)
    throw new ShapeError(`from: shape ${fmtShape(finalShape)} does not hold ${arr.length} values`);
  const natural = dtypeOf(arr);
  const d = dtype ?? natural ?? 'f32';
  // same host type: copy the bits (exact for i64 and for raw f16/bf16 bits in a Uint16Array)
  if (
    arr instanceof DTYPE_INFO[d].hostArray &&
    (natural === d || (arr instanceof Uint16Array && (d === 'f16' || d === 'bf16')))
  ) {
    return hostValues((arr as HostArray).slice() as HostArray, finalShape, d, device);
  }
  if (arr instanceof BigInt64Array) {
    expectFitsBig('from', d, arr);
    const nums = Array.from(arr, (x) => Number(x));
    return hostValues(hostFromNumbers(d, nums), finalShape, d, device);
  }
  expectFits('from', d, arr as ArrayLike<number>);
  return hostValues(hostFromNumbers(d, arr as ArrayLike<number>), finalShape, d, device);
}

function isArrayLike(v: unknown): boolean {
  return ArrayBuffer.isView(v) && !(v instanceof DataView);
}

function hostValues(data: HostArray, shape: Shape, dtype: DType, device: Device): HostValues {
  return [data, shape, dtype, device];
}

export const fromData = defineOp({
  name: 'from',
  family: 'creation',
  summary: 'a tensor from a typed array, nested arrays or a number',
  dtypes: DTYPES,
  check: valuesOf,
  device: (...a) => a[3],
  cpu: fromHost,
  gpu: fromHost,
  grad: 'none',
});

function filled(shape: Shape, value: number, dtype: DType, device: Device): RawTensor {
  const t = RawTensor.empty(shape, dtype, device);
  // new CPU memory is zeroed already: zeros of any size cost no writes (no pages touched)
  if (device.isCpu && value === 0 && !Object.is(value, -0)) return t;
  try {
    constSet(t, value);
  } catch (e) {
    t.dispose();
    throw e;
  }
  return t;
}
export const full = defineOp({
  name: 'full',
  family: 'creation',
  summary: 'every element one number',
  variants: ['full', 'zeros', 'ones', 'zerosLike', 'onesLike'],
  dtypes: DTYPES,
  check: (shape: Shape, value: number, dtype: DType, device: Device): [Shape, number, DType, Device] => {
    expectShape('full', 'shape', shape);
    if (!isDType(dtype)) throw new TensorError(`full: unknown dtype '${String(dtype)}'`);
    expectNumber('full', 'value', value, false);
    expectFitsValue('full', dtype, value);
    expectDevice('full', 'device', device);
    return [shape, value, dtype, device];
  },
  device: (...a) => a[3],
  cpu: filled,
  gpu: filled,
  grad: 'none',
});

export const arange = defineOp({
  name: 'arange',
  family: 'creation',
  summary: '[start, end) by step',
  dtypes: DTYPES,
  check: arangeValues,
  device: (...a) => a[3],
  cpu: fromHost,
  gpu: fromHost,
  grad: 'none',
});

function arangeValues(start: number, end: number, step: number, dtype: DType, device: Device): HostValues {
  expectDType('arange', 'dtype', dtype);
  expectDevice('arange', 'device', device);
  if (!Number.isFinite(start) || !Number.isFinite(end) || !Number.isFinite(step) || step === 0) {
    throw new RangeError(`arange: need finite start/end and a nonzero step, got (${start}, ${end}, ${step})`);
  }
  const n = Math.max(0, Math.ceil((end - start) / step));
  const v = new Float64Array(n);
  for (let i = 0; i < n; i++) v[i] = start + i * step;
  expectFits('arange', dtype, v);
  return hostValues(hostFromNumbers(dtype, v), [n], dtype, device);
}

export const eye = defineOp({
  name: 'eye',
  family: 'creation',
  summary: 'the n x n identity',
  dtypes: DTYPES,
  check: eyeValues,
  device: (...a) => a[3],
  cpu: fromHost,
  gpu: fromHost,
  grad: 'none',
});

function eyeValues(n: number, dtype: DType, device: Device): HostValues {
  checkShape('eye', [n, n]);
  expectDType('eye', 'dtype', dtype);
  expectDevice('eye', 'device', device);
  const v = new Float64Array(n * n);
  for (let i = 0; i < n; i++) v[i * n + i] = 1;
  return hostValues(hostFromNumbers(dtype, v), [n, n], dtype, device);
}
