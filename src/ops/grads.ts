// Gradient rules, written in other ops (autograd runs them with recording off). Each takes the
// output's gradient g, the op's backend arguments and its output, and returns [input, gradient]
// for the tensor inputs that take one, each gradient in its input's shape and dtype. Rules own
// every tensor they make; what they return passes to autograd.
import { numel, sameShape } from '../core/layout.ts';
import type { BinaryOp, ParamUnary, ReduceOp, UnaryOp } from '../core/op-types.ts';
import type { RawTensor } from '../device/raw-tensor.ts';
import type { LinearOptions } from '../backends/options.ts';
import { cast } from './cast.ts';
import { cat, contiguous, reshape, toDevice } from './copy.ts';
import { full } from './creation.ts';
import { binary, compare, paramUnary, unary, where } from './elementwise.ts';
import { matmul } from './matmul.ts';
import { reduce } from './reduce.ts';
import { scoped } from './scoped.ts';
import { defineGrad, wantedGrads } from './registry.ts';
import { gather, indexAdd, indexSelect, scatter } from './indexing.ts';
import { cumsum } from './scan.ts';
import { rope } from './nn.ts';
import type { RopeLayout } from '../backends/cpu/nn.ts';
import { layerNormBackward, rmsNormBackward, softmaxBackward } from './train.ts';

type Pair = [RawTensor, RawTensor];

/** g summed over the dims it was broadcast along, to `shape` (a new tensor) */
export function sumTo(g: RawTensor, shape: readonly number[]): RawTensor {
  const gs = g.layout.shape;
  if (sameShape(gs, shape)) return g.view(g.layout);
  const extra = gs.length - shape.length;
  const dims: number[] = [];
  for (let i = 0; i < gs.length; i++) if (i < extra || (shape[i - extra] === 1 && gs[i] !== 1)) dims.push(i);
  const r = reduce('sum', g, dims, true);
  try {
    return reshape(r, shape);
  } finally {
    r.dispose();
  }
}

const mulBy = (g: RawTensor, t: RawTensor): RawTensor => binary('mul', g, t);
const scale = (t: RawTensor, a: number): RawTensor => paramUnary(t, { op: 'affine', a, b: 0 });

// ---- elementwise ---------------------------------------------------------------------------

/** d out / d x of each unary op, times g */
function unaryGrad(op: UnaryOp, g: RawTensor, x: RawTensor, y: RawTensor): RawTensor {
  return scoped((keep) => {
    const affine = (t: RawTensor, a: number, b: number): RawTensor => keep(paramUnary(t, { op: 'affine', a, b }));
    const sq = (t: RawTensor): RawTensor => keep(unary(t, 'sqr'));
    switch (op) {
      case 'exp':
        return mulBy(g, y);
      case 'log':
        return binary('div', g, x);
      case 'sin':
        return mulBy(g, keep(unary(x, 'cos')));
      case 'cos':
        return mulBy(g, keep(unary(keep(unary(x, 'sin')), 'neg')));
      case 'tanh':
        return mulBy(g, affine(sq(y), -1, 1));
      case 'neg':
        return unary(g, 'neg');
      case 'recip':
        return mulBy(g, keep(unary(sq(y), 'neg')));
      case 'sqr':
        return mulBy(g, affine(x, 2, 0));
      case 'sqrt':
        return binary('div', g, affine(y, 2, 0));
      // relu's output is > 0 exactly where x is: its sign is the derivative, in two launches (a
      // comparison with 0 took four). A NaN input, whose output is NaN, gets a NaN gradient.
      case 'relu':
        return mulBy(g, keep(unary(y, 'sign')));
      case 'abs':
        return mulBy(g, keep(unary(x, 'sign')));
      case 'sigmoid':
        return mulBy(g, keep(binary('mul', y, affine(y, -1, 1))));
      case 'silu': {
        // s + x s (1 - s), s = sigmoid(x)
        const s = keep(unary(x, 'sigmoid'));
        return mulBy(g, keep(binary('add', s, keep(binary('mul', keep(binary('mul', x, s)), affine(s, -1, 1))))));
      }
      case 'erf':
        // 2/sqrt(pi) exp(-x^2)
        return mulBy(g, affine(keep(unary(keep(unary(sq(x), 'neg')), 'exp')), 2 / Math.sqrt(Math.PI), 0));
      case 'geluErf': {
        // Phi(x) + x phi(x): 0.5 (1 + erf(x / sqrt 2)) + x exp(-x^2 / 2) / sqrt(2 pi)
        const cdf = affine(keep(unary(affine(x, Math.SQRT1_2, 0), 'erf')), 0.5, 0.5);
        const pdf = affine(keep(unary(affine(sq(x), -0.5, 0), 'exp')), 1 / Math.sqrt(2 * Math.PI), 0);
        return mulBy(g, keep(binary('add', cdf, keep(binary('mul', x, pdf)))));
      }
      case 'gelu': {
        // tanh form: 0.5 (1 + t) + 0.5 x (1 - t^2) c (1 + 3 k x^2), t = tanh(c (x + k x^3))
        const c = Math.sqrt(2 / Math.PI),
          k = 0.044715;
        const x2 = sq(x);
        const t = keep(unary(keep(binary('mul', affine(x, c, 0), affine(x2, k, 1))), 'tanh'));
        const left = affine(t, 0.5, 0.5);
        const right = keep(
          binary('mul', keep(binary('mul', affine(x, 0.5 * c, 0), affine(sq(t), -1, 1))), affine(x2, 3 * k, 1)),
        );
        return mulBy(g, keep(binary('add', left, right)));
      }
      case 'ceil':
      case 'floor':
      case 'round':
      case 'sign':
        return full(g.layout.shape, 0, g.dtype, g.device);
    }
  });
}

