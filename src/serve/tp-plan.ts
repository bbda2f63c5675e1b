// Serving one model split over the ranks of a tensor-parallel job (`rocm-tensor launch --nproc N
// -- rocm-tensor serve DIR`). Rank 0 answers HTTP and runs the engine; before each model step it
// sends the step's plan to the other ranks through the ranks' broadcast: a fixed-size u32 header
// (what follows and its sizes, each sequence's query and context lengths), then the step's
// token ids, positions, KV slots, block table and the rows whose logits are read, straight from
// the device tensors the engine made. The other ranks read the header back, take the same
// tensors, and run the same model step over their own shard and KV cache, so every rank makes
// the same collectives in the same order; only rank 0 samples. A header of kind STOP ends them.
// The first message (INIT) sizes every rank's KV cache as rank 0's engine sized its own, so a
// block number means the same block on every rank.
import { GraphCaptureError, TensorError } from '../core/errors.ts';
import type { RankSet } from '../distributed/rank-set.ts';
import type { LlamaModel } from '../models/llama.ts';
import type { VocabMask } from '../models/sampling.ts';
import type { PagedStep } from '../nn/paged-attention.ts';
import { PagedKVCache } from '../nn/paged-kv-cache.ts';
import { Tensor } from '../tensor/tensor.ts';

const INIT = 0x54500001,
  STEP = 0x54500002,
  STOP = 0x54500003;
const INIT_LEN = 8;
/** kind, tokens, sequences, blocks per sequence, sampled rows, then the lengths */
const STEP_FIXED = 5;

/** what every rank's KV cache and rotary tables are sized by: rank 0's engine's limits */
export interface PlanLimits {
  readonly blocks: number;
  readonly blockSize: number;
  readonly maxBatch: number;
  readonly maxSeqLen: number;
}

/** the leading models made by leadingModel(): the engine serves a sharded model only as one of these */
const leading = new WeakSet<LlamaModel>();

/** true for a model that sends each step's plan to the other ranks before running it */
export function leadsRanks(model: LlamaModel): boolean {
  return leading.has(model);
}

function oneRank(what: string, ranks: RankSet, model: LlamaModel): void {
  if (ranks.ranks.length !== 1)
    throw new TensorError(`${what}: serving takes one rank per process; this RankSet holds ${ranks.ranks.length}`);
  if (model.shard === null)
    throw new TensorError(`${what}: the model is not split over ranks (load it with the job's communicator as tp)`);
  if (model.shard.size !== ranks.size || model.shard.rank !== ranks.ranks[0])
    throw new TensorError(
      `${what}: the model holds shard ${model.shard.rank} of ${model.shard.size}, the ranks are rank ${ranks.ranks[0]} of ${ranks.size}`,
    );
}

/** every rank checks it serves the same model as rank 0 */
function modelWords(model: LlamaModel): [number, number, number] {
  const c = model.config;
  return [c.layers, model.shard?.kvHeads ?? c.kvHeads, c.headDim];
}

/** rank 0's side: sends the plans */
export class StepPlanLeader {
  private limits: PlanLimits | null = null;
  private stopped = false;
  private held: LlamaModel | null = null;
  private lost: Error | null = null;

  /**
   * onLost hears a model step that threw after its plan was sent: the other ranks may be inside
   * that step's collectives, so the job cannot go on (the command exits, and launch stops the
   * other ranks); every later step is refused.
   */
  constructor(
    readonly ranks: RankSet,
    private readonly onLost: (e: Error) => void = () => undefined,
  ) {
    if (ranks.ranks.length !== 1 || ranks.ranks[0] !== 0)
      throw new TensorError(
        `StepPlanLeader: rank 0 leads, alone in its process; this holds ranks ${ranks.ranks.join(', ')}`,
      );
  }

  private get model(): LlamaModel {
    if (!this.held) throw new TensorError('StepPlanLeader: no model yet (served() gives it)');
    return this.held;
  }

