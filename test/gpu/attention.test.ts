// scaledDotProductAttention on the GPU (the fused kernel for short queries; batched matmuls on
// rocBLAS / cuBLAS, the softmax kernel,
// a causal mask through where) against the CPU reference: causal and not, grouped-query heads
// (hq = 4 * hkv), tq != tk both ways, d != dv, an explicit scale, single-token decoding, in
// every float dtype and every layout; then the empty cases.
import { gpuSuite, checkOp, LAYOUTS, FLOAT_DTYPES, INT_DTYPES, type LayoutKind } from './harness.ts';
import * as assert from 'uvu/assert';
import { Tensor, type DType } from '../../src/index.ts';
import { nums, randT } from '../helpers.ts';
import { flashDecode } from '../../src/backends/gpu/flash.ts';

const s = gpuSuite('gpu/attention');
const sdpa = Tensor.scaledDotProductAttention;

interface Case {
  readonly name: string;
  /** [b, hq, tq, d], [b, hkv, tk, d], [b, hkv, tk, dv] */
  readonly q: number[];
  readonly k: number[];
  readonly v: number[];
  readonly causal: boolean;
  readonly scale?: number;
}
const CASES: readonly Case[] = [
  { name: 'plain [2, 3, 5, 8]', q: [2, 3, 5, 8], k: [2, 3, 5, 8], v: [2, 3, 5, 8], causal: false },
  { name: 'causal [2, 3, 5, 8]', q: [2, 3, 5, 8], k: [2, 3, 5, 8], v: [2, 3, 5, 8], causal: true },
  { name: 'tq < tk, d != dv', q: [2, 2, 4, 16], k: [2, 2, 9, 16], v: [2, 2, 9, 12], causal: false },
  { name: 'causal tq < tk', q: [1, 2, 4, 8], k: [1, 2, 9, 8], v: [1, 2, 9, 8], causal: true },
  { name: 'causal tq > tk, d != dv', q: [2, 2, 9, 8], k: [2, 2, 4, 8], v: [2, 2, 4, 5], causal: true },
  { name: 'GQA hq = 4 hkv', q: [2, 8, 6, 16], k: [2, 2, 7, 16], v: [2, 2, 7, 16], causal: false },
  { name: 'GQA hq = 4 hkv, causal, d != dv', q: [1, 8, 7, 16], k: [1, 2, 7, 16], v: [1, 2, 7, 24], causal: true },
  { name: 'MQA hkv = 1, causal', q: [2, 4, 5, 8], k: [2, 1, 5, 8], v: [2, 1, 5, 8], causal: true },
  { name: 'decode tq = 1, GQA', q: [2, 4, 1, 32], k: [2, 1, 33, 32], v: [2, 1, 33, 32], causal: false },
  { name: 'scale 0.3', q: [1, 2, 6, 8], k: [1, 2, 6, 8], v: [1, 2, 6, 8], causal: true, scale: 0.3 },
  { name: 'longer [1, 4, 64, 64] causal', q: [1, 4, 64, 64], k: [1, 4, 64, 64], v: [1, 4, 64, 64], causal: true },
];

s.opTest(
  'scaledDotProductAttention',
  async () => {
    for (const c of CASES) {
      await checkOp(
        'scaledDotProductAttention',
        FLOAT_DTYPES,
        LAYOUTS,
        (d: DType) => [randT(c.q, d), randT(c.k, d), randT(c.v, d)],
        ([q, k, v]) => sdpa(q!, k!, v!, { causal: c.causal, ...(c.scale === undefined ? {} : { scale: c.scale }) }),
        // the scores round to the input dtype before the softmax, as in PyTorch's math path
        { variant: c.name, tol: { f16: 1e-2, bf16: 2e-2 } },
      );
    }
  },
  'scaledDotProductAttention: causal, GQA, tq != tk, d != dv, scale, every dtype and layout',
);

