// Convolutions at the benchmark's kinds of shape (3x3 padding 1; transposed 4x4 stride 2
// padding 1), with channel counts that let cuDNN pick tensor-core algorithms, against the CPU
// reference: first with the algorithms timed by cudnnFind*AlgorithmEx (the default), then with
// ROCM_TENSOR_CUDNN_FIND=0 (cuDNN's heuristic ranking). On CUDA it also checks which path chose
// each algorithm, so the timed path is the one the results came from. Find overwrites the
// output while timing; the first call of each shape (the one that runs Find) is checked too.
// On ROCm the same cases run on MIOpen (which always finds) and the cuDNN checks are skipped.
import * as assert from 'uvu/assert';
import { gpuSuite, checkOp, thrown, LAYOUTS, FLOAT_DTYPES } from './harness.ts';
import { TensorError, type Device, type DType, type ConvOptions, type ConvTransposeOptions } from '../../src/index.ts';
import { CudnnApi, type AlgoChoice } from '../../src/ffi/cudnn.ts';
import { randT } from '../helpers.ts';

const s = gpuSuite('gpu/conv-find');
const r = (shape: number[], d: DType) => randT(shape, d, -1, 1);
// as ops-dnn: 1e-4 holds a real f32 result and catches TF32 (about 1e-3)
const TOL = { f32: 1e-4 };
const ENV = 'ROCM_TENSOR_CUDNN_FIND';

type Op = 'conv2d' | 'convTranspose2d';
interface Case {
  readonly op: Op; readonly variant: string; readonly x: number[]; readonly w: number[];
  readonly o: ConvOptions & ConvTransposeOptions; readonly bias: number;
  /** the start of the cuDNN cache key after `find ` / `heuristic `: direction, then dtype */
  readonly key: (d: DType) => string;
}
// the key's shape part is convKey in src/ffi/cudnn.ts: dtype, n, cIn, inH, inW, cOut, kH, kW, ...
const CASES: readonly Case[] = [
  { op: 'conv2d', variant: '3x3 padding 1, 32 -> 48 channels, bias', x: [2, 32, 14, 14], w: [48, 32, 3, 3], o: { padding: 1 }, bias: 48,
    key: (d) => `fwd ${d},2,32,14,14,48,3,3,` },
  { op: 'convTranspose2d', variant: '4x4 stride 2 padding 1, 32 -> 16 channels, bias', x: [2, 32, 7, 7], w: [32, 16, 4, 4],
    o: { stride: 2, padding: 1 }, bias: 16, key: (d) => `bwdData ${d},2,32,7,7,16,4,4,` },
];

function cudnnOf(dev: Device): CudnnApi | null {
  if (dev.kind !== 'cuda') return null;
  const dnn = dev.runtime.dnn();
  return dnn instanceof CudnnApi ? dnn : null;
}

/** the choice cached for `c` in `dtype` by `how`, or null */
function choiceFor(api: CudnnApi, how: 'find' | 'heuristic', c: Case, dtype: DType): [string, AlgoChoice] | null {
  const prefix = `${how} ${c.key(dtype)}`;
  for (const e of api.algoChoices()) if (e[0].startsWith(prefix)) return e;
  return null;
}

async function runCases(dtypes: readonly DType[], layouts: typeof LAYOUTS, tag: string): Promise<void> {
  for (const c of CASES) {
    const make = (d: DType) => [r(c.x, d), r(c.w, d), r([c.bias], d)];
    await checkOp(c.op, dtypes, layouts, make, ([x, w, b]) => {
      const opts = { ...c.o, bias: b! };
      return c.op === 'conv2d' ? x!.conv2d(w!, opts) : x!.convTranspose2d(w!, opts);
    }, { variant: `${c.variant}, ${tag}`, tol: TOL });
  }
}

/** runs fn with the variable set (or removed, for undefined), restoring it afterwards */
async function withEnv(value: string | undefined, fn: () => Promise<void> | void): Promise<void> {
  const before = process.env[ENV];
  if (value === undefined) delete process.env[ENV]; else process.env[ENV] = value;
  try { await fn(); } finally { if (before === undefined) delete process.env[ENV]; else process.env[ENV] = before; }
}

function printChoices(api: CudnnApi, how: 'find' | 'heuristic'): void {
  for (const [k, v] of api.algoChoices()) {
    if (!k.startsWith(`${how} `)) continue;
    console.log(`  ${k}: algo ${v.algo} math ${v.mathType} workspace ${v.workspace}${v.ms === null ? '' : ` (${v.ms.toFixed(3)} ms)`}`);
  }
}

s.opTest('conv2d', async (dev) => {
  await withEnv(undefined, async () => {
    await runCases(FLOAT_DTYPES, LAYOUTS, 'timed');
    const api = cudnnOf(dev);
    if (!api) { console.log(`gpu/conv-find: ${dev} does not use cuDNN: the algorithm-source checks are skipped`); return; }
    console.log(`gpu/conv-find: cuDNN ${api.version}, timed choices:`);
    printChoices(api, 'find');
    // f64 is only printed: Find may legitimately time nothing usable there (then the ranking decides)
    for (const c of CASES) {
      for (const d of ['f32', 'f16', 'bf16'] as const) {
        const hit = choiceFor(api, 'find', c, d);
        assert.ok(hit, `${c.op} ${c.variant} ${d}: no choice cached under find (choices: ${[...api.algoChoices().keys()].join('; ')})`);
        assert.is(hit[1].by, 'find', `${c.op} ${c.variant} ${d}: chosen by ${hit[1].by}, not timed (${hit[0]})`);
        assert.ok(hit[1].ms !== null && hit[1].ms >= 0, `${c.op} ${d}: Find's time ${hit[1].ms}`);
      }
    }
  });
}, 'conv2d and convTranspose2d, algorithms timed by cudnnFind*AlgorithmEx');

s.opTest('conv2d', async (dev) => {
  await withEnv('0', async () => {
    await runCases(['f32', 'bf16'], ['contiguous', 'transposed'], `${ENV}=0`);
    const api = cudnnOf(dev);
    if (!api) return;
    console.log(`gpu/conv-find: ${ENV}=0, heuristic choices:`);
    printChoices(api, 'heuristic');
    for (const c of CASES) {
      for (const d of ['f32', 'bf16'] as const) {
        const hit = choiceFor(api, 'heuristic', c, d);
        assert.ok(hit, `${c.op} ${c.variant} ${d}: no choice cached under heuristic`);
        assert.is(hit[1].by, 'heuristic');
        assert.is(hit[1].ms, null);
      }
    }
  });
}, `conv2d and convTranspose2d with ${ENV}=0 (cuDNN's heuristic ranking)`);

s.test(`a bad ${ENV} is an error naming it (cuDNN)`, async (dev) => {
  if (!cudnnOf(dev)) { console.log(`gpu/conv-find: ${dev} does not use cuDNN: ${ENV} is not read there`); return; }
  const x = randT([1, 8, 6, 6], 'f32', -1, 1, dev), w = randT([8, 8, 3, 3], 'f32', -1, 1, dev);
  await withEnv('yes', () => {
    const e = thrown(() => x.conv2d(w, { padding: 1 }), `conv2d with ${ENV}=yes`);
    assert.ok(e instanceof TensorError && e.message.includes(ENV) && e.message.includes('"yes"'), String(e));
  });
  x.dispose(); w.dispose();
});

s.run();
