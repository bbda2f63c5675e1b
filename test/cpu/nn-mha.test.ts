// nn.MultiheadAttention on the CPU: against the same computation written out with plain ops
// (projections, heads, softmax of the scaled scores, joined heads, out-projection), sequence- and
// batch-first, a causal and a key-padding mask, separate key/value widths; PyTorch's
// initialisation; gradients of its parameters against f64 finite differences.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor, nn } from '../../src/index.ts';
import { assertClose } from '../helpers.ts';
import { gradCheckAt } from '../grad-check.ts';

const vals = (t: Tensor): number[] => Array.from(t.toDtype('f64').toArraySync() as Float64Array);

/** the layer's output written out with plain ops, inputs [N, L, E] */
function reference(
  m: nn.MultiheadAttention,
  q: Tensor,
  k: Tensor,
  v: Tensor,
  hide?: (i: number, j: number, b: number) => boolean,
): number[] {
  const sd = m.stateDict();
  const E = m.embedDim,
    h = m.numHeads,
    d = m.headDim;
  const w = (i: number, name: string) => (sd.in_proj_weight ? sd.in_proj_weight.narrow(0, i * E, E) : sd[name]!);
  const b = (i: number) => (sd.in_proj_bias ? sd.in_proj_bias.narrow(0, i * E, E) : null);
  const [n, l] = q.shape as [number, number];
  const s = k.dim(1);
  const proj = (x: Tensor, i: number, name: string) => vals(x.linear(w(i, name), { bias: b(i) }));
  const Q = proj(q, 0, 'q_proj_weight'),
    K = proj(k, 1, 'k_proj_weight'),
    V = proj(v, 2, 'v_proj_weight');
  const joined = new Float64Array(n * l * E);
  for (let bb = 0; bb < n; bb++)
    for (let hh = 0; hh < h; hh++)
      for (let i = 0; i < l; i++) {
        const scores: number[] = [];
        for (let j = 0; j < s; j++) {
          let dot = 0;
          for (let c = 0; c < d; c++) dot += Q[(bb * l + i) * E + hh * d + c]! * K[(bb * s + j) * E + hh * d + c]!;
          scores.push(hide?.(i, j, bb) ? -Infinity : dot / Math.sqrt(d));
        }
        const mx = Math.max(...scores);
        const e = scores.map((x) => Math.exp(x - mx));
        const z = e.reduce((a, x) => a + x, 0);
        for (let c = 0; c < d; c++) {
          let o = 0;
          for (let j = 0; j < s; j++) o += (e[j]! / z) * V[(bb * s + j) * E + hh * d + c]!;
          joined[(bb * l + i) * E + hh * d + c] = o;
        }
      }
  const J = Tensor.from(joined, { shape: [n, l, E] }).toDtype(q.dtype);
  return vals(J.linear(sd['out_proj.weight']!, { bias: sd['out_proj.bias'] ?? null }));
}

test('MultiheadAttention equals the written-out computation: batch-first, sequence-first, masks, kdim/vdim', () => {
  nn.manualSeed(2);
  const m = new nn.MultiheadAttention(8, 2, { batchFirst: true, dtype: 'f64' });
  const q = Tensor.randn([2, 3, 8], { seed: 1, dtype: 'f64' }),
    k = Tensor.randn([2, 5, 8], { seed: 2, dtype: 'f64' }),
    v = Tensor.randn([2, 5, 8], { seed: 3, dtype: 'f64' });
  assertClose(vals(m.forward(q, k, v)), reference(m, q, k, v), 1e-10, 1e-12, 'plain');
  const qq = Tensor.randn([2, 4, 8], { seed: 4, dtype: 'f64' });
  assertClose(
    vals(m.forward(qq, qq, qq, { isCausal: true })),
    reference(m, qq, qq, qq, (i, j) => j > i),
    1e-10,
    1e-12,
    'causal',
  );
  const pad = Tensor.from([0, 0, 0, 1, 1, 0, 1, 0, 0, 0], { dtype: 'u8', shape: [2, 5] });
  const hidden = [0, 0, 0, 1, 1, 0, 1, 0, 0, 0];
  assertClose(
    vals(m.forward(q, k, v, { keyPaddingMask: pad })),
    reference(m, q, k, v, (_i, j, b) => hidden[b * 5 + j] === 1),
    1e-10,
    1e-12,
    'key padding',
  );
  // sequence-first: the same numbers, transposed
  const ms = new nn.MultiheadAttention(8, 2, { dtype: 'f64', seed: 9 });
  ms.loadStateDict(m.stateDict());
  assertClose(
    vals(ms.forward(q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)).transpose(0, 1)),
    reference(m, q, k, v),
    1e-10,
    1e-12,
    'seq-first',
  );
  // separate key and value widths: separate projection weights
  const mk = new nn.MultiheadAttention(8, 4, { batchFirst: true, kdim: 6, vdim: 3, dtype: 'f64' });
  assert.equal(Object.keys(mk.stateDict()).sort(), [
    'in_proj_bias',
    'k_proj_weight',
    'out_proj.bias',
    'out_proj.weight',
    'q_proj_weight',
    'v_proj_weight',
  ]);
  const k6 = Tensor.randn([2, 5, 6], { seed: 5, dtype: 'f64' }),
    v3 = Tensor.randn([2, 5, 3], { seed: 6, dtype: 'f64' });
  assertClose(vals(mk.forward(q, k6, v3)), reference(mk, q, k6, v3), 1e-10, 1e-12, 'kdim/vdim');
  assert.throws(() => mk.forward(q, k, v), /key must be \[batch, seq, 6\]/);
});

test("MultiheadAttention: PyTorch's initialisation (xavier in-projection, zero biases)", () => {
  const m = new nn.MultiheadAttention(64, 4, { seed: 3 });
  const sd = m.stateDict();
  const bound = Math.sqrt(6 / (64 + 192));
  const w = vals(sd.in_proj_weight!);
  assert.ok(
    w.every((x) => Math.abs(x) <= bound) && Math.max(...w.map(Math.abs)) > 0.9 * bound,
    'in_proj_weight in the xavier bound',
  );
  assert.ok(vals(sd.in_proj_bias!).every((x) => x === 0) && vals(sd['out_proj.bias']!).every((x) => x === 0));
  assert.throws(() => new nn.MultiheadAttention(10, 3), /divisible by numHeads 3/);
});

test('MultiheadAttention: query, key and value gradients against f64 finite differences', () => {
  const m = new nn.MultiheadAttention(4, 2, { batchFirst: true, dtype: 'f64', seed: 5 });
  const xs = [3, 5, 5].map((t, i) => Tensor.randn([2, t, 4], { seed: 7 + i, dtype: 'f64' }));
  const pad = Tensor.from([0, 0, 0, 0, 1, 0, 1, 0, 0, 0], { dtype: 'u8', shape: [2, 5] });
  gradCheckAt('mha', ([q, k, v]) => m.forward(q!, k!, v!, { keyPaddingMask: pad }), xs, { module: m });
  // the parameters take gradients too (each op's rule is checked on its own)
  const y = m.forward(xs[0]!, xs[1]!, xs[2]!).sum();
  y.backward();
  assert.ok(m.parameters().every((p) => p.grad !== null));
  m.zeroGrad();
  for (const t of [y, pad, ...xs]) t.dispose();
});

test.run();
