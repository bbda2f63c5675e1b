// One decode step (embed, every layer, head, sampling) captured into a GPU graph and replayed
// for each new token. Everything a step depends on lives on the device: the token ids it reads,
// the position (rotary rows, the KV-cache write and the attention mask are all taken from it),
// and the uniform numbers of the sampler (uploaded for every step ahead of time). The step ends
// by writing its sampled ids and the next position back into those inputs, so the host only
// replays and reads the ids. Under tensor parallelism the layers' all-reduces and the broadcast
// of rank 0's ids are captured with the rest: the collectives library records them into the
// graph, and every rank replays its own graph in step with the others.
import { Tensor } from '../tensor/tensor.ts';
import type { Graph } from '../device/graph.ts';
import { TensorError } from '../core/errors.ts';
import type { KVCache } from '../nn/kv-cache.ts';
import type { LlamaModel } from './llama.ts';
import { flagNonFinite, type SampleContext, type Sampler } from './sampling.ts';

export class DecodeGraph {
  private readonly tokens: Tensor;
  /** [position, step] on the device; pos and step are views of it, so one add moves both */
  private readonly counts: Tensor;
  private readonly pos: Tensor;
  private readonly step: Tensor;
  private readonly keyIdx: Tensor;
  private readonly uniforms: Tensor | null;
  private readonly graph: Graph<Tensor>;
  private steps = 0;

  /**
   * After the prefill: `first` [b] are the ids chosen from it (Sampler.choose's, in range; their
   * position is cache.length), and at most `maxSteps` replays will follow.
   */
  constructor(
    readonly model: LlamaModel,
    readonly cache: KVCache,
    sampler: Sampler,
    first: Tensor,
    readonly maxSteps: number,
    ctx: SampleContext = {},
  ) {
    const dev = model.device,
      b = cache.batch,
      L = cache.maxLen;
    if (dev.isCpu) throw new TensorError('DecodeGraph: graphs need a GPU device');
    if (cache.length + maxSteps > L)
      throw new TensorError(`DecodeGraph: ${maxSteps} steps after ${cache.length} tokens exceed the cache length ${L}`);
    // static inputs: made before the capture, rewritten in place by every replay
    const col = first.reshape([b, 1]);
    this.tokens = col.contiguous();
    col.dispose();
    this.counts = Tensor.from(new Uint32Array([cache.length, 0]), { device: dev });
    this.pos = this.counts.narrow(0, 0, 1);
    this.step = this.counts.narrow(0, 1, 1);
    this.keyIdx = Tensor.arange(0, L, 1, { dtype: 'u32', device: dev });
    this.uniforms = sampler.greedy
      ? null
      : Tensor.from(sampler.draw(maxSteps * b), { shape: [maxSteps, b, 1], device: dev });
    const window = model.config.windows.find((w) => w !== null) ?? null;
    // an eager single-id write first: the scratch it keeps on the device is made outside the capture
    const k0 = cache.keys[0]!;
    const scratch = Tensor.zeros(k0.shape, { dtype: k0.dtype, device: dev });
    const row = Tensor.zeros([b, k0.dim(1), 1, k0.dim(3)], { dtype: k0.dtype, device: dev });
    scratch.indexSet(this.pos, row, 2);
    scratch.dispose();
    row.dispose();
    if (!sampler.greedy) {
      // an eager draw first: what sampling builds once (cumsum's triangles) is made outside the capture
      const probe = Tensor.zeros([b, model.config.vocabSize], { dtype: model.dtype, device: dev });
      const u = this.uniforms!.narrow(0, 0, 1).reshape([b, 1]);
      sampler.sample(probe, u, ctx).dispose();
      probe.dispose();
      u.dispose();
    }
    this.graph = dev.captureGraph(() => {
      const upTo = this.keyIdx.le(this.pos);
      const pad = cache.paddingMask;
      const mask = pad ? pad.minimum(upTo) : upTo;
      const windowMask = window === null ? undefined : mask.minimum(this.keyIdx.add(window).gt(this.pos));
      // one sequence reads the rotary tables at the position inside its projection kernel
      const rope = b > 1 ? model.rope.gather(this.pos) : undefined;
      const logits = model.forward(this.tokens, cache, {
        lastOnly: true,
        at: { ids: this.pos, mask, ...(rope ? { rope } : {}), ...(windowMask ? { windowMask } : {}) },
      });
      const last = logits.reshape([b, logits.dim(2)]);
      const u = this.uniforms ? this.uniforms.indexSelect(this.step, 0).reshape([b, 1]) : undefined;
      const next = sampler.choose(last, u, ctx);
      model.shareIds(next.ids);
      ctx.history?.record(next.ids);
      // feed the next replay: its tokens (the chosen ids, in range), position and step
      this.tokens.sliceSet(next.ids.reshape([b, 1]), 1, 0);
      this.counts.sliceSet(this.counts.add(1), 0, 0);
      // what the host reads: NONFINITE_ID where the logits were not finite
      return flagNonFinite(next);
    });
  }

  /** bytes of device memory private to the graph */
  get poolBytes(): number {
    return this.graph.poolBytes;
  }

  /** queues one step: the ids it samples are in the returned tensor until the next replay */
  replay(): Tensor {
    if (this.steps >= this.maxSteps) throw new TensorError(`DecodeGraph: all ${this.maxSteps} steps were replayed`);
    this.graph.replay();
    this.steps++;
    this.cache.length++;
    return this.graph.outputs;
  }

  dispose(): void {
    this.graph.dispose();
    for (const t of [this.tokens, this.pos, this.step, this.counts, this.keyIdx, this.uniforms]) t?.dispose();
  }
}
