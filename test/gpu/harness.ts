// Shared helpers of the GPU suites: find the GPU (or register every test as skipped, saying
// why), and checkOp, which runs an op on the GPU over inputs in every memory layout and checks
// it against the CPU reference.
//
// Poison is on for every suite that uses this module: every new device allocation is filled
// with 0xff, so an op that leaves output elements unwritten shows NaN (floats) or all-ones bits
// (ints) instead of lucky zeros. It is turned on in code (setPoison, below the imports), which
// holds under Node and Bun alike, since storage reads the setting at the first device
// allocation, not at load (a `data:` import that set the variable first is never evaluated by
// Bun).
import { appendFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Device, Tensor, NotOnDeviceError, TensorError, tidy, type DType } from '../../src/index.ts';
import { rocmProbe } from '../../src/runtime/rocm/runtime.ts';
import { cudaProbe } from '../../src/runtime/cuda/runtime.ts';
import { poisonEnabled, setPoison } from '../../src/device/storage.ts';
import { setCpuExact } from '../../src/backends/cpu/mode.ts';
import { withLayout, type LayoutKind } from '../helpers.ts';

setPoison(true);
// the CPU side of every comparison is the exact reference: f64 sums in index order, no BLAS
setCpuExact(true);

export { LAYOUTS, type LayoutKind } from '../helpers.ts';

// ---- which ops the suites expect on the GPU ------------------------------------------------

/**
 * Every op the GPU suites hold to the GPU contract. An op listed here that throws
 * NotOnDeviceError FAILS its test; an op left out is registered as skipped with a note. Edit
 * this list (and nothing else) to change what the suites demand.
 */
export const GPU_OPS: readonly string[] = [
  // unary
  'exp',
  'log',
  'sin',
  'cos',
  'tanh',
  'neg',
  'recip',
  'sqr',
  'sqrt',
  'gelu',
  'geluErf',
  'erf',
  'relu',
  'silu',
  'abs',
  'ceil',
  'floor',
  'round',
  'sign',
  'sigmoid',
  // unary with parameters
  'affine',
  'powf',
  'elu',
  'clamp',
  'leakyRelu',
  // binary, comparisons, select, cast
  'add',
  'sub',
  'mul',
  'div',
  'maximum',
  'minimum',
  'eq',
  'ne',
  'lt',
  'le',
  'gt',
  'ge',
  'where',
  'cast',
  // copies and in-place writes
  'fill',
  'contiguous',
  'cat',
  'sliceSet',
  'copy2d',
  // linear algebra (linear and qkvToCache: the fused decode-step GEMVs of hip-src/gemv-fused.hip)
  'matmul',
  'linear',
  'qkvToCache',
  // dnn
  'conv1d',
  'conv2d',
  'convTranspose1d',
  'convTranspose2d',
  'avgPool2d',
  'maxPool2d',
  'softmax',
  'logSoftmax',
  'batchNorm',
  'batchNormTrain',
  'batchNormTrainBackward',
  'localResponseNorm',
  'localResponseNormBackward',
  // reductions, norms, rotary embeddings (kernels in hip-src/reduce, norm, rope)
  'sum',
  'mean',
  'min',
  'max',
  'argmin',
  'argmax',
  'layerNorm',
  'rmsNorm',
  'rope',
  'ropeI',
  'ropeThd',
  // indexing and upsampling (kernels in hip-src/indexing, upsample)
  'indexSelect',
  'gather',
  'scatter',
  'scatterAdd',
  'indexAdd',
  'embedding',
  'upsampleNearest1d',
  'upsampleNearest2d',
  'upsampleBilinear2d',
  // sorting and selection (hip-src/sort.hip, topk.hip) and attention from GPU ops
  'argsort',
  'sort',
  'topk',
  'scaledDotProductAttention',
  'pagedAttention',
  // prefix sums (GEMMs with triangular ones on rocBLAS / cuBLAS)
  'cumsum',
  // in-place write at ids held on the device (the indexing kernels' scatter)
  'indexSet',
  'indexSetDistinct',
  // recurrent layers (MIOpen / cuDNN RNN calls)
  'rnn',
  'rnnBackward',
  // fused training ops
  'softmaxBackward',
  'layerNormBackward',
  'rmsNormBackward',
  'swiglu',
  'swigluBackward',
  'crossEntropyRows',
  'crossEntropyRowsBackward',
  'adamStep',
  'sgdStep',
];

// ---- finding the GPU ---------------------------------------------------------------------------

let current: Device | null = null;

/** why there is no GPU, in one line */
function noGpuReason(): string {
  const short = (r: string) => (r ? r.split(';')[0]! : 'none');
  return `no ROCm or CUDA device found (ROCm: ${short(rocmProbe().reason)}; CUDA: ${short(cudaProbe().reason)})`;
}