defineGrad('unary', (g, [x, op]: [RawTensor, UnaryOp], y) => [[x, unaryGrad(op, g, x, y)]]);

function paramUnaryGrad(p: ParamUnary, g: RawTensor, x: RawTensor, y: RawTensor): RawTensor {
  return scoped((keep) => {
    const mask = (t: RawTensor): RawTensor => keep(cast(t, x.dtype));
    switch (p.op) {
      case 'affine':
        return scale(g, p.a);
      case 'powf':
        // e x^(e - 1)
        return mulBy(g, keep(scale(keep(paramUnary(x, { op: 'powf', a: p.a - 1, b: 0 })), p.a)));
      case 'clamp': {
        // passes where lo <= x <= hi
        const inside = keep(binary('mul', mask(keep(compare('ge', x, p.a))), mask(keep(compare('le', x, p.b)))));
        return mulBy(g, inside);
      }
      case 'leakyRelu': {
        const pos = mask(keep(compare('gt', x, 0)));
        return mulBy(g, keep(paramUnary(pos, { op: 'affine', a: 1 - p.a, b: p.a })));
      }
      case 'elu':
        // 1 where x > 0, else y + alpha
        return mulBy(g, keep(where(keep(compare('gt', x, 0)), 1, keep(paramUnary(y, { op: 'affine', a: 1, b: p.a })))));
    }
  });
}

defineGrad('paramUnary', (g, [x, p]: [RawTensor, ParamUnary], y) => [[x, paramUnaryGrad(p, g, x, y)]]);

defineGrad('binary', (g, [op, a, b]: [BinaryOp, RawTensor, RawTensor | number, readonly number[]], _y, wants) => {
  const out: Pair[] = [];
  // a side that needs no gradient (a loss's count of valid targets, a mask) is not computed
  const bt = typeof b === 'number' || !wants(b) ? null : b;
  const wantA = wants(a);
  scoped((keep) => {
    let ga: RawTensor | null = null,
      gb: RawTensor | null = null;
    switch (op) {
      case 'add':
        ga = g;
        gb = g;
        break;
      case 'sub':
        ga = g;
        gb = bt && keep(unary(g, 'neg'));
        break;
      case 'mul':
        ga = wantA ? keep(binary('mul', g, b)) : null;
        gb = bt && keep(binary('mul', g, a));
        break;
      case 'div':
        ga = wantA ? keep(binary('div', g, b)) : null;
        // -g a / b^2
        gb = bt && keep(unary(keep(binary('div', keep(binary('mul', g, a)), keep(unary(bt, 'sqr')))), 'neg'));
        break;
      case 'maximum':
      case 'minimum': {
        // the larger (smaller) input takes g; ties split it evenly
        const cmp = op === 'maximum' ? 'gt' : 'lt';
        const win = keep(cast(keep(compare(cmp, a, b)), g.dtype));
        const tie = keep(scale(keep(cast(keep(compare('eq', a, b)), g.dtype)), 0.5));
        const wa = keep(binary('add', win, tie));
        ga = wantA ? keep(binary('mul', g, wa)) : null;
        gb = bt && keep(binary('mul', g, keep(paramUnary(wa, { op: 'affine', a: -1, b: 1 }))));
        break;
      }
    }
    if (wantA && ga) out.push([a, sumTo(ga, a.layout.shape)]);
    if (bt && gb) out.push([bt, sumTo(gb, bt.layout.shape)]);
  });
  return out;
});

