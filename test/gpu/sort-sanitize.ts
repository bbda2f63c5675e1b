// A short run of every kernel of sort.hip and topk.hip for compute-sanitizer: radix_rows at each
// tile size, the long-row kernels (radix_counts, radix_sweep with its look-back) with 1, 2, 4 and
// 8 digit passes, rows of one value (passes that move nothing), topk (one level and several; a block's rounds with the first round's bound,
// appends, and selects where a round's candidates overflow the append area) and the sort path
// past k = 256, every dtype, ascending and descending; sizes small enough for racecheck. Each result is compared
// with the CPU reference; new device memory is poisoned. Run it twice, the second time with
// the bitonic kernel off so radix_rows1 runs too:
//   compute-sanitizer --tool memcheck node --import tsx test/gpu/sort-sanitize.ts
//   ROCM_TENSOR_SORT_BITONIC_MAX=0 compute-sanitizer --tool racecheck node --import tsx test/gpu/sort-sanitize.ts
import { Tensor, Device, DTYPES, type DType } from '../../src/index.ts';
import { setPoison } from '../../src/device/storage.ts';
import { randInts } from '../helpers.ts';

setPoison(true);
const dev = Device.bestGpu();
if (!dev) throw new Error('sort-sanitize: no GPU');

/** values with ties, negative ones too where the dtype has them */
function values(shape: number[], dtype: DType): Tensor {
  const spread = 64;
  if (dtype === 'u8' || dtype === 'u32') return randInts(shape, spread, dtype);
  return randInts(shape, spread, 'f64')
    .affine(dtype === 'i64' ? 1 : 0.25, -spread / 2)
    .toDtype(dtype);
}

let failed = 0,
  runs = 0;
async function same(what: string, got: Tensor, want: Tensor): Promise<void> {
  const a = await got.toArray(),
    b = want.toArraySync();
  runs++;
  for (let i = 0; i < b.length; i++) {
    if (a[i] !== b[i]) {
      failed++;
      console.log(`FAIL ${what}: element ${i} is ${a[i]}, expected ${b[i]}`);
      return;
    }
  }
}

// sort: cols 20 (bitonic, or radix_rows1 with the bitonic kernel off), 300, 700, 1500, 3000
// (radix_rows 2 to 16 items), 5000 and 40000 (long rows: 2 and 10 tiles of 4096, or 3 and 20
// of 2048 for 64-bit keys)
for (const dtype of DTYPES) {
  const one = Tensor.full([2, 9000], 5, { dtype });
  await same(`argsort ${dtype} [2, 9000] of one value`, one.to(dev).argsort(-1), one.argsort(-1));
  for (const cols of [20, 300, 700, 1500, 3000, 5000, 40000]) {
    const cpu = values([3, cols], dtype),
      x = cpu.to(dev);
    for (const descending of [false, true]) {
      const g = x.sort(-1, { descending }),
        w = cpu.sort(-1, { descending });
      await same(`sort ${dtype} [3, ${cols}]${descending ? ' desc' : ''} indices`, g.indices, w.indices);
      await same(`sort ${dtype} [3, ${cols}]${descending ? ' desc' : ''} values`, g.values, w.values);
    }
  }
}

// topk: one slice, slices and their candidates ([2, 40000]: 10 slices of 4000, then 2560
// candidates), many rows, the sort path
const topkCases: [number[], number][] = [
  [[3, 1000], 5],
  [[2, 5000], 50],
  [[140, 3000], 8],
  [[2, 40000], 256],
  [[2, 600], 300],
];
for (const dtype of DTYPES) {
  for (const [shape, k] of topkCases) {
    const cpu = values(shape, dtype),
      x = cpu.to(dev);
    for (const largest of [true, false]) {
      const g = x.topk(k, { largest }),
        w = cpu.topk(k, { largest });
      await same(`topk ${dtype} [${shape}] k=${k}${largest ? '' : ' smallest'} indices`, g.indices, w.indices);
      await same(`topk ${dtype} [${shape}] k=${k}${largest ? '' : ' smallest'} values`, g.values, w.values);
    }
  }
}
// topk: a block a row of several rounds ([600, 9000]: rows enough for 132 multiprocessors, 3
// rounds of 4096, 5 of 2048 for 64-bit elements); sorted rows, whose rounds' candidates overflow
// the append area (ascending, the largest: selects between pieces of a round)
for (const dtype of ['f32', 'bf16', 'f64'] as const) {
  const cpu = values([600, 9000], dtype),
    x = cpu.to(dev);
  const g = x.topk(20),
    w = cpu.topk(20);
  await same(`topk ${dtype} [600, 9000] k=20 indices`, g.indices, w.indices);
  await same(`topk ${dtype} [600, 9000] k=20 values`, g.values, w.values);
  const up = Tensor.arange(0, 20000, 1, { dtype: 'f64' })
    .reshape([1, 20000])
    .expand([2, 20000])
    .contiguous()
    .toDtype(dtype);
  const ux = up.to(dev);
  for (const k of [256, 30]) {
    const gu = ux.topk(k),
      wu = up.topk(k);
    await same(`topk ${dtype} [2, 20000] ascending k=${k} indices`, gu.indices, wu.indices);
    await same(`topk ${dtype} [2, 20000] ascending k=${k} values`, gu.values, wu.values);
  }
}

console.log(`sort-sanitize: ${runs} results compared, ${failed} wrong`);
if (failed) process.exit(1);