interface MaskCase {
  readonly name: string;
  readonly q: number[];
  readonly k: number[];
  readonly v: number[];
  readonly causal?: boolean | 'top-left' | 'bottom-right';
  readonly window?: number;
  /** u8 mask of this shape (random 0/1 with each row keeping key 0 unless `empty`), or additive */
  readonly mask?: { shape: number[]; kind: 'u8' | 'add'; empty?: boolean };
}
const MASK_CASES: readonly MaskCase[] = [
  { name: 'bottom-right tq < tk', q: [2, 4, 3, 16], k: [2, 2, 11, 16], v: [2, 2, 11, 16], causal: 'bottom-right' },
  {
    name: 'bottom-right tq > tk (rows with no key)',
    q: [1, 2, 7, 8],
    k: [1, 2, 4, 8],
    v: [1, 2, 4, 8],
    causal: 'bottom-right',
  },
  {
    name: 'bottom-right decode tq = 1',
    q: [1, 8, 1, 32],
    k: [1, 2, 40, 32],
    v: [1, 2, 40, 32],
    causal: 'bottom-right',
  },
  { name: 'window 3 top-left', q: [2, 2, 9, 8], k: [2, 2, 9, 8], v: [2, 2, 9, 8], causal: 'top-left', window: 3 },
  {
    name: 'window 4 bottom-right tq < tk',
    q: [1, 4, 5, 8],
    k: [1, 2, 12, 8],
    v: [1, 2, 12, 8],
    causal: 'bottom-right',
    window: 4,
  },
  {
    name: 'u8 key mask [b, 1, 1, tk] + bottom-right',
    q: [2, 4, 6, 8],
    k: [2, 2, 6, 8],
    v: [2, 2, 6, 8],
    causal: 'bottom-right',
    mask: { shape: [2, 1, 1, 6], kind: 'u8' },
  },
  {
    name: 'u8 mask [tq, tk], some rows empty',
    q: [2, 2, 4, 8],
    k: [2, 2, 5, 8],
    v: [2, 2, 5, 8],
    mask: { shape: [4, 5], kind: 'u8', empty: true },
  },
  {
    name: 'additive mask [b, hq, tq, tk]',
    q: [2, 4, 3, 8],
    k: [2, 1, 7, 8],
    v: [2, 1, 7, 8],
    mask: { shape: [2, 4, 3, 7], kind: 'add' },
  },
];

function maskFor(m: NonNullable<MaskCase['mask']>, d: DType): Tensor {
  if (m.kind === 'add') return randT(m.shape, d, -2, 1);
  const tk = m.shape.at(-1)!;
  const n = m.shape.reduce((a, b) => a * b, 1);
  const bits = Array.from(nums(randT([n], 'f32', 0, 1)), (x, i) => (x < 0.6 || (!m.empty && i % tk === 0) ? 1 : 0));
  if (m.empty) bits.fill(0, 0, tk);
  return Tensor.from(bits, { dtype: 'u8', shape: m.shape });
}

/** every case in every float dtype, over the given layouts, against the CPU reference */
async function checkMaskCases(cases: readonly MaskCase[], layouts: readonly LayoutKind[]): Promise<void> {
  for (const c of cases) {
    await checkOp(
      'scaledDotProductAttention',
      FLOAT_DTYPES,
      layouts,
      (d: DType) => [randT(c.q, d), randT(c.k, d), randT(c.v, d), ...(c.mask ? [maskFor(c.mask, d)] : [])],
      ([q, k, v, mask]) =>
        sdpa(q!, k!, v!, {
          ...(c.causal === undefined ? {} : { causal: c.causal }),
          ...(c.window === undefined ? {} : { window: c.window }),
          ...(mask ? { mask } : {}),
        }),
      { variant: c.name, tol: { f16: 1e-2, bf16: 2e-2 } },
    );
  }
}

s.opTest(
  'scaledDotProductAttention',
  () => checkMaskCases(MASK_CASES, LAYOUTS),
  'scaledDotProductAttention: bottom-right causal, windows, u8 and additive masks, rows with no key',
);