/**
 * The GPU the suite runs on, or null after printing one line saying why the suite is skipped.
 * ROCM_TENSOR_GPU_TESTS_ON=cpu runs the op suites against the CPU device instead, which checks
 * the harness and the tests themselves where no GPU is present (it proves nothing about a GPU).
 */
export function gpuOrSkip(label: string, opts: { needsRuntime?: boolean } = {}): Device | null {
  if (process.env.ROCM_TENSOR_GPU_TESTS_ON === 'cpu' && !opts.needsRuntime) {
    console.log(
      `${label}: running against the CPU device (ROCM_TENSOR_GPU_TESTS_ON=cpu: a self-check of the harness, not a GPU test)`,
    );
    return Device.cpu();
  }
  let dev: Device | null = null;
  let reason = '';
  try {
    dev = Device.bestGpu();
    if (!dev) reason = noGpuReason();
  } catch (e) {
    reason = `looking for a GPU failed: ${(e as Error).message}`;
  }
  if (!dev) {
    console.log(`${label}: skipped, ${reason}`);
    return null;
  }
  if (!poisonEnabled())
    throw new Error('harness: poison is off: something turned it off after test/gpu/harness.ts loaded');
  const info = dev.runtime.info;
  console.log(
    `${label}: on ${dev} "${info.name}" (${info.archFull}, runtime ${info.runtimeVersion}, driver ${info.driverVersion})`,
  );
  return dev;
}

export interface GpuSuite {
  /** null when every test is skipped */
  readonly device: Device | null;
  /** registers a test that gets the device; skipped when there is none */
  test(name: string, fn: (dev: Device) => unknown): void;
  /**
   * registers the test of one op: skipped (with a note) when `op` is not in GPU_OPS, so that
   * a NotOnDeviceError from a listed op is a failure and never a silent skip
   */
  opTest(op: string, fn: (dev: Device) => unknown, name?: string): void;
  run(): void;
}

export function gpuSuite(label: string, opts: { needsRuntime?: boolean } = {}): GpuSuite {
  const device = gpuOrSkip(label, opts);
  current = device;
  const notListed: string[] = [];
  const suite: GpuSuite = {
    device,
    test(name, fn) {
      if (!device) {
        test.skip(name, () => {});
        return;
      }
      test(name, async () => {
        current = device;
        await fn(device);
      });
    },
    opTest(op, fn, name = op) {
      if (device && !GPU_OPS.includes(op)) {
        notListed.push(op);
        test.skip(name, () => {});
        return;
      }
      suite.test(name, fn);
    },
    run() {
      test.after(() => {
        if (notListed.length) console.log(`${label}: skipped as not in GPU_OPS: ${notListed.join(', ')}`);
        if (device) printReport(label);
      });
      test.run();
    },
  };
  return suite;
}

// ---- comparing an op on the GPU with the CPU reference -------------------------------------

/** relative error by norm allowed per output dtype; integer results must be exact */
export const DEFAULT_TOL: Record<DType, number> = {
  f64: 1e-12,
  f32: 1e-5,
  f16: 1e-2,
  bf16: 1e-2,
  u8: 0,
  u32: 0,
  i64: 0,
};

export interface CheckOptions {
  /** input indices kept contiguous in every case (weights, in-place destinations of copies) */
  readonly fixed?: readonly number[];
  /** relative error by norm allowed: one number, or per output dtype over DEFAULT_TOL */
  readonly tol?: number | Partial<Record<DType, number>>;
  /** a label for this variant of the op in reports and failures (e.g. 'stride 2') */
  readonly variant?: string;
}

export type MakeInputs = (dtype: DType) => Tensor[];
export type RunOp = (inputs: Tensor[], dtype: DType) => Tensor;

export interface CaseResult {
  readonly op: string;
  readonly variant: string;
  readonly dtype: DType;
  readonly layout: LayoutKind;
  /** relative error by norm (0 for exact matches); null when both sides rejected the case */
  readonly err: number | null;
  readonly tol: number;
  readonly ok: boolean;
  readonly note: string;
}

const report: CaseResult[] = [];

/**
 * For each dtype and layout: fresh random CPU inputs from makeInputs, moved to the GPU and
 * given the layout there (contiguous, transposed, narrowed, offset or broadcast; the CPU runs
 * on the same logical values), the op run on both, shapes, dtypes and values compared. A case
 * the CPU reference rejects (a TensorError, e.g. an unsupported dtype) must be rejected on the
 * GPU with the same error class. Collects every failing case and throws once, listing them.
 */
