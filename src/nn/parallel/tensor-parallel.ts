// Tensor parallelism (Megatron-style) from the collectives: a column-parallel Linear holds a slice
// of the output features on each rank (no communication; optionally all-gathered), a row-parallel
// Linear holds a slice of the input features and all-reduces its partial sums. A Llama MLP is
// column (gate, up) then row (down): one all-reduce per MLP. Every method takes and returns one
// tensor per rank this process holds (RankSet.ranks order), so the same layers serve a DeviceGroup
// in one process and one rank per process.
import { Tensor } from '../../tensor/tensor.ts';
import { Linear } from '../linear.ts';
import type { GatedMLP } from '../mlp.ts';
import { ShapeError, TensorError, fmtShape } from '../../core/errors.ts';
import { tidy } from '../../core/scope.ts';
import type { RankSet } from '../../distributed/rank-set.ts';

/** rank r's rows of w [out, in]: w is `blocks` stacked matrices (gate and up: 2), each split size ways */
export function shardRows(w: Tensor, size: number, rank: number, blocks = 1): Tensor {
  const out = w.dim(0);
  if (out % (size * blocks) !== 0) {
    throw new ShapeError(
      `shardRows: ${out} rows of ${fmtShape(w.layout.shape)} do not split into ${blocks} block(s) x ${size} ranks`,
    );
  }
  const per = out / blocks,
    k = per / size;
  const parts = Array.from({ length: blocks }, (_, b) => w.narrow(0, b * per + rank * k, k));
  if (blocks === 1) return parts[0]!;
  const cat = Tensor.cat(parts, 0);
  for (const p of parts) p.dispose();
  return cat;
}

/** rank r's columns of w [out, in] (the input features), as a contiguous copy */
export function shardCols(w: Tensor, size: number, rank: number): Tensor {
  const inF = w.dim(1);
  if (inF % size !== 0)
    throw new ShapeError(`shardCols: ${inF} columns of ${fmtShape(w.layout.shape)} do not split over ${size} ranks`);
  const k = inF / size;
  const v = w.narrow(1, rank * k, k),
    c = v.contiguous();
  v.dispose();
  return c;
}

function checkCount(what: string, ranks: RankSet, xs: readonly unknown[]): void {
  if (xs.length !== ranks.ranks.length) {
    throw new TensorError(
      `${what}: got ${xs.length} inputs for the ${ranks.ranks.length} rank(s) this process holds (${ranks.ranks.join(', ')})`,
    );
  }
}

export interface ColumnParallelOptions {
  /** stacked matrices in the weight that are split separately (Llama's fused gate_up: 2) */
  readonly blocks?: number;
  /** all-gather the slices into the full output on every rank (default: keep each rank's slice) */
  readonly gatherOutput?: boolean;
}

/** y = x W^T + b with W's output features split over the ranks; the input is the same on every rank */
export class ColumnParallelLinear {
  constructor(
    readonly local: readonly Linear[],
    readonly ranks: RankSet,
    readonly options: ColumnParallelOptions = {},
  ) {
    checkCount('ColumnParallelLinear', ranks, local);
  }

  /** slices a full weight [out, in] (and bias [out]) held anywhere onto each held rank's device */
  static fromFull(
    weight: Tensor,
    bias: Tensor | null,
    ranks: RankSet,
    options: ColumnParallelOptions = {},
  ): ColumnParallelLinear {
    const blocks = options.blocks ?? 1;
    const local = ranks.ranks.map((r, i) => {
      const dev = ranks.devices[i]!;
      const w = shardRows(weight, ranks.size, r, blocks),
        wd = w.to(dev);
      w.dispose();
      let bd: Tensor | null = null;
      if (bias) {
        const b2 = bias.reshape([-1, 1]),
          bs = shardRows(b2, ranks.size, r, blocks),
          flat = bs.reshape([-1]);
        bd = flat.to(dev);
        for (const t of [b2, bs, flat]) t.dispose();
      }
      return new Linear(wd, bd);
    });
    return new ColumnParallelLinear(local, ranks, options);
  }

  /** output features in all ranks together */
  get outFeatures(): number {
    return this.local[0]!.outFeatures * this.ranks.size;
  }

  forward(xs: readonly Tensor[]): Tensor[] {
    checkCount('ColumnParallelLinear.forward', this.ranks, xs);
    const ys = xs.map((x, i) => this.local[i]!.forward(x));
    if (!this.options.gatherOutput) return ys;
    return tidy(() => {
      const n = this.ranks.size,
        blocks = this.options.blocks ?? 1;
      const g = this.ranks.allGather(ys);
      return g.map((t) => {
        // [n, ...lead, blocks * k] -> [...lead, blocks, n, k]: each block's slices side by side again
        const lead = t.shape.slice(1, -1),
          k = t.shape.at(-1)! / blocks;
        const rows = lead.reduce((a, b) => a * b, 1);
        const p = t.reshape([n, rows, blocks, k]).permute([1, 2, 0, 3]).contiguous();
        return p.reshape([...lead, blocks * n * k]);
      });
    });
  }
  dispose(): void {
    for (const l of this.local) l.dispose();
  }
}

