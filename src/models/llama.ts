// A Llama-family decoder (Hugging Face model_type llama, mistral, qwen2) built from nn/: token
// embedding, N blocks of (RMSNorm, grouped-query attention over a KV cache, RMSNorm, SwiGLU
// MLP) with residuals, a final RMSNorm and the LM head (tied to the embedding or not).
// Only the public Tensor API is used, so it runs on every device, the CPU included.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Tensor, toDevice, type DeviceLike } from '../tensor.ts';
import type { Device } from '../device.ts';
import { DTYPE_INFO, type DType } from '../dtype.ts';
import { TensorError } from '../errors.ts';
import { tidy } from '../scope.ts';
import { Linear } from '../nn/linear.ts';
import { RMSNorm } from '../nn/norm.ts';
import { Embedding } from '../nn/embedding.ts';
import { RotaryEmbedding, ropeInverseFrequencies } from '../nn/rotary.ts';
import { CausalSelfAttention, type DevicePositions } from '../nn/attention.ts';
import { GatedMLP } from '../nn/mlp.ts';
import { KVCache } from '../nn/kv-cache.ts';
import { loadChecked, type WeightSource } from '../nn/weights.ts';
import { parseLlamaConfig, type LlamaConfig } from './llama-config.ts';

export interface ModelLoadOptions {
  device?: DeviceLike;
  /** the model's compute dtype; default: the config's torch_dtype on a GPU, f32 on the CPU */
  dtype?: DType;
  /** called after each weight: tensors loaded so far, and in all */
  onProgress?: (done: number, total: number) => void;
}

