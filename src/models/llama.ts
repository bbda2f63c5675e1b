// A Llama-family decoder (Hugging Face model_type llama, mistral, qwen2) built from nn/: token
// embedding, N blocks of (RMSNorm, grouped-query attention over a KV cache, RMSNorm, SwiGLU
// MLP) with residuals, a final RMSNorm and the LM head (tied to the embedding or not).
// Only the public Tensor API is used, so it runs on every device, the CPU included. With the `tp`
// option each process of a tensor-parallel job loads and runs one shard (llama-shard.ts): the
// attention by heads and the MLP by features, one all-reduce after o_proj and one after down_proj.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Tensor, toDevice, type DeviceLike } from '../tensor/tensor.ts';
import type { Device } from '../device/device.ts';
import { DTYPE_INFO, type DType } from '../core/dtype.ts';
import { TensorError } from '../core/errors.ts';
import { tidy } from '../core/scope.ts';
import { Linear, type Projection } from '../nn/linear.ts';
import { RMSNorm } from '../nn/norm.ts';
import { Embedding } from '../nn/embedding.ts';
import { RotaryEmbedding, ropeInverseFrequencies } from '../nn/rotary.ts';
import { CausalSelfAttention, type DevicePositions } from '../nn/attention.ts';
import { GatedMLP } from '../nn/mlp.ts';
import { KVCache } from '../nn/kv-cache.ts';
import type { PagedKVCache } from '../nn/paged-kv-cache.ts';
import { pagedSelfAttention, type PagedStep } from '../nn/paged-attention.ts';
import { loadChecked, type WeightSource } from '../nn/weights.ts';
import { parseLlamaConfig, type LlamaConfig } from './llama-config.ts';
import { llamaShard, shardSlices, type LlamaShard, type WeightSlice } from './llama-shard.ts';
import { tensorParallelRank, type TensorParallelOption, type TensorParallelRank } from '../distributed/tp-rank.ts';
import { RankRowParallel } from '../nn/parallel/rank-projection.ts';

export interface ModelLoadOptions {
  device?: DeviceLike;
  /** the model's compute dtype; default: the config's torch_dtype on a GPU, f32 on the CPU */
  dtype?: DType;
  /** called after each weight: tensors loaded so far, and in all */
  onProgress?: (done: number, total: number) => void;
  /**
   * this process's rank of a tensor-parallel job: the Communicator that initProcessGroup()
   * returns (one rank per process, under `rocm-tensor launch`). The model loads only its shard
   * onto that rank's device (`device` may be left out) and every rank must run the same calls.
   */
  tp?: TensorParallelOption;
}

interface Block {
  readonly inNorm: RMSNorm;
  readonly attn: CausalSelfAttention;
  readonly postNorm: RMSNorm;
  readonly mlp: GatedMLP;
}

/** x W^T (+ b) (+ residual) with the projection's weights, no fused norm or activation */
function project(x: Tensor, p: Pick<Projection, 'weight' | 'bias'>, residual?: Tensor): Tensor {
  return x.linear(p.weight, { bias: p.bias, residual: residual ?? null });
}

export class LlamaModel {
  private constructor(
    readonly config: LlamaConfig,
    readonly device: Device,
    readonly dtype: DType,
    private readonly embed: Embedding,
    private readonly blocks: readonly Block[],
    private readonly norm: RMSNorm,
    private readonly lmHead: Linear,
    readonly rope: RotaryEmbedding,
    /** this rank's part under tensor parallelism, null on one device */
    readonly shard: LlamaShard | null,
    private readonly tp: TensorParallelRank | null,
  ) {}

  /** reads config.json from a Hugging Face model folder */
  static async readConfig(dir: string): Promise<LlamaConfig> {
    const path = join(dir, 'config.json');
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (e) {
      throw new TensorError(`${path}: cannot read the model's config (${(e as Error).message})`);
    }
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch (e) {
      throw new TensorError(`${path}: invalid JSON (${(e as Error).message})`);
    }
    return parseLlamaConfig(raw, path);
  }