// Short queries (tq <= 16) with head dims <= 256: f16/bf16 with d = dv take the matrix-core decode
// kernel (flash.hip flash_dec), f32 and d != dv the FMA one (attention.hip attn_decode), so every
// case below checks both: head dims of Llama, Mistral, Qwen, Phi and Gemma; keys split across
// blocks and merged; block and chunk edges; GQA and MQA with several row tiles (16 rows a tile in
// flash_dec, a tile's rows spanning heads and queries); masks and windows on split keys. f64 and
// d 320 take the composed path, checked alike.
const KERNEL_CASES: readonly MaskCase[] = [
  ...[64, 80, 96, 128, 256].map((d) => ({
    name: `decode d ${d}, 32/8 heads, tk 300`,
    q: [1, 32, 1, d],
    k: [1, 8, 300, d],
    v: [1, 8, 300, d],
    causal: 'bottom-right' as const,
  })),
  {
    name: 'tq 16 d 128 bottom-right, tk 1000 (splits)',
    q: [1, 8, 16, 128],
    k: [1, 2, 1000, 128],
    v: [1, 2, 1000, 128],
    causal: 'bottom-right',
  },
  { name: 'tq 16 top-left, tk 513', q: [2, 4, 16, 64], k: [2, 4, 513, 64], v: [2, 4, 513, 64], causal: 'top-left' },
  { name: 'decode 32/8 heads tk 4100, no causal', q: [1, 32, 1, 128], k: [1, 8, 4100, 128], v: [1, 8, 4100, 128] },
  {
    name: 'MQA 16/1 heads tq 4 (8 row tiles), tk 257',
    q: [2, 16, 4, 64],
    k: [2, 1, 257, 64],
    v: [2, 1, 257, 64],
    causal: 'bottom-right',
  },
  { name: 'tk 1, tq 3 bottom-right', q: [1, 2, 3, 16], k: [1, 2, 1, 16], v: [1, 2, 1, 16], causal: 'bottom-right' },
  {
    name: 'window 100 bottom-right, tk 700 (splits)',
    q: [1, 8, 2, 128],
    k: [1, 4, 700, 128],
    v: [1, 4, 700, 128],
    causal: 'bottom-right',
    window: 100,
  },
  {
    name: 'u8 key mask [b, 1, 1, tk], tk 600',
    q: [2, 8, 1, 64],
    k: [2, 2, 600, 64],
    v: [2, 2, 600, 64],
    mask: { shape: [2, 1, 1, 600], kind: 'u8' },
  },
  {
    name: 'additive mask [b, 1, tq, tk] + window, tk 333',
    q: [1, 4, 5, 96],
    k: [1, 2, 333, 96],
    v: [1, 2, 333, 96],
    causal: 'bottom-right',
    window: 50,
    mask: { shape: [1, 1, 5, 333], kind: 'add' },
  },
  { name: 'd 320 (composed path)', q: [1, 2, 1, 320], k: [1, 2, 40, 320], v: [1, 2, 40, 320] },
  { name: 'dv 80 != d 128', q: [1, 4, 2, 128], k: [1, 2, 90, 128], v: [1, 2, 90, 80], causal: 'bottom-right' },
  {
    name: 'MHA decode 8/8 heads tq 1 (one row a block), tk 700 (splits)',
    q: [2, 8, 1, 128],
    k: [2, 8, 700, 128],
    v: [2, 8, 700, 128],
    causal: 'bottom-right',
  },
  {
    name: 'dv 36 (v by columns in f16/bf16), 32/8 heads, tk 400',
    q: [1, 32, 1, 64],
    k: [1, 8, 400, 64],
    v: [1, 8, 400, 36],
  },
  {
    name: 'decode 64/8 heads (two row tiles a kv head), tk 520',
    q: [1, 64, 1, 128],
    k: [1, 8, 520, 128],
    v: [1, 8, 520, 128],
    causal: 'bottom-right',
  },
  {
    name: 'decode 28/4 heads (groups of 7), tq 3: 21 rows over two tiles, tk 2000',
    q: [1, 28, 3, 128],
    k: [1, 4, 2000, 128],
    v: [1, 4, 2000, 128],
    causal: 'bottom-right',
  },
  // few splits over two sequences; a head dim that is not a multiple of 8 (scalar K/V/q loads)
  { name: 'decode 32/8 heads, 2 sequences, tk 300', q: [2, 32, 1, 64], k: [2, 8, 300, 64], v: [2, 8, 300, 64] },
  {
    name: 'decode d 60 MHA 4/4 heads, tk 200',
    q: [1, 4, 1, 60],
    k: [1, 4, 200, 60],
    v: [1, 4, 200, 60],
    causal: 'bottom-right',
  },
];