  /** the model the engine steps (once the model has loaded): the same model, whose forwardPaged first sends the plan */
  served(m: { readonly model: LlamaModel; readonly vocabMask: VocabMask | null }): {
    readonly model: LlamaModel;
    readonly vocabMask: VocabMask | null;
  } {
    if (this.held) throw new TensorError('StepPlanLeader.served: a leader serves one model');
    oneRank('StepPlanLeader', this.ranks, m.model);
    this.held = m.model;
    return { model: leadingModel(m.model, this), vocabMask: m.vocabMask };
  }

  /** sizes the other ranks' KV caches; once, before the first step */
  start(limits: PlanLimits): void {
    if (this.limits) throw new TensorError('StepPlanLeader.start: already started');
    const words = [INIT, limits.blocks, limits.blockSize, limits.maxBatch, limits.maxSeqLen, ...modelWords(this.model)];
    this.limits = limits;
    this.send(words);
  }

  /** the step's arguments to every other rank (queued on the device; nothing waits) */
  publish(ids: Tensor, positions: Tensor, step: PagedStep, rows: Tensor): void {
    const lim = this.limits;
    if (this.lost)
      throw new TensorError(
        `StepPlanLeader.publish: an earlier step failed after its plan was sent (${this.lost.message}); the ranks are out of step: restart the job`,
      );
    if (!lim || this.stopped)
      throw new TensorError(`StepPlanLeader.publish: ${lim ? 'the ranks were stopped' : 'start() was not called'}`);
    if (this.model.device.isCapturing)
      throw new GraphCaptureError(
        'a tensor-parallel serving step cannot be captured into a graph: its plan is read back by the other ranks each step',
      );
    const seqs = step.queryLens.length;
    if (seqs > lim.maxBatch)
      throw new TensorError(
        `StepPlanLeader.publish: ${seqs} sequences in a step; the ranks were sized for ${lim.maxBatch}`,
      );
    const t = ids.numel,
      maxBlocks = step.blockTable.dim(1);
    for (const [name, x, n] of [
      ['ids', ids, t],
      ['positions', positions, t],
      ['slots', step.slots, t],
      ['blockTable', step.blockTable, seqs * maxBlocks],
      ['rows', rows, rows.numel],
    ] as const) {
      if (x.dtype !== 'u32' || x.numel !== n || !x.isContiguous())
        throw new TensorError(
          `StepPlanLeader.publish: ${name} must be contiguous u32 of ${n} elements, got ${x.dtype} [${x.shape.join(', ')}]`,
        );
    }
    const head = new Uint32Array(STEP_FIXED + 2 * lim.maxBatch);
    head.set([STEP, t, seqs, maxBlocks, rows.numel]);
    head.set(step.queryLens, STEP_FIXED);
    head.set(step.contextLens, STEP_FIXED + lim.maxBatch);
    this.send(head);
    for (const x of [ids, positions, step.slots, step.blockTable, rows]) this.ranks.broadcast([x], 0);
  }

  /** a step that threw after its plan was sent */
  fail(e: unknown): void {
    if (this.lost) return;
    this.lost = e instanceof Error ? e : new Error(String(e));
    this.onLost(this.lost);
  }

  /** ends the other ranks' loops (after the engine has drained) */
  stop(): void {
    if (this.stopped || !this.limits || this.lost) return;
    this.stopped = true;
    const head = new Uint32Array(STEP_FIXED + 2 * this.limits.maxBatch);
    head[0] = STOP;
    this.send(head);
  }

  private send(words: ArrayLike<number>): void {
    const x = Tensor.from(Uint32Array.from(words), { device: this.model.device });
    try {
      this.ranks.broadcast([x], 0);
    } finally {
      x.dispose();
    }
  }
}