export async function checkOp(
  name: string,
  dtypes: readonly DType[],
  layouts: readonly LayoutKind[],
  makeInputs: MakeInputs,
  run: RunOp,
  opts: CheckOptions = {},
): Promise<CaseResult[]> {
  const dev = current;
  if (!dev) throw new Error(`checkOp(${name}): no device (call it inside a gpuSuite test)`);
  const results: CaseResult[] = [];
  for (const dtype of dtypes) {
    for (const layout of layouts) {
      const r = await tidy(() => checkCase(dev, name, dtype, layout, makeInputs, run, opts));
      results.push(r);
      report.push(r);
      if (process.env.ROCM_TENSOR_TEST_REPORT)
        appendFileSync(process.env.ROCM_TENSOR_TEST_REPORT, JSON.stringify(r) + '\n');
    }
  }
  const bad = results.filter((r) => !r.ok);
  if (bad.length) {
    const lines = bad.slice(0, 20).map((r) => `  ${caseLabel(r)}: ${r.note}`);
    if (bad.length > 20) lines.push(`  ... and ${bad.length - 20} more`);
    assert.unreachable(`${name}: ${bad.length} of ${results.length} cases failed on ${dev}:\n${lines.join('\n')}`);
  }
  return results;
}

function caseLabel(r: CaseResult): string {
  return `${r.op}${r.variant ? ` (${r.variant})` : ''} ${r.dtype} ${r.layout}`;
}

function tolFor(opts: CheckOptions, dtype: DType): number {
  if (typeof opts.tol === 'number') return opts.tol;
  return opts.tol?.[dtype] ?? DEFAULT_TOL[dtype];
}

function errName(e: unknown): string {
  return e instanceof Error ? `${e.constructor.name}: ${e.message}` : String(e);
}

async function checkCase(
  dev: Device,
  name: string,
  dtype: DType,
  layout: LayoutKind,
  makeInputs: MakeInputs,
  run: RunOp,
  opts: CheckOptions,
): Promise<CaseResult> {
  const variant = opts.variant ?? '';
  const base = { op: name, variant, dtype, layout };
  const fail = (note: string, err: number | null = null, tol = 0): CaseResult => ({
    ...base,
    err,
    tol,
    ok: false,
    note,
  });

  const inputs = makeInputs(dtype);
  const cpuIns: Tensor[] = [];
  const devIns: Tensor[] = [];
  try {
    inputs.forEach((t, i) => {
      const kind: LayoutKind = opts.fixed?.includes(i) ? 'contiguous' : layout;
      cpuIns.push(withLayout(t, kind).ref);
      devIns.push(withLayout(t.to(dev), kind).x);
    });
  } catch (e) {
    return fail(`building the ${layout} inputs on ${dev} failed: ${errName(e)}`);
  }

  let expected: Tensor | null = null;
  let cpuError: unknown = null;
  try {
    expected = run(cpuIns, dtype);
  } catch (e) {
    if (!(e instanceof TensorError) || e instanceof NotOnDeviceError) throw e;
    cpuError = e;
  }

  let got: Tensor;
  try {
    got = run(devIns, dtype);
  } catch (e) {
    if (cpuError && e instanceof TensorError && e.constructor === (cpuError as Error).constructor) {
      return {
        ...base,
        err: null,
        tol: 0,
        ok: true,
        note: `rejected on both (${(cpuError as Error).constructor.name})`,
      };
    }
    if (e instanceof NotOnDeviceError) return fail(`NOT ON THE GPU: ${e.message}`);
    return fail(`${dev} threw ${errName(e)}${cpuError ? `; the CPU threw ${errName(cpuError)}` : ''}`);
  }
  if (!expected) return fail(`the CPU rejected it (${errName(cpuError)}) but ${dev} returned ${got.describe()}`);

  if (got.device !== dev) return fail(`result is on ${got.device}, not ${dev}`);
  if (got.dtype !== expected.dtype) return fail(`result dtype ${got.dtype}, CPU gives ${expected.dtype}`);
  if (got.shape.join(',') !== expected.shape.join(','))
    return fail(`result shape [${got.shape}], CPU gives [${expected.shape}]`);

  let a: ArrayLike<number | bigint>;
  try {
    a = await got.toArray();
  } catch (e) {
    return fail(`reading the result back failed: ${errName(e)}`);
  }
  const b = expected.toArraySync();
  const tol = tolFor(opts, got.dtype);
  const cmp = tol === 0 ? compareExact(a, b) : compareNorm(a as ArrayLike<number>, b as ArrayLike<number>, tol);
  return { ...base, err: cmp.err, tol, ok: cmp.ok, note: cmp.note };
}