s.opTest(
  'scaledDotProductAttention',
  () => checkMaskCases(KERNEL_CASES, ['contiguous', 'transposed']),
  'scaledDotProductAttention: fused kernel head dims, splits, chunk edges, GQA/MQA tiles, masks on splits',
);

// The matrix-core kernel (flash.hip) takes f16/bf16 queries past 16 rows with d = dv <= 256: every
// head-dim bucket, head dims between buckets (zero-padded) and odd ones (element-wise loads),
// causal both ways with tq != tk both ways, GQA/MQA, windows, masks, a single key, lengths that
// are not multiples of the 64-row and 64-key blocks. f32 takes the short-query kernel at any
// length; both are checked alike.
const FLASH_CASES: readonly MaskCase[] = [
  ...[64, 80, 96, 128, 256].map((d) => ({
    name: `prefill d ${d}, 4/2 heads, tq 130 < tk 190 bottom-right`,
    q: [1, 4, 130, d],
    k: [1, 2, 190, d],
    v: [1, 2, 190, d],
    causal: 'bottom-right' as const,
  })),
  { name: 'prefill full, 8/2 heads, tq = tk = 200', q: [1, 8, 200, 128], k: [1, 2, 200, 128], v: [1, 2, 200, 128] },
  {
    name: 'prefill top-left, tq 150 > tk 70',
    q: [2, 2, 150, 64],
    k: [2, 2, 70, 64],
    v: [2, 2, 70, 64],
    causal: 'top-left',
  },
  {
    name: 'prefill bottom-right, tq 150 > tk 70 (rows with no key)',
    q: [1, 2, 150, 64],
    k: [1, 2, 70, 64],
    v: [1, 2, 70, 64],
    causal: 'bottom-right',
  },
  {
    name: 'prefill MQA 4/1 top-left, tq = tk = 129',
    q: [1, 4, 129, 128],
    k: [1, 1, 129, 128],
    v: [1, 1, 129, 128],
    causal: 'top-left',
  },
  {
    name: 'prefill window 40 bottom-right, tq 100 < tk 180',
    q: [1, 2, 100, 64],
    k: [1, 2, 180, 64],
    v: [1, 2, 180, 64],
    causal: 'bottom-right',
    window: 40,
  },
  {
    name: 'prefill u8 padding mask [b, 1, 1, tk] + causal',
    q: [2, 2, 80, 64],
    k: [2, 2, 80, 64],
    v: [2, 2, 80, 64],
    causal: 'bottom-right',
    mask: { shape: [2, 1, 1, 80], kind: 'u8' },
  },
  {
    name: 'prefill u8 mask [tq, tk], some rows empty',
    q: [1, 2, 40, 64],
    k: [1, 2, 70, 64],
    v: [1, 2, 70, 64],
    mask: { shape: [40, 70], kind: 'u8', empty: true },
  },
  {
    name: 'prefill additive mask [b, 1, tq, tk]',
    q: [1, 4, 70, 96],
    k: [1, 2, 90, 96],
    v: [1, 2, 90, 96],
    mask: { shape: [1, 1, 70, 90], kind: 'add' },
  },
  {
    name: 'prefill d 40 (bucket 64, zero-padded)',
    q: [1, 2, 65, 40],
    k: [1, 2, 65, 40],
    v: [1, 2, 65, 40],
    causal: 'top-left',
  },
  {
    name: 'prefill d 33 (odd: element-wise loads)',
    q: [1, 2, 40, 33],
    k: [1, 2, 50, 33],
    v: [1, 2, 50, 33],
    causal: 'bottom-right',
  },
  { name: 'prefill tk 1, tq 20', q: [1, 2, 20, 64], k: [1, 2, 1, 64], v: [1, 2, 1, 64] },
  { name: 'prefill tq 17 = tk', q: [1, 2, 17, 128], k: [1, 2, 17, 128], v: [1, 2, 17, 128], causal: 'top-left' },
  {
    name: 'prefill d 256 causal, tq = tk = 100',
    q: [1, 2, 100, 256],
    k: [1, 2, 100, 256],
    v: [1, 2, 100, 256],
    causal: 'top-left',
  },
  // several 128-row blocks with key ranges of their own (the last with more key blocks, the first
  // with none, a window's later first block)
  {
    name: 'prefill causal tq = tk = 300 (three 128-row blocks)',
    q: [1, 2, 300, 128],
    k: [1, 2, 300, 128],
    v: [1, 2, 300, 128],
    causal: 'top-left',
  },
  {
    name: 'prefill bottom-right tq 300 > tk 100 (a block with no key)',
    q: [1, 2, 300, 64],
    k: [1, 1, 100, 64],
    v: [1, 1, 100, 64],
    causal: 'bottom-right',
  },
  {
    name: 'prefill window 60 top-left, tq = tk = 520',
    q: [1, 2, 520, 80],
    k: [1, 2, 520, 80],
    v: [1, 2, 520, 80],
    causal: 'top-left',
    window: 60,
  },
  // the block order takes 8 (batch, head) pairs at a time: 12 pairs are a whole group and a
  // partial one, each of three 128-row blocks
  {
    name: 'prefill causal 3 x 4/2 heads (groups of 8 and 4), tq = tk = 300',
    q: [3, 4, 300, 64],
    k: [3, 2, 300, 64],
    v: [3, 2, 300, 64],
    causal: 'top-left',
  },
];

