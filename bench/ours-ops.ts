// The op-family cases of bench/cases-ops.ts on rocm-tensor, through the public Tensor API only;
// bench/compare-torch.py's prepare_op is the same list in PyTorch, argument for argument.
import { Tensor, type DType } from '../src/index.ts';
import type { BenchCase } from './cases.ts';

export interface OpKit {
  /** a device tensor of random values in [lo, hi), kept until the case is disposed */
  rnd(shape: readonly number[], dtype?: DType, lo?: number, hi?: number): Tensor;
  /** one value per rotation slot */
  sets<T>(make: () => T): T[];
  /** run(i) queues f(i) and drops its result */
  once(f: (i: number) => Tensor): { run(i: number): void; dispose(): void };
  keep(t: Tensor): Tensor;
}

/** i64 ids in [0, below) (torch's indexing takes only int64, so both sides read the same bytes) */
function ids(kit: OpKit, shape: readonly number[], below: number): Tensor {
  // floats below `below - 0.5`: f32 rounding never lifts one to `below`
  const f = kit.rnd(shape, 'f32', 0, below - 0.5);
  const fl = f.floor();
  try {
    return kit.keep(fl.toDtype('i64'));
  } finally {
    fl.dispose();
  }
}

/** null when the op is not one of the families here */
export function prepareOp(c: BenchCase, kit: OpKit): { run(i: number): void; dispose(): void } | null {
  const { rnd, sets, once } = kit;
  const p = c.params ?? {};
  const at = <T>(xs: readonly T[], i: number): T => xs[i % xs.length]!;
  switch (c.op) {
    case 'conv2d':
    case 'convTranspose2d': {
      const ins = sets(() => [rnd(c.shape, c.dtype, -1, 1), rnd(c.shapeB!, c.dtype, -1, 1)] as const);
      const o = { stride: p.stride ?? 1, padding: p.padding ?? 0 };
      return once((i) => {
        const [x, w] = at(ins, i);
        return c.op === 'conv2d' ? x.conv2d(w, o) : x.convTranspose2d(w, o);
      });
    }
    case 'maxPool2d':
    case 'avgPool2d': {
      const ins = sets(() => rnd(c.shape));
      const o = { kernel: p.kernel!, stride: p.stride ?? p.kernel!, padding: p.padding ?? 0 };
      return once((i) => (c.op === 'maxPool2d' ? at(ins, i).maxPool2d(o) : at(ins, i).avgPool2d(o)));
    }
    case 'upsampleNearest2d':
    case 'upsampleBilinear2d': {
      const ins = sets(() => rnd(c.shape));
      const [oh, ow] = p.size as [number, number];
      return once((i) =>
        c.op === 'upsampleNearest2d'
          ? at(ins, i).upsampleNearest2d(oh, ow)
          : at(ins, i).upsampleBilinear2d(oh, ow, false),
      );
    }
    case 'indexSelect': {
      const ins = sets(() => [rnd(c.shape), ids(kit, p.ids!, p.idsBelow!)] as const);
      return once((i) => {
        const [x, id] = at(ins, i);
        return x.indexSelect(id, p.dim!);
      });
    }
    case 'gather': {
      const ins = sets(() => [rnd(c.shape), ids(kit, p.ids!, p.idsBelow!)] as const);
      return once((i) => {
        const [x, id] = at(ins, i);
        return x.gather(id, p.dim!);
      });
    }
    case 'scatterAdd': {
      const ins = sets(() => [rnd(c.shape), ids(kit, p.ids!, p.idsBelow!), rnd(p.ids!)] as const);
      return once((i) => {
        const [x, id, src] = at(ins, i);
        return x.scatterAdd(id, src, p.dim!);
      });
    }
    case 'indexAdd': {
      const srcShape = c.shape.map((s, d) => (d === p.dim ? p.ids![0]! : s));
      const ins = sets(() => [rnd(c.shape), ids(kit, p.ids!, p.idsBelow!), rnd(srcShape)] as const);
      return once((i) => {
        const [x, id, src] = at(ins, i);
        return x.indexAdd(id, src, p.dim!);
      });
    }
    case 'embedding': {
      const ins = sets(() => [rnd(c.shape), ids(kit, p.ids!, p.idsBelow!)] as const);
      return once((i) => {
        const [table, id] = at(ins, i);
        return Tensor.embedding(id, table);
      });
    }
    case 'argsort': {
      const ins = sets(() => rnd(c.shape));
      return once((i) => at(ins, i).argsort(p.dim!));
    }
    case 'sort': {
      const ins = sets(() => rnd(c.shape));
      return once((i) => {
        const r = at(ins, i).sort(p.dim!);
        r.indices.dispose();
        return r.values;
      });
    }
    case 'topk': {
      const ins = sets(() => rnd(c.shape));
      return once((i) => {
        const r = at(ins, i).topk(p.k!, { dim: p.dim! });
        r.indices.dispose();
        return r.values;
      });
    }
    case 'cat': {
      const ins = sets(() => [rnd(c.shape), rnd(c.shapeB!)] as const);
      return once((i) => Tensor.cat([...at(ins, i)], p.dim!));
    }
    case 'contiguousT': {
      const ins = sets(() => rnd(c.shape));
      return once((i) => at(ins, i).T.contiguous());
    }
    case 'cumsum': {
      const ins = sets(() => rnd(c.shape));
      return once((i) => at(ins, i).cumsum(p.dim!));
    }
    case 'batchNorm': {
      const ch = c.shape[1]!;
      const o = {
        mean: rnd([ch]),
        variance: rnd([ch], c.dtype, 0.5, 2),
        weight: rnd([ch], c.dtype, 0.5, 1.5),
        bias: rnd([ch]),
        eps: 1e-5,
      };
      const ins = sets(() => rnd(c.shape));
      return once((i) => at(ins, i).batchNorm(o));
    }
    case 'rope': {
      const [t, d] = [c.shape[2]!, c.shape[3]!];
      const cos = rnd([t, d / 2], c.dtype, -1, 1),
        sin = rnd([t, d / 2], c.dtype, -1, 1);
      const ins = sets(() => rnd(c.shape));
      return once((i) => at(ins, i).rope(cos, sin));
    }
    case 'attention': {
      const ins = sets(
        () => [rnd(c.shape, c.dtype, -1, 1), rnd(c.shapeB!, c.dtype, -1, 1), rnd(c.shapeB!, c.dtype, -1, 1)] as const,
      );
      const causal = p.causal ?? false;
      return once((i) => {
        const [q, k, v] = at(ins, i);
        return Tensor.scaledDotProductAttention(q, k, v, { causal });
      });
    }
    default:
      return null;
  }
}