  /** builds the model from weights with Hugging Face names (only this rank's shard with `tp`) */
  static async fromWeights(config: LlamaConfig, src: WeightSource, opts: ModelLoadOptions = {}): Promise<LlamaModel> {
    const c = config;
    const tp = opts.tp ? tensorParallelRank('LlamaModel', opts.tp) : null;
    if (tp && opts.device !== undefined && toDevice(opts.device) !== tp.device) {
      throw new TensorError(
        `LlamaModel: device ${toDevice(opts.device)} was given, but tensor-parallel rank ${tp.rank} of ${tp.size} runs on ${tp.device}; leave device out`,
      );
    }
    const device = tp ? tp.device : toDevice(opts.device);
    const dtype = opts.dtype ?? (device.isCpu ? 'f32' : (config.dtype ?? 'bf16'));
    const shard = tp ? llamaShard(c, tp.rank, tp.size) : null;
    const cut = shard ? shardSlices(shard, c.headDim) : null;
    const at = { device, dtype };
    const perLayer = 9 + (c.qkvBias ? 3 : 0) + (c.outBias ? 1 : 0) + (c.mlpBias ? 3 : 0);
    const total = 2 + (c.tieEmbeddings ? 0 : 1) + c.layers * perLayer;
    let done = 0;
    const owned: { dispose(): void }[] = [];
    /** a weight of the full `shape`, or only `slice` of it */
    const get = async (name: string, shape: number[], slice?: WeightSlice): Promise<Tensor> => {
      refuseQuantized(src, name);
      const t = await loadChecked(src, name, shape, at);
      opts.onProgress?.(++done, total);
      if (!slice) return t;
      // the loader reads whole tensors: this rank's part is copied out and the rest freed at
      // once, so a device holds one whole weight at a time, never the whole model
      const v = t.narrow(slice.dim, slice.start, slice.length);
      const part = Tensor.cat([v], slice.dim);
      v.dispose();
      t.dispose();
      return part;
    };
    const cat = (ts: Tensor[]): Tensor => {
      if (ts.length === 1) return ts[0]!;
      const t = Tensor.cat(ts, 0);
      for (const x of ts) x.dispose();
      return t;
    };
    /** weights (and biases) of several projections stacked into one [sum out, in] Linear; with
     *  `rows`, each projection's rows of this rank (column-parallel) */
    const fused = async (
      parts: readonly { name: string; out: number; rows?: WeightSlice }[],
      inF: number,
      bias: boolean,
    ): Promise<Linear> => {
      // one at a time: loads share the device's staging buffer
      const ws: Tensor[] = [],
        bs: Tensor[] = [];
      try {
        for (const p of parts) ws.push(await get(`${p.name}.weight`, [p.out, inF], p.rows));
        if (bias) for (const p of parts) bs.push(await get(`${p.name}.bias`, [p.out], p.rows));
      } catch (e) {
        for (const t of [...ws, ...bs]) t.dispose();
        throw e;
      }
      const lin = new Linear(cat(ws), bias ? cat(bs) : null);
      owned.push(lin);
      return lin;
    };
    /** a projection whose input features split over the ranks (row-parallel): this rank's
     *  columns, the whole bias, and the all-reduce; a plain Linear on one device */
    const reducing = async (
      name: string,
      out: number,
      inF: number,
      bias: boolean,
      cols?: WeightSlice,
    ): Promise<Projection> => {
      const w = await get(`${name}.weight`, [out, inF], cols);
      let b: Tensor | null = null;
      try {
        if (bias) b = await get(`${name}.bias`, [out]);
      } catch (e) {
        w.dispose();
        throw e;
      }
      const proj = tp ? new RankRowParallel(w, b, tp.ranks) : new Linear(w, b);
      owned.push(proj);
      return proj;
    };
    try {
      const h = c.hiddenSize,
        d = c.headDim;
      const embed = new Embedding(await get('model.embed_tokens.weight', [c.vocabSize, h]));
      owned.push(embed);
      const blocks: Block[] = [];
      for (let l = 0; l < c.layers; l++) {
        const p = `model.layers.${l}`;
        const inNorm = new RMSNorm(await get(`${p}.input_layernorm.weight`, [h]), c.rmsNormEps);
        owned.push(inNorm);
        const qkv = await fused(
          [
            { name: `${p}.self_attn.q_proj`, out: c.heads * d, rows: cut?.q },
            { name: `${p}.self_attn.k_proj`, out: c.kvHeads * d, rows: cut?.kv },
            { name: `${p}.self_attn.v_proj`, out: c.kvHeads * d, rows: cut?.kv },
          ],
          h,
          c.qkvBias,
        );
        const o = await reducing(`${p}.self_attn.o_proj`, h, c.heads * d, c.outBias, cut?.o);
        const postNorm = new RMSNorm(await get(`${p}.post_attention_layernorm.weight`, [h]), c.rmsNormEps);
        owned.push(postNorm);
        const gateUp = await fused(
          [
            { name: `${p}.mlp.gate_proj`, out: c.intermediateSize, rows: cut?.gateUp },
            { name: `${p}.mlp.up_proj`, out: c.intermediateSize, rows: cut?.gateUp },
          ],
          h,
          c.mlpBias,
        );
        const down = await reducing(`${p}.mlp.down_proj`, h, c.intermediateSize, c.mlpBias, cut?.down);
        const heads = shard?.heads ?? c.heads,
          kvHeads = shard?.kvHeads ?? c.kvHeads;
        blocks.push({
          inNorm,
          postNorm,
          attn: new CausalSelfAttention(qkv, o, { heads, kvHeads, headDim: d, window: c.windows[l] ?? null }),
          mlp: new GatedMLP(gateUp, down),
        });
      }
      const norm = new RMSNorm(await get('model.norm.weight', [h]), c.rmsNormEps);
      owned.push(norm);
      // a tied head is a second handle on the embedding's storage
      const headW = c.tieEmbeddings
        ? embed.weight.view(embed.weight.layout)
        : await get('lm_head.weight', [c.vocabSize, h]);
      const lmHead = new Linear(headW);
      const rope = new RotaryEmbedding(ropeInverseFrequencies(d, c.ropeTheta, c.ropeScaling), device, dtype);
      return new LlamaModel(c, device, dtype, embed, blocks, norm, lmHead, rope, shard, tp);
    } catch (e) {
      for (const m of owned) m.dispose();
      throw e;
    }
  }