s.opTest(
  'scaledDotProductAttention',
  () => checkMaskCases(FLASH_CASES, ['contiguous', 'transposed']),
  'scaledDotProductAttention: prefill kernel head dims, causal both ways, GQA/MQA, windows, masks, odd sizes',
);

s.opTest(
  'scaledDotProductAttention',
  async () => {
    // prefill over a cache view: K/V narrowed out of [b, hkv, maxLen, d], q in rope's thd layout
    const b = 2,
      hq = 8,
      hkv = 2,
      d = 128,
      maxLen = 256,
      tk = 200,
      tq = 90;
    await checkOp(
      'scaledDotProductAttention',
      ['f32', 'f16', 'bf16'],
      ['contiguous'],
      (dt: DType) => [randT([b, tq, hq, d], dt), randT([b, hkv, maxLen, d], dt), randT([b, hkv, maxLen, d], dt)],
      ([q, kc, vc]) => sdpa(q!.transpose(1, 2), kc!.narrow(2, 0, tk), vc!.narrow(2, 0, tk), { causal: 'bottom-right' }),
      { variant: 'prefill: cache views narrowed to tk, q in thd layout', tol: { f16: 1e-2, bf16: 2e-2 } },
    );
  },
  'scaledDotProductAttention: prefill over strided cache views',
);

