// Seeded random tensors: argument checks and dispatch. Numbers come from Philox 4x32-10 keyed by
// the seed (src/backends/cpu/philox.ts documents the mapping from seed and element index to bits),
// generated where the tensor lives: by hip-src/random.hip on a GPU, by src/backends/cpu/random.ts on
// the CPU, with the same bits on both for the same seed, shape and dtype.
import { Layout, checkShape, numel, type Shape } from '../core/layout.ts';
import { DTypeError, ShapeError, TensorError } from '../core/errors.ts';
import { DTYPES, FLOAT_DTYPES, isDType, isFloatDType, type DType, type HostArray } from '../core/dtype.ts';
import type { Device } from '../device/device.ts';
import { Storage } from '../device/storage.ts';
import { RawTensor } from '../device/raw-tensor.ts';
import { sig } from '../backends/checks.ts';
import { seedKey } from '../backends/cpu/philox.ts';
import * as cpu from '../backends/cpu/random.ts';
import * as gpu from '../backends/gpu/random.ts';
import { readNumbers, readRaw } from '../backends/cpu/util.ts';
import { contiguous } from './copy.ts';
import { cast } from './cast.ts';
import { argsort } from './sort.ts';
import { defineOp } from './registry.ts';

let autoSeed = 0x2545f491;

const shp = (s: Shape): string => `[${s.join(', ')}]`;

/** the key words of a seed (any safe integer, taken mod 2^64), or of the next automatic seed */
function keyOf(op: string, seed: number | undefined): [number, number] {
  if (seed === undefined) return seedKey(autoSeed++);
  if (typeof seed !== 'number' || !Number.isSafeInteger(seed))
    throw new TensorError(`${op}: seed must be a safe integer, got ${String(seed)}`);
  return seedKey(seed);
}

function dtypeOf(op: string, dtype: DType, what: string, floatOnly: boolean): void {
  if (!isDType(dtype)) throw new DTypeError(`${op}: unknown dtype '${String(dtype)}' (${what})`);
  if (floatOnly && !isFloatDType(dtype)) throw new DTypeError(`${op}: dtype ${dtype} is not a float dtype (${what})`);
}

function host(device: Device, dtype: DType, shape: Shape, data: HostArray): RawTensor {
  return new RawTensor(Storage.fromHost(device, dtype, data), Layout.contiguous(shape), dtype);
}

/** a draw's arguments as the backends take them: shape, count, key words, dtype, device */
type Draw = [Shape, number, number, number, DType, Device];
function checkDraw(op: string, shape: Shape, seed: number | undefined, dtype: DType, device: Device): Draw {
  checkShape(op, shape);
  dtypeOf(op, dtype, `shape ${shp(shape)}`, true);
  const [k0, k1] = keyOf(op, seed);
  return [shape, numel(shape), k0, k1, dtype, device];
}
/** a float draw: the CPU reference's values and the GPU kernel for the same words */
function drawOp(name: 'rand' | 'randn', summary: string) {
  return defineOp({
    name,
    family: 'random',
    summary,
    dtypes: FLOAT_DTYPES,
    check: (shape: Shape, seed: number | undefined, dtype: DType, device: Device) =>
      checkDraw(name, shape, seed, dtype, device),
    device: (...a: Draw): Device => a[5],
    cpu: (shape, n, k0, k1, dtype, device) => host(device, dtype, shape, cpu[name](n, k0, k1, dtype)),
    gpu: gpu[name],
    grad: 'none',
  });
}

/** uniform [0, 1) in a float dtype */
export const rand = drawOp('rand', 'uniform [0, 1), seeded: the same numbers on every device');
/** standard normal in a float dtype (the inverse normal CDF of each word, in f32; f64 is the f32 value widened) */
export const randn = drawOp('randn', 'standard normal, seeded: the same numbers on every device');