defineGrad(
  'where',
  (g, [cond, a, b]: [RawTensor, RawTensor | number, RawTensor | number, readonly number[], string]) => {
    const out: Pair[] = [];
    scoped((keep) => {
      if (typeof a !== 'number') out.push([a, sumTo(keep(where(cond, g, 0)), a.layout.shape)]);
      if (typeof b !== 'number') out.push([b, sumTo(keep(where(cond, 0, g)), b.layout.shape)]);
    });
    return out;
  },
);

// ---- reductions ------------------------------------------------------------------------------

defineGrad('reduce', (g, [op, x, dims, keepdim]: [ReduceOp, RawTensor, number[], boolean, number[]], y) =>
  scoped((keep) => {
    const kept = x.layout.shape.map((n, i) => (dims.includes(i) ? 1 : n));
    const gk = keepdim ? g : keep(reshape(g, kept));
    const gb = keep(gk.broadcastAs(x.layout.shape));
    if (op === 'sum') return [[x, contiguous(gb)]];
    const count = dims.reduce((c, d) => c * x.layout.shape[d]!, 1);
    if (op === 'mean') return [[x, scale(gb, 1 / count)]];
    // max / min: the elements equal to the result share the gradient evenly
    const yk = keepdim ? y : keep(reshape(y, kept));
    const hit = keep(cast(keep(compare('eq', x, keep(yk.broadcastAs(x.layout.shape)))), g.dtype));
    const ties = keep(reduce('sum', hit, dims, true));
    return [[x, binary('mul', gb, keep(binary('div', hit, keep(ties.broadcastAs(x.layout.shape)))))]];
  }),
);

// ---- linear algebra --------------------------------------------------------------------------

defineGrad('matmul', (g, [a, b]: [RawTensor, RawTensor, readonly number[]], _y, wants) =>
  scoped((keep) => {
    // as matrices: a [..., m, k], b [..., k, n], g [..., m, n]
    const a2 = a.rank === 1 ? keep(a.unsqueeze(0)) : a;
    const b2 = b.rank === 1 ? keep(b.unsqueeze(1)) : b;
    let g2 = g;
    if (a.rank === 1) g2 = keep(g2.unsqueeze(g2.rank - (b.rank === 1 ? 0 : 1)));
    if (b.rank === 1) g2 = keep(g2.unsqueeze(g2.rank));
    const sides: [RawTensor, RawTensor][] = [];
    if (wants(a)) {
      const ga = keep(matmul(g2, keep(b2.transpose(-2, -1))));
      sides.push([a, sumTo(ga, a.rank === 1 ? [1, a.layout.shape[0]!] : a.layout.shape)]);
    }
    if (wants(b)) {
      const gb = keep(matmul(keep(a2.transpose(-2, -1)), g2));
      sides.push([b, sumTo(gb, b.rank === 1 ? [b.layout.shape[0]!, 1] : b.layout.shape)]);
    }
    return sides.map(([t, gt]) => {
      if (sameShape(gt!.layout.shape, t!.layout.shape)) return [t, gt] as Pair;
      try {
        return [t, reshape(gt!, t!.layout.shape)] as Pair;
      } finally {
        gt!.dispose();
      }
    });
  }),
);

defineGrad('linear', (g, [x, w, o]: [RawTensor, RawTensor, LinearOptions, number, number, number[]], _y, wants) => {
  if (o.norm || o.act) throw new Error('linear: no gradient yet with a fused norm or activation; use the separate ops');
  return scoped((keep) => {
    const k = x.layout.shape[x.rank - 1]!,
      n = w.layout.shape[0]!;
    const rows = numel(x.layout.shape.slice(0, -1));
    const g2 = keep(reshape(g, [rows, n]));
    const x2 = keep(reshape(x, [rows, k]));
    return wantedGrads(wants, [
      [x, () => reshape(keep(matmul(g2, w)), x.layout.shape)],
      [w, () => matmul(keep(g2.transpose(0, 1)), x2)],
      [o.bias, () => sumTo(g2, [n])],
      [o.residual, () => g.view(g.layout)],
    ]);
  });
});

// ---- copies, casts, nn -------------------------------------------------------------------

defineGrad('toDtype', (g, [x]: [RawTensor, string]) => [[x, cast(g, x.dtype)]]);
defineGrad('contiguous', (g, [x]: [RawTensor]) => [[x, g.view(g.layout)]]);
defineGrad('reshape', (g, [x]: [RawTensor, readonly number[]]) => [[x, reshape(g, x.layout.shape)]]);
defineGrad('to', (g, [x]: [RawTensor, unknown]) => [[x, toDevice(g, x.device)]]);

