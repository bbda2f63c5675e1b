// The engine's knobs and how the KV pool is sized from them.
import { freemem } from 'node:os';
import { TensorError } from '../core/errors.ts';
import type { LlamaModel } from '../models/llama.ts';
import { PagedKVCache } from '../nn/paged-kv-cache.ts';
import { leadsRanks } from './tp-plan.ts';

export interface EngineOptions {
  /** sequences running at once (default 8) */
  maxBatch?: number;
  /** tokens of one sequence, prompt and completion together (default: the model's
   *  max_position_embeddings, at most 4096) */
  maxSeqLen?: number;
  /** tokens per KV block (default 16) */
  blockSize?: number;
  /** blocks in the pool; default: from kvMemory, else room for maxBatch sequences of maxSeqLen */
  kvBlocks?: number;
  /** the pool's size: bytes (> 1), or a fraction (0, 1] of the memory free now (the device's,
   *  or the host's for the CPU) */
  kvMemory?: number;
  /** prompt tokens computed per step, over every sequence still reading its prompt (default 512);
   *  smaller chunks keep the running sequences' tokens coming while a long prompt is read */
  prefillChunk?: number;
  /** requests waiting for a place in the batch at most; more are refused (default 64) */
  maxQueue?: number;
  /** hears the engine's notes (preemptions, failed steps) */
  log?: (line: string) => void;
  /**
   * replay decode-only steps from captured graphs, one per batch-size bucket (1, 2, 4, ...).
   * Default: on for a model on one GPU; off (and refused if asked for) on the CPU and for a
   * tensor-parallel model. Each bucket's first step captures it.
   */
  decodeGraphs?: boolean;
}

export interface EngineLimits {
  readonly maxBatch: number;
  readonly maxSeqLen: number;
  readonly blockSize: number;
  readonly blocks: number;
  readonly prefillChunk: number;
  readonly maxQueue: number;
}

function positive(name: string, v: number | undefined, dflt: number): number {
  if (v === undefined) return dflt;
  if (!Number.isInteger(v) || v < 1) throw new TensorError(`serve: ${name} must be a positive integer, got ${v}`);
  return v;
}

/** the memory free now on the model's device (the host's for the CPU) */
function freeBytes(model: LlamaModel): number {
  return model.device.isCpu ? freemem() : model.device.runtime.memGetInfo().free;
}

export function engineLimits(model: LlamaModel, o: EngineOptions): EngineLimits {
  const c = model.config;
  // a shard's steps need the other ranks to run the same steps: rank 0's model must send them
  if (model.shard !== null && !leadsRanks(model))
    throw new TensorError(
      'serve: a tensor-parallel model (one rank of several) is served by every rank of its job: ' +
        'start it with rocm-tensor launch --nproc N -- rocm-tensor serve DIR (or give createServer ' +
        'the tensorParallel option on rank 0 and run followSteps on the others); alone it would wait for them',
    );
  const maxBatch = positive('maxBatch', o.maxBatch, 8);
  const maxSeqLen = positive('maxSeqLen', o.maxSeqLen, Math.min(c.maxPositions, 4096));
  if (maxSeqLen > c.maxPositions)
    throw new TensorError(
      `serve: maxSeqLen ${maxSeqLen} is longer than the model's max_position_embeddings ${c.maxPositions}`,
    );
  if (maxSeqLen < 2)
    throw new TensorError(`serve: maxSeqLen must be at least 2 (a prompt token and a new one), got ${maxSeqLen}`);
  const blockSize = positive('blockSize', o.blockSize, 16);
  const prefillChunk = positive('prefillChunk', o.prefillChunk, 512);
  const maxQueue = positive('maxQueue', o.maxQueue, 64);
  const perSeq = Math.ceil(maxSeqLen / blockSize);
  const perBlock = PagedKVCache.bytesPerBlock(
    { layers: c.layers, blockSize, kvHeads: model.shard?.kvHeads ?? c.kvHeads, headDim: c.headDim },
    model.dtype,
  );
  let blocks: number;
  let why: string;
  if (o.kvBlocks !== undefined) {
    blocks = positive('kvBlocks', o.kvBlocks, 0);
    why = `kvBlocks ${blocks}`;
  } else if (o.kvMemory !== undefined) {
    const m = o.kvMemory;
    if (typeof m !== 'number' || !Number.isFinite(m) || m <= 0)
      throw new TensorError(`serve: kvMemory must be bytes (> 1) or a fraction in (0, 1], got ${m}`);
    const bytes = m <= 1 ? m * freeBytes(model) : m;
    blocks = Math.floor(bytes / perBlock);
    why = `${(bytes / 2 ** 30).toFixed(3)} GiB of KV memory (${perBlock} bytes a block)`;
  } else {
    blocks = maxBatch * perSeq;
    why = `room for ${maxBatch} sequences of ${maxSeqLen} tokens`;
  }
  if (blocks < perSeq)
    throw new TensorError(
      `serve: ${why} gives ${blocks} blocks of ${blockSize} tokens; one sequence of maxSeqLen ${maxSeqLen} needs ${perSeq}: ` +
        'give the KV cache more memory or lower the context length',
    );
  return { maxBatch, maxSeqLen, blockSize, blocks, prefillChunk, maxQueue };
}