interface Block {
  readonly inNorm: RMSNorm;
  readonly attn: CausalSelfAttention;
  readonly postNorm: RMSNorm;
  readonly mlp: GatedMLP;
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
  ) {}

  /** reads config.json from a Hugging Face model folder */
  static async readConfig(dir: string): Promise<LlamaConfig> {
    const path = join(dir, 'config.json');
    let text: string;
    try { text = await readFile(path, 'utf8'); } catch (e) {
      throw new TensorError(`${path}: cannot read the model's config (${(e as Error).message})`);
    }
    let raw: unknown;
    try { raw = JSON.parse(text); } catch (e) { throw new TensorError(`${path}: invalid JSON (${(e as Error).message})`); }
    return parseLlamaConfig(raw, path);
  }

  /** builds the model from weights with Hugging Face names */
  static async fromWeights(config: LlamaConfig, src: WeightSource, opts: ModelLoadOptions = {}): Promise<LlamaModel> {
    const device = toDevice(opts.device);
    const dtype = opts.dtype ?? (device.isCpu ? 'f32' : config.dtype ?? 'bf16');
    const c = config;
    const at = { device, dtype };
    const perLayer = 9 + (c.qkvBias ? 3 : 0) + (c.outBias ? 1 : 0) + (c.mlpBias ? 3 : 0);
    const total = 2 + (c.tieEmbeddings ? 0 : 1) + c.layers * perLayer;
    let done = 0;
    const owned: { dispose(): void }[] = [];
    const get = async (name: string, shape: number[]): Promise<Tensor> => {
      const t = await loadChecked(src, name, shape, at);
      opts.onProgress?.(++done, total);
      return t;
    };
    /** weights (and biases) of several projections stacked into one [sum out, in] Linear */
    const fused = async (names: string[], outs: number[], inF: number, bias: boolean): Promise<Linear> => {
      // one at a time: loads share the device's staging buffer
      const ws: Tensor[] = [], bs: Tensor[] = [];
      for (const [i, n] of names.entries()) ws.push(await get(`${n}.weight`, [outs[i]!, inF]));
      if (bias) for (const [i, n] of names.entries()) bs.push(await get(`${n}.bias`, [outs[i]!]));
      const cat = (ts: Tensor[]): Tensor => { if (ts.length === 1) return ts[0]!; const t = Tensor.cat(ts, 0); for (const x of ts) x.dispose(); return t; };
      const lin = new Linear(cat(ws), bias ? cat(bs) : null);
      owned.push(lin);
      return lin;
    };
    try {
      const h = c.hiddenSize, d = c.headDim;
      const embed = new Embedding(await get('model.embed_tokens.weight', [c.vocabSize, h]));
      owned.push(embed);
      const blocks: Block[] = [];
      for (let l = 0; l < c.layers; l++) {
        const p = `model.layers.${l}`;
        const inNorm = new RMSNorm(await get(`${p}.input_layernorm.weight`, [h]), c.rmsNormEps);
        owned.push(inNorm);
        const qkv = await fused([`${p}.self_attn.q_proj`, `${p}.self_attn.k_proj`, `${p}.self_attn.v_proj`], [c.heads * d, c.kvHeads * d, c.kvHeads * d], h, c.qkvBias);
        const o = await fused([`${p}.self_attn.o_proj`], [h], c.heads * d, c.outBias);
        const postNorm = new RMSNorm(await get(`${p}.post_attention_layernorm.weight`, [h]), c.rmsNormEps);
        owned.push(postNorm);
        const gateUp = await fused([`${p}.mlp.gate_proj`, `${p}.mlp.up_proj`], [c.intermediateSize, c.intermediateSize], h, c.mlpBias);
        const down = await fused([`${p}.mlp.down_proj`], [h], c.intermediateSize, c.mlpBias);
        blocks.push({
          inNorm, postNorm,
          attn: new CausalSelfAttention(qkv, o, { heads: c.heads, kvHeads: c.kvHeads, headDim: d, window: c.windows[l] ?? null }),
          mlp: new GatedMLP(gateUp, down),
        });
      }
      const norm = new RMSNorm(await get('model.norm.weight', [h]), c.rmsNormEps);
      owned.push(norm);
      // a tied head is a second handle on the embedding's storage
      const headW = c.tieEmbeddings ? embed.weight.view(embed.weight.layout) : await get('lm_head.weight', [c.vocabSize, h]);
      const lmHead = new Linear(headW);
      const rope = new RotaryEmbedding(ropeInverseFrequencies(d, c.ropeTheta, c.ropeScaling), device, dtype);
      return new LlamaModel(c, device, dtype, embed, blocks, norm, lmHead, rope);
    } catch (e) {
      for (const m of owned) m.dispose();
      throw e;
    }
  }

  /** bytes of every weight held (a tied head counted once) */
  weightBytes(): number {
    const size = (t: Tensor | null) => (t ? t.numel * DTYPE_INFO[t.dtype].size : 0);
    const lin = (l: Linear) => size(l.weight) + size(l.bias);
    let n = size(this.embed.weight) + size(this.norm.weight) + (this.config.tieEmbeddings ? 0 : lin(this.lmHead));
    for (const b of this.blocks) {
      n += size(b.inNorm.weight) + size(b.postNorm.weight) + lin(b.attn.qkv) + lin(b.attn.out) + lin(b.mlp.gateUp) + lin(b.mlp.down);
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
    return new KVCache({ layers: c.layers, batch, kvHeads: c.kvHeads, maxLen, headDim: c.headDim }, this.device, this.dtype);
  }

  /**
   * ids [b, t] (u32 or i64) at the cache's current length -> logits [b, t, vocab] (or
   * [b, 1, vocab] for the last position only); advances the cache by t.
   */
  forward(ids: Tensor, cache: KVCache, opts: { lastOnly?: boolean; at?: DevicePositions } = {}): Tensor {
    if (ids.rank !== 2) throw new TensorError(`LlamaModel.forward: ids must be [batch, tokens], got [${ids.shape.join(', ')}]`);
    const [b, t] = ids.shape as [number, number];
    if (b !== cache.batch) throw new TensorError(`LlamaModel.forward: ids batch ${b} != cache batch ${cache.batch}`);
    if (ids.device !== this.device) throw new TensorError(`LlamaModel.forward: ids on ${ids.device}, model on ${this.device}`);
    const at = opts.at;
    // with positions on the device the caller keeps the cache's count (one graph, many steps)
    if (!at) { cache.reserve(t); this.rope.reserve(cache.length + t); }
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

  dispose(): void {
    this.embed.dispose();
    for (const b of this.blocks) { b.inNorm.dispose(); b.attn.dispose(); b.postNorm.dispose(); b.mlp.dispose(); }
    this.norm.dispose();
    this.lmHead.dispose();
    this.rope.dispose();
  }
}
