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
import { tidy } from '../core/scope.ts';
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
    // what is made here is freed when anything below throws (a capture can run out of memory)
    try {
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
      warmUpOutsideCapture(model, cache, sampler, this.pos, this.uniforms, ctx);
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
    } catch (e) {
      this.disposeInputs();
      throw e;
    }
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
    this.disposeInputs();
  }

  /** the static inputs (those made so far, when the constructor failed) */
  private disposeInputs(): void {
    const made: (Tensor | null | undefined)[] = [this.tokens, this.pos, this.step, this.counts, this.keyIdx];
    for (const t of [...made, this.uniforms]) t?.dispose();
  }
}

/**
 * The eager work a decode step does once before its capture, so that what it builds the first
 * time (a single-id KV write's scratch, sampling's first-use buffers) is made outside the
 * capture: one single-id write at `pos` and, when sampling, one draw. Everything it makes is
 * freed before it returns (runs on any device; the CPU tests count live tensors around it).
 */
export function warmUpOutsideCapture(
  model: LlamaModel,
  cache: KVCache,
  sampler: Sampler,
  pos: Tensor,
  uniforms: Tensor | null,
  ctx: SampleContext,
): void {
  // in a scope of its own: a view left undisposed here (of the uniforms, say) would keep its
  // storage alive after the graph is gone, one storage per sampled generation
  tidy(() => {
    const b = cache.batch,
      dev = model.device;
    const k0 = cache.keys[0]!;
    const scratch = Tensor.zeros(k0.shape, { dtype: k0.dtype, device: dev });
    scratch.indexSet(pos, Tensor.zeros([b, k0.dim(1), 1, k0.dim(3)], { dtype: k0.dtype, device: dev }), 2);
    if (!sampler.greedy && uniforms) {
      const probe = Tensor.zeros([b, model.config.vocabSize], { dtype: model.dtype, device: dev });
      sampler.sample(probe, uniforms.narrow(0, 0, 1).reshape([b, 1]), ctx);
    }
  });
}