s.opTest(
  'scaledDotProductAttention',
  async () => {
    // K/V read in place from strided views: narrowed out of a preallocated cache [b, hkv, maxLen, d],
    // and the [b, t, h, d] layout (rope's thd form) transposed to [b, h, t, d]; q likewise
    const b = 2,
      hq = 8,
      hkv = 2,
      d = 64,
      maxLen = 96,
      tk = 70,
      tq = 3;
    await checkOp(
      'scaledDotProductAttention',
      ['f32', 'f16', 'bf16'],
      ['contiguous'],
      (dt: DType) => [randT([b, tq, hq, d], dt), randT([b, hkv, maxLen, d], dt), randT([b, hkv, maxLen, d], dt)],
      ([q, kc, vc]) => sdpa(q!.transpose(1, 2), kc!.narrow(2, 0, tk), vc!.narrow(2, 0, tk), { causal: 'bottom-right' }),
      { variant: 'cache views narrowed to tk, q in thd layout', tol: { f16: 1e-2, bf16: 2e-2 } },
    );
    await checkOp(
      'scaledDotProductAttention',
      ['f32', 'bf16'],
      ['contiguous'],
      (dt: DType) => [randT([b, hq, 1, d], dt), randT([b, maxLen, hkv, d], dt), randT([b, maxLen, hkv, d], dt)],
      ([q, k, v]) => sdpa(q!, k!.transpose(1, 2).narrow(2, 5, tk), v!.transpose(1, 2).narrow(2, 5, tk)),
      { variant: 'K/V in [b, t, h, d] transposed and offset', tol: { bf16: 2e-2 } },
    );
  },
  'scaledDotProductAttention: strided K/V cache views read in place',
);

s.opTest(
  'scaledDotProductAttention',
  async () => {
    // flash_dec's warp groups (NVIDIA): a block takes several splits of the keys as warps that
    // combine their rows in LDS. The default takes them where every split fits one block; forced
    // here, blocks of 2 and 3 groups still split the keys between blocks (merged by attn_merge),
    // and the last block's last group gets no key (11 key blocks of 64 over 4 x 3 groups). AMD
    // keeps one group a block whatever is asked.
    const cases: { name: string; q: number[]; kv: number[]; groups: number; causal: boolean }[] = [
      {
        name: '32/8 heads d 64, tk 700, 2 groups a block',
        q: [1, 32, 1, 64],
        kv: [1, 8, 700, 64],
        groups: 2,
        causal: true,
      },
      {
        name: '32/8 heads d 128, tk 700, 3 groups a block (one with no key)',
        q: [1, 32, 1, 128],
        kv: [1, 8, 700, 128],
        groups: 3,
        causal: true,
      },
      {
        name: '8/2 heads tq 3 d 96, tk 333, 6 groups (one block)',
        q: [2, 8, 3, 96],
        kv: [2, 2, 333, 96],
        groups: 6,
        causal: false,
      },
    ];
    for (const c of cases) {
      const [b, hq, tq, d] = c.q as [number, number, number, number],
        tk = c.kv[2]!;
      const p = {
        scale: 1 / Math.sqrt(d),
        diag: c.causal ? tk - tq : null,
        window: null,
        mask: null,
        outShape: [b, hq, tq, d],
      };
      await checkOp(
        'scaledDotProductAttention',
        ['f16', 'bf16'],
        ['contiguous', 'transposed'],
        (dt: DType) => [randT(c.q, dt), randT(c.kv, dt), randT(c.kv, dt)],
        ([q, k, v]) =>
          q!.device.isCpu
            ? sdpa(q!, k!, v!, { causal: c.causal ? 'bottom-right' : false })
            : Tensor.wrap(flashDecode(q!, k!, v!, p, { blocksPerMp: 64, groups: c.groups })),
        { variant: c.name, tol: { f16: 1e-2, bf16: 2e-2 } },
      );
    }
  },
  'scaledDotProductAttention: decode warp groups forced (blocks of several splits, a group with no key)',
);