/** the model with a forwardPaged that sends the plan first; everything else is the model's own */
function leadingModel(model: LlamaModel, leader: StepPlanLeader): LlamaModel {
  // the engine calls forwardPaged on what it is given; the rest (config, device, rope) is read
  // through the prototype, from the model itself
  const m = Object.create(model) as LlamaModel;
  Object.defineProperty(m, 'forwardPaged', {
    value: (ids: Tensor, positions: Tensor, cache: PagedKVCache, step: PagedStep, rows: Tensor): Tensor => {
      leader.publish(ids, positions, step, rows);
      try {
        return model.forwardPaged(ids, positions, cache, step, rows);
      } catch (e) {
        leader.fail(e);
        throw e;
      }
    },
  });
  leading.add(m);
  return m;
}

export interface FollowStats {
  readonly steps: number;
  readonly limits: PlanLimits;
}

/**
 * Another rank's side: runs the steps rank 0 sends, over its own shard and KV cache, until rank
 * 0 says stop. Waits for rank 0 as long as it takes (an idle server sends nothing).
 */
export async function followSteps(model: LlamaModel, ranks: RankSet): Promise<FollowStats> {
  oneRank('followSteps', ranks, model);
  if (ranks.ranks[0] === 0) throw new TensorError('followSteps: rank 0 leads; the other ranks follow');
  const device = model.device;
  const receive = async (n: number): Promise<Uint32Array> => {
    const x = Tensor.empty([n], 'u32', device);
    try {
      ranks.broadcast([x], 0);
      return Uint32Array.from(await x.toArray(), Number);
    } finally {
      x.dispose();
    }
  };
  const init = await receive(INIT_LEN);
  if (init[0] !== INIT) throw new TensorError(`followSteps: rank 0 sent ${init[0]} where the first plan belongs`);
  const [, blocks, blockSize, maxBatch, maxSeqLen] = Array.from(init) as number[];
  const mine = modelWords(model),
    theirs = Array.from(init.subarray(5, 8));
  if (mine.some((v, i) => v !== theirs[i]))
    throw new TensorError(
      `followSteps: rank 0 serves a model of ${theirs.join('/')} layers/key-value heads/head dim per rank, this rank holds ${mine.join('/')}`,
    );
  const limits: PlanLimits = { blocks: blocks!, blockSize: blockSize!, maxBatch: maxBatch!, maxSeqLen: maxSeqLen! };
  const c = model.config;
  const cache = new PagedKVCache(
    { layers: c.layers, blocks: limits.blocks, blockSize: limits.blockSize, kvHeads: mine[1], headDim: c.headDim },
    device,
    model.dtype,
  );
  model.rope.reserve(limits.maxSeqLen);
  let steps = 0;
  try {
    for (;;) {
      const head = await receive(STEP_FIXED + 2 * limits.maxBatch);
      if (head[0] === STOP) break;
      if (head[0] !== STEP) throw new TensorError(`followSteps: rank 0 sent plan kind ${head[0]}`);
      const [, t, seqs, maxBlocks, nRows] = Array.from(head.subarray(0, STEP_FIXED)) as number[];
      const take = (shape: number[]) => {
        const x = Tensor.empty(shape, 'u32', device);
        ranks.broadcast([x], 0);
        return x;
      };
      const owned = [take([t!]), take([t!]), take([t!]), take([seqs!, maxBlocks!]), take([nRows!])];
      const [ids, positions, slots, blockTable, rows] = owned as [Tensor, Tensor, Tensor, Tensor, Tensor];
      try {
        const step: PagedStep = {
          slots,
          blockTable,
          queryLens: Array.from(head.subarray(STEP_FIXED, STEP_FIXED + seqs!)),
          contextLens: Array.from(head.subarray(STEP_FIXED + limits.maxBatch, STEP_FIXED + limits.maxBatch + seqs!)),
        };
        // the logits are rank 0's to sample; this rank's part was its share of the collectives
        model.forwardPaged(ids, positions, cache, step, rows).dispose();
      } finally {
        for (const x of owned) x.dispose();
      }
      steps++;
    }
  } finally {
    cache.dispose();
  }
  return { steps, limits };
}