/** the integers each dtype holds exactly, for randint's bounds */
const EXACT: Record<DType, [number, number]> = {
  u8: [0, 255],
  u32: [0, 2 ** 32 - 1],
  i64: [-Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
  f64: [-Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
  f32: [-(2 ** 24), 2 ** 24],
  f16: [-2048, 2048],
  bf16: [-256, 256],
};

type RandintArgs = [Shape, number, number, number, number, number, DType, Device];
/** integers uniform in [low, high): high - low at most 2^32 */
export const randint = defineOp({
  name: 'randint',
  family: 'random',
  summary: 'integers uniform in [low, high), high - low <= 2^32, seeded',
  dtypes: DTYPES,
  check: (
    low: number,
    high: number,
    shape: Shape,
    seed: number | undefined,
    dtype: DType,
    device: Device,
  ): RandintArgs => {
    checkShape('randint', shape);
    const what = `low ${low}, high ${high}, shape ${shp(shape)}, dtype ${dtype}`;
    dtypeOf('randint', dtype, what, false);
    if (!Number.isSafeInteger(low) || !Number.isSafeInteger(high))
      throw new TensorError(`randint: low and high must be safe integers (${what})`);
    if (low >= high) throw new TensorError(`randint: low must be below high (${what})`);
    if (high - low > 2 ** 32) throw new TensorError(`randint: high - low must be at most 2^32 (${what})`);
    const [lo, hi] = EXACT[dtype];
    if (low < lo || high - 1 > hi)
      throw new DTypeError(
        `randint: ${dtype} cannot hold every integer in [${low}, ${high}); it holds [${lo}, ${hi}] exactly (${what})`,
      );
    const [k0, k1] = keyOf('randint', seed);
    return [shape, numel(shape), k0, k1, low, high - low, dtype, device];
  },
  device: (...a) => a[7],
  cpu: (shape, n, k0, k1, low, range, dtype, device) =>
    host(device, dtype, shape, cpu.randint(n, k0, k1, low, range, dtype)),
  gpu: gpu.randint,
  grad: 'none',
});

/** u < p for a u uniform on the 2^24 grid is (w >>> 8) < ceil(p 2^24) */
const threshold = (p: number): number => Math.ceil(p * 2 ** 24);

export interface BernoulliArgs {
  seed?: number;
  dtype?: DType;
  shape?: Shape;
  device: Device;
}

type BernoulliScalarArgs = [Shape, number, number, number, number, DType, Device];
/** 0/1 with probability p: a number p with a shape */
const bernoulliScalar = defineOp({
  name: 'bernoulliScalar',
  family: 'random',
  summary: '0/1 with one probability p for every element of a shape, seeded',
  variants: ['bernoulli'],
  dtypes: DTYPES,
  check: (p: number, a: BernoulliArgs): BernoulliScalarArgs => {
    const shape = a.shape;
    if (!shape) throw new ShapeError(`bernoulli: a number p (${p}) needs a shape`);
    checkShape('bernoulli', shape);
    const dtype = a.dtype ?? 'f32',
      what = `p ${p}, shape ${shp(shape)}, dtype ${dtype}`;
    dtypeOf('bernoulli', dtype, what, false);
    if (!(p >= 0 && p <= 1)) throw new TensorError(`bernoulli: p must be in [0, 1] (${what})`);
    const [k0, k1] = keyOf('bernoulli', a.seed);
    return [shape, numel(shape), k0, k1, threshold(p), dtype, a.device];
  },
  device: (...a) => a[6],
  cpu: (shape, n, k0, k1, thr, dtype, device) => host(device, dtype, shape, cpu.bernoulliScalar(n, k0, k1, thr, dtype)),
  gpu: gpu.bernoulliScalar,
  grad: 'none',
});

/** 0/1 with the probabilities in p (float dtype) */
const bernoulliTensor = defineOp({
  name: 'bernoulli',
  family: 'random',
  summary: '0/1 with the probabilities in a tensor, seeded',
  dtypes: FLOAT_DTYPES,
  check: (p: RawTensor, a: BernoulliArgs): [RawTensor, number, number, DType, string] => {
    p.check('bernoulli');
    const dtype = a.dtype ?? p.dtype,
      what = `p ${sig(p)}, dtype ${dtype}`;
    if (!isFloatDType(p.dtype)) throw new DTypeError(`bernoulli: probabilities must have a float dtype (${what})`);
    dtypeOf('bernoulli', dtype, what, false);
    if (a.shape)
      throw new ShapeError(`bernoulli: shape is only for a number p; a tensor p gives its own shape (${what})`);
    const [k0, k1] = keyOf('bernoulli', a.seed);
    return [p, k0, k1, dtype, what];
  },
  cpu: (p, k0, k1, dtype, what) => {
    const v = readNumbers(p);
    // on a GPU the values are not read back (that would be a hidden sync): out of range acts as
    // clamped there (below 0 never, above 1 always) and NaN gives 0
    for (let i = 0; i < v.length; i++)
      if (!(v[i]! >= 0 && v[i]! <= 1))
        throw new TensorError(`bernoulli: probability ${v[i]} at flat index ${i} is outside [0, 1] (${what})`);
    return host(p.device, dtype, p.layout.shape, cpu.bernoulliTensor(v, k0, k1, dtype));
  },
  gpu: (p, k0, k1, dtype) => withContiguous(p, (c) => gpu.bernoulliTensor(c, k0, k1, dtype)),
  grad: 'none',
});

/** 0/1 with probability p: a tensor of probabilities (float dtype) or one number with a shape */
export function bernoulli(p: RawTensor | number, a: BernoulliArgs): RawTensor {
  return typeof p === 'number' ? bernoulliScalar(p, a) : bernoulliTensor(p, a);
}

/** fn over x made contiguous (a copy when it is not), the copy disposed after */
function withContiguous<T>(x: RawTensor, fn: (c: RawTensor) => T): T {
  const c = x.isContiguous() ? x : contiguous(x);
  try {
    return fn(c);
  } finally {
    if (c !== x) c.dispose();
  }
}

export interface DropoutArgs {
  seed?: number;
  training?: boolean;
}

/** zero each element with probability p and scale the others by 1 / (1 - p); a view of x
 *  (no copy) when training is false */
export const dropout = defineOp({
  name: 'dropout',
  family: 'random',
  summary: 'zeroes each element with probability p and scales the rest by 1 / (1 - p); seeded',
  dtypes: FLOAT_DTYPES,
  check: (x: RawTensor, p: number, a: DropoutArgs = {}): [RawTensor, number, number, number, number, boolean] => {
    x.check('dropout');
    // formatted only for an error (dropout runs in every training step)
    const what = (): string => `x ${sig(x)}, p ${p}`;
    if (!isFloatDType(x.dtype)) throw new DTypeError(`dropout: x must have a float dtype (${what()})`);
    if (typeof p !== 'number' || !(p >= 0 && p <= 1)) throw new TensorError(`dropout: p must be in [0, 1] (${what()})`);
    const training = a.training ?? true;
    if (typeof training !== 'boolean') throw new TensorError(`dropout: training must be a boolean (${what()})`);
    if (training && p > 0) x.device.checkDrawInCapture('dropout');
    const [k0, k1] = keyOf('dropout', a.seed);
    // f32/f16/bf16 scale in f32, as the kernel multiplies
    const scale = p === 1 ? 0 : x.dtype === 'f64' ? 1 / (1 - p) : Math.fround(1 / (1 - p));
    return [x, k0, k1, threshold(p), scale, training];
  },
  cpu: (x, k0, k1, thr, scale, training) => (!training ? x.view(x.layout) : dropCpu(x, k0, k1, thr, scale)),
  gpu: (x, k0, k1, thr, scale, training) => (!training ? x.view(x.layout) : dropGpu(x, k0, k1, thr, scale)),
  // the same mask again, from the same key: the gradient is dropout's own map applied to g
  grad: (g, [x, k0, k1, thr, scale, training]) => [
    [x, training ? dropoutKeyed(g, k0, k1, thr, scale) : g.view(g.layout)],
  ],
});

// f32 data goes to the CPU reference as it is, not widened to f64 and narrowed back
const dropCpu = (x: RawTensor, k0: number, k1: number, thr: number, scale: number): RawTensor =>
  host(
    x.device,
    x.dtype,
    x.layout.shape,
    cpu.dropout(x.dtype === 'f32' ? (readRaw(x) as Float32Array) : readNumbers(x), k0, k1, thr, scale, x.dtype),
  );
const dropGpu = (x: RawTensor, k0: number, k1: number, thr: number, scale: number): RawTensor =>
  withContiguous(x, (c) => gpu.dropout(c, k0, k1, thr, scale));

/** dropout with the Philox key, threshold and scale given (what dropout's gradient runs) */
export const dropoutKeyed = defineOp({
  name: 'dropoutKeyed',
  family: 'random',
  summary: "dropout's mask from a given Philox key (dropout's gradient)",
  dtypes: FLOAT_DTYPES,
  check: (
    x: RawTensor,
    k0: number,
    k1: number,
    thr: number,
    scale: number,
  ): [RawTensor, number, number, number, number] => {
    x.check('dropoutKeyed');
    if (!isFloatDType(x.dtype)) throw new DTypeError(`dropoutKeyed: x must have a float dtype (x ${sig(x)})`);
    for (const v of [k0, k1, thr])
      if (!Number.isInteger(v) || v < 0 || v > 0xffffffff)
        throw new TensorError(`dropoutKeyed: key words and threshold must be u32 integers (x ${sig(x)})`);
    return [x, k0, k1, thr, scale];
  },
  cpu: dropCpu,
  gpu: dropGpu,
  grad: 'missing',
});

export interface MultinomialArgs {
  replacement?: boolean;
  seed?: number;
  dtype?: 'i64' | 'u32';
}

/**
 * numSamples indices per row of probs ([n] or [rows, n], float dtype, not necessarily
 * normalized). With replacement: inverse CDF on f64 running sums. Without: the numSamples
 * smallest exponential-race keys -log(u) / p of each row (a stable argsort), which is an exact
 * draw without replacement with probabilities proportional to p.
 */
export const multinomial = defineOp({
  name: 'multinomial',
  family: 'random',
  summary: 'category indices per row of (unnormalized) probabilities, with or without replacement; seeded',
  dtypes: FLOAT_DTYPES,
  check: (probs: RawTensor, numSamples: number, a: MultinomialArgs = {}): [MultinomialDraw] => {
    probs.check('multinomial');
    const replacement = a.replacement ?? false,
      dtype = a.dtype ?? 'i64';
    const what = `probs ${sig(probs)}, numSamples ${numSamples}, replacement ${replacement}`;
    if (!isFloatDType(probs.dtype))
      throw new DTypeError(`multinomial: probabilities must have a float dtype (${what})`);
    if (dtype !== 'i64' && dtype !== 'u32')
      throw new DTypeError(`multinomial: index dtype must be i64 or u32, got ${String(dtype)} (${what})`);
    if (probs.rank !== 1 && probs.rank !== 2)
      throw new ShapeError(`multinomial: probs must be [n] or [rows, n] (${what})`);
    if (typeof replacement !== 'boolean') throw new TensorError(`multinomial: replacement must be a boolean (${what})`);
    const cols = probs.layout.shape[probs.rank - 1]!,
      rows = probs.rank === 2 ? probs.layout.shape[0]! : 1;
    if (!Number.isInteger(numSamples) || numSamples < 1)
      throw new TensorError(`multinomial: numSamples must be an integer >= 1 (${what})`);
    if (cols < 1) throw new ShapeError(`multinomial: a row needs at least one category (${what})`);
    if (!replacement && numSamples > cols)
      throw new TensorError(
        `multinomial: numSamples ${numSamples} exceeds the ${cols} categories of a row without replacement (${what})`,
      );
    if (cols > 2 ** 32)
      throw new ShapeError(`multinomial: rows of more than 2^32 categories are not supported (${what})`);
    const [k0, k1] = keyOf('multinomial', a.seed);
    const outShape = probs.rank === 2 ? [rows, numSamples] : [numSamples];
    return [{ probs, numSamples, replacement, dtype, k0, k1, rows, cols, outShape, what }];
  },
  device: (d) => d.probs.device,
  cpu: (d) => (d.rows === 0 ? RawTensor.empty(d.outShape, d.dtype, d.probs.device) : multinomialCpu(d)),
  gpu: (d) => (d.rows === 0 ? RawTensor.empty(d.outShape, d.dtype, d.probs.device) : multinomialGpu(d)),
  grad: 'none',
});

/** one checked multinomial call */
interface MultinomialDraw {
  probs: RawTensor;
  numSamples: number;
  replacement: boolean;
  dtype: 'i64' | 'u32';
  k0: number;
  k1: number;
  rows: number;
  cols: number;
  outShape: number[];
  what: string;
}

function multinomialCpu(d: MultinomialDraw): RawTensor {
  const { probs, numSamples, replacement, dtype, k0, k1, rows, cols, outShape, what } = d;
  const dev = probs.device;
  // checked where the values are at hand; on a GPU reading them would be a hidden sync
  const pv = readNumbers(probs);
  for (let r = 0; r < rows; r++) {
    let sum = 0,
      nonzero = 0;
    for (let j = 0; j < cols; j++) {
      const v = pv[r * cols + j]!;
      if (!(v >= 0) || v === Infinity)
        throw new TensorError(
          `multinomial: probability ${v} at row ${r}, index ${j} is negative, infinite or NaN (${what})`,
        );
      sum += v;
      if (v > 0) nonzero++;
    }
    if (!(sum > 0)) throw new TensorError(`multinomial: row ${r} has no nonzero probability (${what})`);
    if (!replacement && nonzero < numSamples)
      throw new TensorError(
        `multinomial: row ${r} has ${nonzero} nonzero probabilities, fewer than numSamples ${numSamples} without replacement (${what})`,
      );
  }
  if (replacement)
    return host(
      dev,
      dtype,
      outShape,
      toIndex(cpu.multinomialDraw(cpu.multinomialCdf(pv, rows, cols), rows, cols, numSamples, k0, k1), dtype),
    );
  return firstOfRace(host(dev, 'f32', probs.layout.shape, cpu.multinomialKeys(pv, k0, k1)), numSamples, dtype);
}

function multinomialGpu(d: MultinomialDraw): RawTensor {
  const { probs, numSamples, replacement, dtype, k0, k1, rows, cols, outShape } = d;
  if (replacement)
    return withContiguous(probs, (c) => gpu.multinomialDraw(c, rows, cols, numSamples, k0, k1, dtype, outShape));
  return firstOfRace(
    withContiguous(probs, (c) => gpu.multinomialKeys(c, k0, k1)),
    numSamples,
    dtype,
  );
}

/** the numSamples smallest keys' indices per row (keys disposed) */
function firstOfRace(keys: RawTensor, numSamples: number, dtype: 'i64' | 'u32'): RawTensor {
  const order = argsort(keys, -1, false);
  keys.dispose();
  const first = order.narrow(-1, 0, numSamples);
  const out = dtype === 'u32' ? contiguous(first) : cast(first, dtype);
  first.dispose();
  order.dispose();
  return out;
}

function toIndex(v: Float64Array, dtype: 'i64' | 'u32'): HostArray {
  if (dtype === 'u32') return Uint32Array.from(v);
  const o = new BigInt64Array(v.length);
  for (let i = 0; i < v.length; i++) o[i] = BigInt(v[i]!);
  return o;
}