  /** bytes of every weight held (a tied head counted once; this rank's shard under tensor parallelism) */
  weightBytes(): number {
    const size = (t: Tensor | null) => (t ? t.numel * DTYPE_INFO[t.dtype].size : 0);
    const lin = (l: Projection) => size(l.weight) + size(l.bias);
    let n = size(this.embed.weight) + size(this.norm.weight) + (this.config.tieEmbeddings ? 0 : lin(this.lmHead));
    for (const b of this.blocks) {
      n +=
        size(b.inNorm.weight) +
        size(b.postNorm.weight) +
        lin(b.attn.qkv) +
        lin(b.attn.out) +
        lin(b.mlp.gateUp) +
        lin(b.mlp.down);
    }
    return n;
  }

  /** a cache for `batch` sequences of up to maxLen tokens (prompt and generated together) */
  newCache(batch: number, maxLen: number): KVCache {
    const c = this.config;
    if (!Number.isInteger(batch) || batch < 1 || !Number.isInteger(maxLen) || maxLen < 1) {
      throw new TensorError(`newCache: batch and maxLen must be positive integers, got ${batch} and ${maxLen}`);
    }
    this.rope.reserve(maxLen);
    // under tensor parallelism each rank caches the key/value heads it computes
    return new KVCache(
      { layers: c.layers, batch, kvHeads: this.shard?.kvHeads ?? c.kvHeads, maxLen, headDim: c.headDim },
      this.device,
      this.dtype,
    );
  }