s.opTest(
  'scaledDotProductAttention',
  async () => {
    // integer inputs are rejected alike
    await checkOp(
      'scaledDotProductAttention',
      INT_DTYPES,
      ['contiguous'],
      (d) => [
        Tensor.ones([1, 1, 2, 4], { dtype: d }),
        Tensor.ones([1, 1, 2, 4], { dtype: d }),
        Tensor.ones([1, 1, 2, 4], { dtype: d }),
      ],
      ([q, k, v]) => sdpa(q!, k!, v!),
      { variant: 'integer dtypes (rejected)' },
    );
  },
  'scaledDotProductAttention: integer dtypes are rejected alike',
);

s.opTest(
  'scaledDotProductAttention',
  async (dev) => {
    // no keys: every output row is 0 (an empty sum), causal or not
    for (const causal of [false, true]) {
      const q = randT([1, 2, 3, 4], 'f32', -2, 2, dev),
        k = Tensor.zeros([1, 2, 0, 4], { device: dev }),
        v = Tensor.zeros([1, 2, 0, 5], { device: dev });
      const o = sdpa(q, k, v, { causal });
      assert.equal(o.shape, [1, 2, 3, 5]);
      assert.ok(
        Array.from(await o.toArray(), Number).every((x) => x === 0),
        `tk = 0${causal ? ', causal' : ''}: zeros`,
      );
    }
    // empty batch, heads or queries: empty results of the right shape
    const shapes: [number[], number[], number[], number[]][] = [
      [
        [0, 2, 3, 4],
        [0, 2, 5, 4],
        [0, 2, 5, 6],
        [0, 2, 3, 6],
      ],
      [
        [1, 0, 3, 4],
        [1, 0, 5, 4],
        [1, 0, 5, 6],
        [1, 0, 3, 6],
      ],
      [
        [1, 2, 0, 4],
        [1, 2, 5, 4],
        [1, 2, 5, 6],
        [1, 2, 0, 6],
      ],
    ];
    for (const [qs, ks, vs, os] of shapes) {
      const z = (sh: number[]) => Tensor.zeros(sh, { device: dev });
      assert.equal(sdpa(z(qs), z(ks), z(vs), { causal: true }).shape, os);
    }
  },
  'scaledDotProductAttention: no keys gives zeros; empty batch, heads, queries',
);

s.opTest(
  'scaledDotProductAttention',
  async (dev) => {
    // NaN through split keys and the merge: one NaN value element (kv head 2, key 1500, column 9)
    // and one NaN key element (kv head 5, key 2500). The rows of head 2's group turn NaN in column
    // 9 only, those of head 5's group entirely, and everything else matches the CPU.
    const [hq, hkv, tk, d] = [32, 8, 3000, 128],
      g = hq / hkv;
    for (const dt of ['f32', 'bf16'] as const) {
      const withNaN = (at: number): Tensor => {
        const a = nums(randT([1, hkv, tk, d], 'f32'));
        a[at] = NaN;
        return Tensor.from(a, { dtype: dt, shape: [1, hkv, tk, d] });
      };
      const q = randT([1, hq, 1, d], dt),
        k = withNaN((5 * tk + 2500) * d + 7),
        v = withNaN((2 * tk + 1500) * d + 9);
      const want = nums(sdpa(q, k, v, { causal: 'bottom-right' }));
      const got = nums(sdpa(q.to(dev), k.to(dev), v.to(dev), { causal: 'bottom-right' }));
      const nanAt = (i: number): boolean => {
        const h = Math.floor(i / d);
        return Math.floor(h / g) === 5 || (Math.floor(h / g) === 2 && i % d === 9);
      };
      for (let i = 0; i < want.length; i++) {
        assert.is(Number.isNaN(want[i]!), nanAt(i), `${dt}: CPU element ${i} NaN as expected`);
        if (nanAt(i)) assert.ok(Number.isNaN(got[i]!), `${dt}: element ${i} is NaN, got ${got[i]}`);
        else assert.ok(Math.abs(got[i]! - want[i]!) <= 3e-2, `${dt}: element ${i} got ${got[i]}, want ${want[i]}`);
      }
    }
  },
  'scaledDotProductAttention: a NaN key or value through split keys and their merge',
);

s.run();
