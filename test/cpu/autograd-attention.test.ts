// The gradient of scaled dot-product attention on the CPU against central finite differences in
// f64: plain, both causal alignments, a sliding window, u8 and additive masks, grouped kv heads,
// non-contiguous q/k/v, and the query blocks the backward recomputes one at a time (shrunk here so
// a few queries span several blocks).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor } from '../../src/index.ts';
import { attentionGradTuning } from '../../src/ops/attention-grad.ts';
import { gradCheck, leaf, values } from '../grad-check.ts';

const sdpa = Tensor.scaledDotProductAttention;

const QKV = (b: number, hq: number, hkv: number, tq: number, tk: number, d: number, dv = d): number[][] => [
  [b, hq, tq, d],
  [b, hkv, tk, d],
  [b, hkv, tk, dv],
];

for (const blocks of ['one block', 'a block per query']) {
  test(`attention gradients (${blocks}): plain, causal alignments, window, GQA`, () => {
    attentionGradTuning.blockElements = blocks === 'one block' ? 1 << 26 : 1;
    try {
      gradCheck('plain', ([q, k, v]) => sdpa(q!, k!, v!), QKV(1, 2, 2, 3, 4, 3));
      gradCheck('causal top-left', ([q, k, v]) => sdpa(q!, k!, v!, { causal: true }), QKV(1, 2, 2, 4, 4, 2));
      // keys past the last query's diagonal: seen by no query, their gradients are zeros
      gradCheck('causal top-left, tk > tq', ([q, k, v]) => sdpa(q!, k!, v!, { causal: true }), QKV(1, 2, 1, 3, 6, 2));
      gradCheck(
        'window top-left, tk > tq',
        ([q, k, v]) => sdpa(q!, k!, v!, { causal: true, window: 2 }),
        QKV(1, 1, 1, 4, 7, 2),
      );
      gradCheck(
        'causal bottom-right, tk > tq, dv != d',
        ([q, k, v]) => sdpa(q!, k!, v!, { causal: 'bottom-right' }),
        QKV(2, 1, 1, 2, 5, 3, 2),
      );
      gradCheck(
        'window 2',
        ([q, k, v]) => sdpa(q!, k!, v!, { causal: 'bottom-right', window: 2 }),
        QKV(1, 1, 1, 4, 5, 2),
      );
      gradCheck(
        'GQA 4 query heads on 2 kv heads, scale',
        ([q, k, v]) => sdpa(q!, k!, v!, { scale: 0.7 }),
        QKV(1, 4, 2, 3, 3, 2),
      );
      gradCheck(
        'non-contiguous q, k, v',
        ([q, k, v]) => sdpa(q!.transpose(1, 2), k!.transpose(1, 2), v!.transpose(1, 2), { causal: true }),
        [
          [1, 3, 2, 2],
          [1, 3, 2, 2],
          [1, 3, 2, 2],
        ],
      );
    } finally {
      attentionGradTuning.blockElements = 1 << 26;
    }
  });
}

test('attention gradients with masks: u8 (a fully hidden row gets none) and additive', () => {
  attentionGradTuning.blockElements = 1;
  try {
    const m = Tensor.from([1, 1, 0, 0, 1, 0, 0, 0, 0], { dtype: 'u8', shape: [1, 1, 3, 3] });
    gradCheck('u8 mask', ([q, k, v]) => sdpa(q!, k!, v!, { mask: m }), QKV(1, 2, 1, 3, 3, 2));
    const add = Tensor.from([0, -1, 0.5, -Infinity, 0, 0], { dtype: 'f64', shape: [2, 3] });
    gradCheck('additive mask', ([q, k, v]) => sdpa(q!, k!, v!, { mask: add }), QKV(1, 1, 1, 2, 3, 2));
    // causal blocks take only their leading keys: the masks spanning every key are narrowed too
    const m5 = Tensor.from([1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 1], { dtype: 'u8', shape: [1, 1, 3, 5] });
    const add5 = Tensor.from(
      Array.from({ length: 15 }, (_, i) => (i % 4) * 0.25 - 0.5),
      { dtype: 'f64', shape: [3, 5] },
    );
    gradCheck(
      'causal bottom-right, u8 mask, tk > tq',
      ([q, k, v]) => sdpa(q!, k!, v!, { causal: 'bottom-right', mask: m5 }),
      QKV(1, 2, 1, 3, 5, 2),
    );
    gradCheck(
      'causal bottom-right, additive mask, tk > tq',
      ([q, k, v]) => sdpa(q!, k!, v!, { causal: 'bottom-right', mask: add5 }),
      QKV(1, 2, 2, 3, 5, 2),
    );
    m5.dispose();
    add5.dispose();
    // the hidden row's query takes no gradient at all
    const q = leaf([1, 1, 3, 2]),
      k = leaf([1, 1, 3, 2]),
      v = leaf([1, 1, 3, 2]);
    sdpa(q, k, v, { mask: m }).sum().backward();
    assert.equal(values(q.grad!).slice(4), [0, 0]);
    for (const t of [m, add, q, k, v, q.grad!, k.grad!, v.grad!]) t.dispose();
  } finally {
    attentionGradTuning.blockElements = 1 << 26;
  }
});

test.run();