interface Cmp {
  ok: boolean;
  err: number;
  note: string;
}

/** equal element for element (ints, i64 as bigint, and floats asked to be exact); NaN never equal */
export function compareExact(a: ArrayLike<number | bigint>, b: ArrayLike<number | bigint>): Cmp {
  if (a.length !== b.length) return { ok: false, err: Infinity, note: `length ${a.length}, expected ${b.length}` };
  let bad = 0,
    first = -1;
  for (let i = 0; i < b.length; i++) {
    const x = a[i]!,
      y = b[i]!;
    if (x !== y || (typeof x === 'number' && Number.isNaN(x))) {
      bad++;
      if (first < 0) first = i;
    }
  }
  if (!bad) return { ok: true, err: 0, note: 'exact' };
  return {
    ok: false,
    err: Infinity,
    note: `${bad} of ${b.length} elements differ; first at ${first}: got ${a[first]}, expected ${b[first]}`,
  };
}

/** |a - b|_2 / |b|_2 <= tol; a NaN anywhere (either side) fails, infinities must match exactly */
export function compareNorm(a: ArrayLike<number>, b: ArrayLike<number>, tol: number): Cmp {
  if (a.length !== b.length) return { ok: false, err: Infinity, note: `length ${a.length}, expected ${b.length}` };
  let num = 0,
    den = 0,
    worst = -1,
    worstDiff = -1;
  for (let i = 0; i < b.length; i++) {
    const x = a[i]!,
      y = b[i]!;
    if (Number.isNaN(x) || Number.isNaN(y)) {
      return { ok: false, err: Infinity, note: `NaN at element ${i}: got ${x}, expected ${y}` };
    }
    if (!Number.isFinite(x) || !Number.isFinite(y)) {
      if (x !== y) return { ok: false, err: Infinity, note: `element ${i}: got ${x}, expected ${y}` };
      continue;
    }
    const d = Math.abs(x - y);
    num += d * d;
    den += y * y;
    if (d > worstDiff) {
      worstDiff = d;
      worst = i;
    }
  }
  const err = den > 0 ? Math.sqrt(num) / Math.sqrt(den) : Math.sqrt(num);
  const ok = err <= tol;
  const note = ok
    ? ''
    : `relative error ${err.toExponential(2)} > ${tol}; worst element ${worst}: got ${a[worst]}, expected ${b[worst]}`;
  return { ok, err, note };
}

/** one line per (op, variant, dtype): the error of each layout, then the failures */
function printReport(suiteLabel: string): void {
  if (!report.length) return;
  const groups = new Map<string, CaseResult[]>();
  for (const r of report) {
    const k = `${r.op}${r.variant ? ` (${r.variant})` : ''} ${r.dtype}`;
    let g = groups.get(k);
    if (!g) {
      g = [];
      groups.set(k, g);
    }
    g.push(r);
  }
  const fmt = (r: CaseResult) =>
    (r.err === null ? 'n/a' : r.err === 0 ? '0' : r.err.toExponential(1)) + (r.ok ? '' : '!');
  console.log(
    `\n${suiteLabel}: max relative error by norm per (op, dtype, layout); '!' = failed, n/a = rejected on both`,
  );
  for (const [k, rs] of groups) console.log(`  ${k.padEnd(34)} ${rs.map((r) => `${r.layout} ${fmt(r)}`).join(', ')}`);
  const failed = report.filter((r) => !r.ok).length;
  console.log(`${suiteLabel}: ${report.length} cases, ${failed} failed`);
}

// ---- small helpers the suites share --------------------------------------------------------

/** runs fn and returns what it threw (fails when it throws nothing) */
export function thrown(fn: () => unknown, what: string): Error {
  try {
    fn();
  } catch (e) {
    return e as Error;
  }
  assert.unreachable(`${what}: expected an error, got none`);
  throw new Error('unreachable');
}

export async function rejected(p: Promise<unknown>, what: string): Promise<Error> {
  try {
    await p;
  } catch (e) {
    return e as Error;
  }
  assert.unreachable(`${what}: expected a rejection, got none`);
  throw new Error('unreachable');
}

export const FLOAT_DTYPES: readonly DType[] = ['f32', 'f64', 'f16', 'bf16'];
export const INT_DTYPES: readonly DType[] = ['u8', 'u32', 'i64'];
export const ALL_DTYPES: readonly DType[] = [...FLOAT_DTYPES, ...INT_DTYPES];

/** a tensor on the CPU from plain numbers (rounded to dtype) */
export function cpuFrom(values: number[], shape: number[], dtype: DType): Tensor {
  return Tensor.from(values, { shape, dtype });
}