export interface RowParallelOptions {
  /** the input is full on every rank and is sliced here (default: each rank already holds its slice) */
  readonly splitInput?: boolean;
}

/** y = x W^T + b with W's input features split over the ranks: partial sums (the bias in rank
 *  0's), then one all-reduce */
export class RowParallelLinear {
  constructor(
    readonly local: readonly Linear[],
    readonly bias: readonly Tensor[] | null,
    readonly ranks: RankSet,
    readonly options: RowParallelOptions = {},
  ) {
    checkCount('RowParallelLinear', ranks, local);
  }

  static fromFull(
    weight: Tensor,
    bias: Tensor | null,
    ranks: RankSet,
    options: RowParallelOptions = {},
  ): RowParallelLinear {
    const local = ranks.ranks.map((r, i) => {
      const w = shardCols(weight, ranks.size, r),
        wd = w.to(ranks.devices[i]!);
      w.dispose();
      return new Linear(wd, null);
    });
    // the bias is added once, after the reduction, on every rank
    const b = bias ? ranks.devices.map((d) => bias.to(d)) : null;
    return new RowParallelLinear(local, b, ranks, options);
  }

  get inFeatures(): number {
    return this.local[0]!.inFeatures * this.ranks.size;
  }

  /**
   * xs: each held rank's input (its slice, unless splitInput); `residuals`, one per held rank and
   * alike on every rank, are added to the output (a transformer block's residual stream)
   */
  forward(xs: readonly Tensor[], residuals?: readonly Tensor[]): Tensor[] {
    checkCount('RowParallelLinear.forward', this.ranks, xs);
    if (residuals) checkCount('RowParallelLinear.forward residuals', this.ranks, residuals);
    return tidy(() => {
      const k = this.local[0]!.inFeatures;
      const parts = xs.map((x, i) => {
        const xi = this.options.splitInput ? x.narrow(-1, this.ranks.ranks[i]! * k, k).contiguous() : x;
        // the bias and the residual go into rank 0's partial sum alone, so that the sum holds
        // them once with no add after it (for one row on a GPU they ride in rank 0's GEMV kernel)
        const first = this.ranks.ranks[i] === 0;
        return xi.linear(
          this.local[i]!.weight,
          first ? { bias: this.bias?.[i] ?? null, residual: residuals?.[i] ?? null } : {},
        );
      });
      return this.ranks.allReduceSum(parts);
    });
  }
  dispose(): void {
    for (const l of this.local) l.dispose();
    for (const b of this.bias ?? []) b.dispose();
  }
}

/** Llama's SwiGLU MLP split over the ranks: down(silu(gate(x)) * up(x)) with one all-reduce */
export class ParallelGatedMLP {
  constructor(
    readonly gateUp: ColumnParallelLinear,
    readonly down: RowParallelLinear,
  ) {}

  /** from the fused weights: gate_up [2 * ff, hidden] (gate rows first, then up), down [hidden, ff] */
  static fromFull(gateUp: Tensor, down: Tensor, ranks: RankSet): ParallelGatedMLP {
    return new ParallelGatedMLP(
      ColumnParallelLinear.fromFull(gateUp, null, ranks, { blocks: 2 }),
      RowParallelLinear.fromFull(down, null, ranks),
    );
  }
  /** the same weights as a one-device GatedMLP (which keeps its own) */
  static fromGatedMLP(mlp: GatedMLP, ranks: RankSet): ParallelGatedMLP {
    const g = ColumnParallelLinear.fromFull(mlp.gateUp.weight, mlp.gateUp.bias, ranks, { blocks: 2 });
    const d = RowParallelLinear.fromFull(mlp.down.weight, mlp.down.bias, ranks);
    return new ParallelGatedMLP(g, d);
  }

  /** x: the same [..., hidden] on every held rank; returns the full output on each */
  forward(xs: readonly Tensor[]): Tensor[] {
    return tidy(() => {
      const gu = this.gateUp.forward(xs);
      const hs = gu.map((t) => {
        const last = t.rank - 1,
          ff = t.dim(last) / 2;
        return t
          .narrow(last, 0, ff)
          .silu()
          .mul(t.narrow(last, ff, ff));
      });
      return this.down.forward(hs);
    });
  }
  dispose(): void {
    this.gateUp.dispose();
    this.down.dispose();
  }
}