defineGrad('cat', (g, [ts, d]: [readonly RawTensor[], number, number[]]) => {
  let at = 0;
  return ts.map((t) => {
    const n = t.layout.shape[d]!;
    const part = g.narrow(d, at, n);
    at += n;
    return [t, part] as Pair;
  });
});

defineGrad('softmax', (g, [x, dim, log]: [RawTensor, number, boolean], y) => [
  // softmax: y (g - sum(g y)); logSoftmax: g - exp(y) sum(g); one kernel a row on a GPU
  [x, softmaxBackward(g, y, dim, log)],
]);

defineGrad('rmsNorm', (g, [x, w, eps]: [RawTensor, RawTensor, number]) => {
  // y = x r w, r = 1 / sqrt(mean(x^2) + eps): gx = r (g w) - x r^3 mean(g w x), gw = sum(g x r)
  const [gx, gw] = rmsNormBackward(g, x, w, eps);
  return [
    [x, gx],
    [w, gw],
  ];
});

defineGrad('layerNorm', (g, [x, w, b, eps]: [RawTensor, RawTensor, RawTensor | null, number]) => {
  // xhat = (x - mu) r, y = xhat w + b: gx = r (gh - mean(gh) - xhat mean(gh xhat)), gh = g w;
  // gw = sum(g xhat), gb = sum(g), summed over rows in a fixed order
  const [gx, gw, gb] = layerNormBackward(g, x, w, b, eps);
  const out: Pair[] = [
    [x, gx],
    [w, gw],
  ];
  if (b && gb) out.push([b, gb]);
  else gb?.dispose();
  return out;
});

defineGrad('indexSelect', (g, [x, ids, d]: [RawTensor, RawTensor, number, number[]]) =>
  scoped((keep) => [[x, indexAdd(keep(full(x.layout.shape, 0, g.dtype, g.device)), ids, g, d)]]),
);

defineGrad('embedding', (g, [ids, table]: [RawTensor, RawTensor, number[]]) =>
  scoped((keep) => {
    const hidden = table.layout.shape[1]!;
    const flatIds = keep(reshape(ids, [ids.numel]));
    const rows = keep(reshape(g, [ids.numel, hidden]));
    return [[table, indexAdd(keep(full(table.layout.shape, 0, g.dtype, g.device)), flatIds, rows, 0)]];
  }),
);

defineGrad('gather', (g, [x, ids, d]: [RawTensor, RawTensor, number]) =>
  scoped((keep) => [[x, scatter(keep(full(x.layout.shape, 0, g.dtype, g.device)), ids, g, d, true)]]),
);

defineGrad('cumsum', (g, [x, d]: [RawTensor, number]) =>
  scoped((keep) => {
    // out[i] = sum of x[0..i], so x[i] gets the sum of g[i..]: the total minus the running sum before i
    const total = keep(reduce('sum', g, [d], true));
    const before = keep(binary('sub', keep(cumsum(g, d)), g));
    return [[x, binary('sub', total, before)]];
  }),
);

defineGrad('rope', (g, [x, cos, sin, layout]: [RawTensor, RawTensor, RawTensor, RopeLayout]) =>
  // a rotation by the angle's negative undoes it: the same pairing with -sin
  scoped((keep) => [[x, rope(g, cos, keep(unary(sin, 'neg')), layout)]]),
);

defineGrad('indexAdd', (g, [x, ids, src, d]: [RawTensor, RawTensor, RawTensor, number]) => [
  [x, g.view(g.layout)],
  [src, indexSelect(g, ids, d)],
]);

/** t ([ids' shape]) padded with zeros at the end of each dim up to shape (src may be larger
 *  than ids; its elements past them get no gradient) */
function padTo(t: RawTensor, shape: readonly number[]): RawTensor {
  let cur = t.view(t.layout);
  for (let i = 0; i < shape.length; i++) {
    const extra = shape[i]! - cur.layout.shape[i]!;
    if (extra === 0) continue;
    const zs = cur.layout.shape.map((n, k) => (k === i ? extra : n));
    const z = full(zs, 0, cur.dtype, cur.device);
    const next = cat([cur, z], i);
    z.dispose();
    cur.dispose();
    cur = next;
  }
  return cur;
}

defineGrad('scatter', (g, [x, ids, src, d, add]: [RawTensor, RawTensor, RawTensor, number, boolean]) =>
  scoped((keep) => {
    const picked = keep(gather(g, ids, d));
    // scatter overwrites: the cells it wrote take nothing from x; scatterAdd keeps x whole
    const dx = add ? g.view(g.layout) : scatter(g, ids, keep(full(ids.layout.shape, 0, g.dtype, g.device)), d, false);
    return [
      [x, dx],
      [src, padTo(picked, src.layout.shape)],
    ];
  }),
);
