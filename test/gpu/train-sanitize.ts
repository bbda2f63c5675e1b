// A short run of the training kernels (softmax-grad.hip, norm-grad.hip, cross-entropy.hip,
// optim.hip, swiglu.hip) for compute-sanitizer: rows shorter and longer than a block, grids smaller than the
// rows, the per-block partial sums and their fold, ignored and weighted classes, and a fused
// AdamW and SGD step over a list whose tensors end inside and on chunk boundaries; each result
// compared with the CPU reference. Run:
//   compute-sanitizer --tool memcheck node --import tsx test/gpu/train-sanitize.ts
//   compute-sanitizer --tool racecheck node --import tsx test/gpu/train-sanitize.ts
import { Tensor, nn, optim, noGrad } from '../../src/index.ts';
import { randT } from '../helpers.ts';
import { SanitizeRun, tolOf } from './sanitize-check.ts';

const run = new SanitizeRun('train-sanitize');
const same = run.same.bind(run);

/** the input gradients of f at the inputs (backward from a sum), flattened and joined */
const gradsOf =
  (f: (xs: readonly Tensor[]) => Tensor) =>
  (xs: readonly Tensor[]): Tensor => {
    const ls = xs.map((x) => {
      const l = noGrad(() => x.mul(1));
      l.requiresGrad = true;
      return l;
    });
    f(ls).sum().backward();
    return Tensor.cat(
      ls.map((l) => l.grad!.reshape([-1])),
      0,
    );
  };

for (const d of ['f32', 'bf16'] as const) {
  const t = tolOf(d) * 5;
  for (const cols of [40, 700, 2100]) {
    const x = randT([9, cols], d, -3, 3),
      w = randT([cols], d, 0.5, 1.5),
      b = randT([cols], d, -1, 1);
    await same(
      `softmax grad ${d} [9, ${cols}]`,
      gradsOf(([a]) => a!.softmax(-1).mul(a!)),
      [x],
      t,
    );
    await same(
      `logSoftmax grad ${d} [9, ${cols}]`,
      gradsOf(([a]) => a!.logSoftmax(-1).mul(a!)),
      [x],
      t,
    );
    await same(
      `layerNorm grads ${d} [9, ${cols}]`,
      gradsOf(([a, ww, bb]) => a!.layerNorm(ww!, bb!, 1e-5).mul(a!)),
      [x, w, b],
      t,
    );
    await same(
      `rmsNorm grads ${d} [9, ${cols}]`,
      gradsOf(([a, ww]) => a!.rmsNorm(ww!, 1e-6).mul(a!)),
      [x, w],
      t,
    );
    await same(
      `swiglu value and grad ${d} [9, ${cols}]`,
      ([a]) => {
        const l = noGrad(() => a!.mul(1));
        l.requiresGrad = true;
        const y = l.swiglu();
        y.mul(y).sum().backward();
        return Tensor.cat([y.reshape([-1]), l.grad!.reshape([-1])], 0);
      },
      [x],
      t,
    );
    const ids = Tensor.from(
      BigInt64Array.from(Array.from({ length: 9 }, (_, i) => BigInt(i === 2 ? -100 : (i * 5) % cols))),
      { shape: [9] },
    );
    await same(
      `crossEntropy value and grad ${d} [9, ${cols}]`,
      ([a, ww]) => {
        const l = noGrad(() => a!.mul(1));
        l.requiresGrad = true;
        const tt = ids.to(a!.device);
        const loss = nn.crossEntropy(l, tt, { weight: ww!, labelSmoothing: 0.1 });
        loss.backward();
        return Tensor.cat([loss.reshape([1]), l.grad!.reshape([-1])], 0);
      },
      [x, w],
      t,
    );
  }
}

// fused steps: sizes ending inside a chunk, on its boundary (4096), and a single element
for (const kind of ['AdamW', 'SGD'] as const) {
  const shapes = [[5000], [4096], [1], [7, 9]];
  const starts = shapes.map((sh) => randT(sh, 'f32', -1, 1));
  const gs = shapes.map((sh) => randT(sh, 'f32', -0.5, 0.5));
  await same(
    `${kind} fused step`,
    (xs) => {
      const n = shapes.length;
      const ps = xs.slice(0, n).map((p) => {
        const q = noGrad(() => p.mul(1));
        q.requiresGrad = true;
        return q;
      });
      const o =
        kind === 'AdamW'
          ? new optim.AdamW(ps, { lr: 0.01, amsgrad: true })
          : new optim.SGD(ps, { lr: 0.1, momentum: 0.9, nesterov: true });
      for (let k = 0; k < 2; k++) {
        ps.forEach((p, i) => (p.grad = xs[n + i]!.mul(1)));
        o.step();
        o.zeroGrad();
      }
      o.dispose();
      return Tensor.cat(
        ps.map((p) => p.reshape([-1])),
        0,
      );
    },
    [...starts, ...gs],
    1e-5,
  );
}
run.report();