  /**
   * Under tensor parallelism, rank 0's sampled ids into every rank's `ids` (a broadcast, in
   * place), so that all ranks feed the same tokens even where their logits differ in the last
   * bit; nothing on one device. Queued like any op, so it also goes into a captured graph.
   */
  shareIds(ids: Tensor): void {
    if (this.tp) this.tp.ranks.broadcast([ids], 0);
  }

  /**
   * ids [b, t] (u32 or i64) at the cache's current length -> logits [b, t, vocab] (or
   * [b, 1, vocab] for the last position only); advances the cache by t.
   */
  forward(ids: Tensor, cache: KVCache, opts: { lastOnly?: boolean; at?: DevicePositions } = {}): Tensor {
    if (ids.rank !== 2)
      throw new TensorError(`LlamaModel.forward: ids must be [batch, tokens], got [${ids.shape.join(', ')}]`);
    const [b, t] = ids.shape as [number, number];
    if (b !== cache.batch) throw new TensorError(`LlamaModel.forward: ids batch ${b} != cache batch ${cache.batch}`);
    if (ids.device !== this.device)
      throw new TensorError(`LlamaModel.forward: ids on ${ids.device}, model on ${this.device}`);
    const at = opts.at;
    // with positions on the device the caller keeps the cache's count (one graph, many steps)
    if (!at) {
      cache.reserve(t);
      this.rope.reserve(cache.length + t);
    }
    const logits = tidy(() => {
      let x = this.embed.forward(ids);
      for (let l = 0; l < this.blocks.length; l++) {
        const blk = this.blocks[l]!;
        // each block takes its norm and adds its residual itself (one kernel each at batch 1);
        // the residual stream is replaced block by block, each old one released at once
        const x1 = blk.attn.forward(x, l, this.rope, cache, at, { norm: blk.inNorm, residual: x });
        x.dispose();
        x = blk.mlp.forward(x1, { norm: blk.postNorm, residual: x1 });
        x1.dispose();
      }
      const last = opts.lastOnly && t > 1 ? x.narrow(1, t - 1, 1) : x;
      return this.lmHead.forward(last, { norm: this.norm });
    });
    if (!at) cache.length += t;
    return logits;
  }

  /**
   * The training forward: ids [b, t] -> logits [b, t, vocab] through ops that all carry
   * gradients (no KV cache, no fused norm or activation), causal from position 0. Gradients
   * reach the weights that require one: set requiresGrad on parameters() to fine-tune, or train
   * from fresh weights. One device only.
   */
  forwardTrain(ids: Tensor): Tensor {
    if (this.tp) throw new TensorError('LlamaModel.forwardTrain: not under tensor parallelism; train on one device');
    if (ids.rank !== 2)
      throw new TensorError(`LlamaModel.forwardTrain: ids must be [batch, tokens], got [${ids.shape.join(', ')}]`);
    if (ids.device !== this.device)
      throw new TensorError(`LlamaModel.forwardTrain: ids on ${ids.device}, model on ${this.device}`);
    const [b, t] = ids.shape as [number, number];
    this.rope.reserve(t);
    const { cos, sin } = this.rope.at(0, t);
    return tidy(() => {
      let x = this.embed.forward(ids);
      for (const blk of this.blocks) {
        const { heads, kvHeads, headDim: d, window } = blk.attn.shape;
        const qkv = project(blk.inNorm.forward(x), blk.attn.qkv);
        const split = (start: number, n: number) => qkv.narrow(2, start * d, n * d).reshape([b, t, n, d]);
        const qk = split(0, heads + kvHeads).ropeThd(cos, sin);
        const q = qk.narrow(2, 0, heads).transpose(1, 2),
          k = qk.narrow(2, heads, kvHeads).transpose(1, 2),
          v = split(heads + kvHeads, kvHeads).transpose(1, 2);
        const o = Tensor.scaledDotProductAttention(q, k, v, { causal: true, window: window ?? undefined });
        const x1 = project(o.transpose(1, 2).reshape([b, t, heads * d]), blk.attn.out, x);
        // the gate and up projections are stacked [gate; up]: swiglu takes them as they come
        x = project(project(blk.postNorm.forward(x1), blk.mlp.gateUp).swiglu(), blk.mlp.down, x1);
      }
      // a tied head's weight is a view of the embedding's: the gradient goes to the embedding itself
      const head = this.config.tieEmbeddings ? { weight: this.embed.weight, bias: null } : this.lmHead;
      return project(this.norm.forward(x), head);
    });
  }

