// A short run of the paged-attention kernels for compute-sanitizer: paged-attention.hip (with
// attention.hip's attn_merge where the keys split) and, for chunks past 16 queries in f16 and
// bf16, paged-prefill.hip. Prefill chunks and decodes mixed in one call, u32 and i64 block
// tables, block sizes 16 and 1, grouped heads (1, 4, 6 a kv head), windows, prefill chunks over
// long contexts, a v head dim other
// than q's, a head dim off the 16-byte path, and contexts past one chunk of
// keys; each result compared with the CPU reference, with both decode kernels (the FMA one and
// paged-decode.hip on the matrix cores). Run:
//   compute-sanitizer --tool memcheck node --import tsx test/gpu/paged-sanitize.ts
//   compute-sanitizer --tool racecheck node --import tsx test/gpu/paged-sanitize.ts
import { Device, Tensor, pagedAttentionTuning, type DType } from '../../src/index.ts';
import { pagedAttention } from '../../src/ops/attention-paged.ts';
import { randT } from '../helpers.ts';

const dev = Device.bestGpu();
if (!dev) throw new Error('paged-sanitize: no GPU');

interface Case {
  readonly queryLens: number[];
  readonly contextLens: number[];
  readonly bs: number;
  readonly hq: number;
  readonly hkv: number;
  readonly d: number;
  readonly dv: number;
  readonly window?: number;
  readonly i64?: boolean;
}
const cases: Case[] = [
  { queryLens: [5, 1, 0, 1], contextLens: [300, 40, 3, 1], bs: 16, hq: 8, hkv: 2, d: 64, dv: 64 },
  { queryLens: [1, 3], contextLens: [520, 3], bs: 16, hq: 4, hkv: 4, d: 128, dv: 128, i64: true },
  { queryLens: [2, 1], contextLens: [30, 90], bs: 1, hq: 6, hkv: 1, d: 80, dv: 48, window: 20 },
  { queryLens: [1, 1], contextLens: [70, 9], bs: 16, hq: 2, hkv: 2, d: 36, dv: 36 },
  // chunks past 16 queries: paged-prefill.hip for f16 and bf16, after the FMA kernel's decodes
  { queryLens: [80, 1, 17], contextLens: [150, 30, 40], bs: 16, hq: 8, hkv: 2, d: 128, dv: 128 },
  { queryLens: [33, 1], contextLens: [33, 300], bs: 1, hq: 4, hkv: 1, d: 80, dv: 80, window: 40, i64: true },
  // prefill chunks over long contexts (two chunks a call, a window)
  { queryLens: [40, 1, 70], contextLens: [600, 50, 1000], bs: 16, hq: 8, hkv: 2, d: 128, dv: 128 },
  { queryLens: [100, 1], contextLens: [900, 200], bs: 16, hq: 4, hkv: 4, d: 64, dv: 64, window: 500 },
];

async function values(t: Tensor): Promise<Float64Array> {
  const f = t.toDtype('f64');
  const a = Float64Array.from(await f.toArray(), Number);
  f.dispose();
  return a;
}

let worst = 0,
  n = 0;
for (const mode of ['fma', 'matrix'] as const)
  for (const dt of ['f32', 'f16', 'bf16'] as DType[]) {
    pagedAttentionTuning.decode = mode;
    for (const c of cases) {
      const tokens = c.queryLens.reduce((a, b) => a + b, 0);
      const need = c.contextLens.map((x) => Math.ceil(x / c.bs));
      const per = Math.max(...need),
        blocks = need.reduce((a, b) => a + b, 0) + 2;
      // distinct blocks in a shuffled order (a stride prime to the pool's size)
      const ids = new Uint32Array(c.queryLens.length * per);
      let next = 0;
      need.forEach((nb, s) => {
        for (let j = 0; j < nb; j++) ids[s * per + j] = (next++ * 7919 + 3) % blocks;
      });
      const tb32 = Tensor.from(ids, { shape: [c.queryLens.length, per] });
      const tb = c.i64 ? tb32.toDtype('i64') : tb32;
      const q = randT([tokens, c.hq, c.d], dt),
        k = randT([blocks, c.bs, c.hkv, c.d], dt),
        v = randT([blocks, c.bs, c.hkv, c.dv], dt);
      const opts = { queryLens: c.queryLens, contextLens: c.contextLens, window: c.window };
      const ref = Tensor.wrap(pagedAttention(q, k, v, tb, opts));
      const [gq, gk, gv, gt] = [q, k, v, tb].map((x) => x.to(dev));
      const got = Tensor.wrap(pagedAttention(gq!, gk!, gv!, gt!, opts));
      const a = await values(got),
        b = await values(ref);
      const tol = dt === 'f32' ? 1e-4 : dt === 'f16' ? 2e-2 : 4e-2;
      for (let i = 0; i < b.length; i++) {
        const e = Math.abs(a[i]! - b[i]!);
        if (!(e <= tol))
          throw new Error(
            `paged-sanitize: ${mode} decode, ${dt} ${JSON.stringify(c)}: element ${i} is ${a[i]}, the CPU gives ${b[i]}`,
          );
        worst = Math.max(worst, e);
      }
      n++;
      for (const x of [tb32, tb, q, k, v, ref, gq!, gk!, gv!, gt!, got]) if (!x.isDisposed) x.dispose();
    }
  }
console.log(`paged-sanitize: ${n} cases match the CPU reference (worst abs error ${worst.toExponential(2)})`);