  /** every weight tensor of the model once (a tied head is the embedding): what an optimizer
   *  takes after requiresGrad is set on them */
  parameters(): Tensor[] {
    const all: Tensor[] = [this.embed.weight];
    for (const blk of this.blocks) {
      all.push(blk.inNorm.weight, blk.postNorm.weight);
      for (const p of [blk.attn.qkv, blk.attn.out, blk.mlp.gateUp, blk.mlp.down]) {
        all.push(p.weight);
        if (p.bias) all.push(p.bias);
      }
    }
    all.push(this.norm.weight);
    if (!this.config.tieEmbeddings) all.push(this.lmHead.weight);
    if (this.lmHead.bias) all.push(this.lmHead.bias);
    return [...new Set(all)];
  }

  /**
   * One step of the serving engine over a paged KV cache: ids u32 [tokens] are the new tokens of
   * several sequences packed in order (as `step` lays them out), positions u32 [tokens] their
   * places in their sequences; returns the logits [rows, vocab] of the token rows `rows` u32
   * picks (the last token of each sequence that samples). The caller reserves the rotary tables.
   */
  forwardPaged(ids: Tensor, positions: Tensor, cache: PagedKVCache, step: PagedStep, rows: Tensor): Tensor {
    return tidy(() => {
      const t = ids.dim(0);
      const rot = this.rope.gather(positions);
      let x = this.embed.forward(ids.reshape([1, t]));
      for (let l = 0; l < this.blocks.length; l++) {
        const blk = this.blocks[l]!;
        const x1 = pagedSelfAttention(blk.attn, x, l, rot, cache, step, { norm: blk.inNorm, residual: x });
        x.dispose();
        x = blk.mlp.forward(x1, { norm: blk.postNorm, residual: x1 });
        x1.dispose();
      }
      return this.lmHead.forward(x.reshape([t, x.dim(2)]).indexSelect(rows, 0), { norm: this.norm });
    });
  }

  dispose(): void {
    this.embed.dispose();
    for (const b of this.blocks) {
      b.inNorm.dispose();
      b.attn.dispose();
      b.postNorm.dispose();
      b.mlp.dispose();
    }
    this.norm.dispose();
    this.lmHead.dispose();
    this.rope.dispose();
  }
}

/**
 * Integer weights are a quantized checkpoint (GPTQ and AWQ pack int4 into I32 `qweight`s,
 * bitsandbytes stores I8 or packed U8 `weight`s with scales beside them): converting them to
 * floats would give garbage, so they are refused by name.
 */
function refuseQuantized(src: WeightSource, name: string): void {
  const packed = name.endsWith('.weight') ? `${name.slice(0, -'.weight'.length)}.qweight` : null;
  const [tensor, dtype] = src.has(name)
    ? [name, src.info(name).dtype]
    : packed && src.has(packed)
      ? [packed, src.info(packed).dtype ?? 'packed']
      : [name, undefined];
  if (dtype !== undefined && /^(u|i)\d+$|^bool$|^packed$/i.test(dtype)) {
    throw new TensorError(
      `${src.label}: weight '${tensor}' has dtype ${dtype}: quantized checkpoints (GPTQ, AWQ, bitsandbytes) are not supported; ` +
        'use a float16, bfloat16 or float32 checkpoint of the model',
    );
  }
}
