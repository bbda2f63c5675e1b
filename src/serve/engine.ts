// The serving engine: continuous batching over a paged KV cache. Each step it admits waiting
// requests into the running batch (at most maxBatch), gives every running sequence that is
// generating one token and the others a chunk of their prompt (prefillChunk tokens in all per
// step), runs the model once over all of them, samples for the sequences whose tokens are all
// in the cache, and lets finished sequences go at once. A prompt whose leading full blocks are
// already in the cache (an equal prefix of an earlier request) starts from them. When the pool
// runs out of blocks, the most recently admitted sequence is preempted: its blocks are released
// and it goes back to the head of the queue, to be recomputed (its prompt and what it had
// generated) when there is room again; running requests never fail for lack of memory.
import { TensorError } from '../core/errors.ts';
import { Tensor } from '../tensor/tensor.ts';
import type { LlamaModel } from '../models/llama.ts';
import { NONFINITE_ID, Sampler, type OptionNames, type SamplingOptions, type VocabMask } from '../models/sampling.ts';
import { PagedKVCache } from '../nn/paged-kv-cache.ts';
import { BlockPool, blockHash, type PoolStats } from './block-pool.ts';
import { Sequence, type FinishReason, type SequenceRequest } from './sequence.ts';
import { BadRequestError, QueueFullError, UnavailableError } from './errors.ts';
import { engineLimits, type EngineOptions } from './engine-options.ts';
import { sampleRows } from './sample-step.ts';
import { DecodeGraphs } from './decode-graphs.ts';
import { readEnv } from '../core/config.ts';

/** idle device memory a server's allocator keeps (ROCM_TENSOR_MEMORY_CACHE_LIMIT overrides) */
export const SERVE_CACHE_LIMIT = 2 * 2 ** 30;

export type { EngineOptions } from './engine-options.ts';

/** what the engine needs of a loaded model (PretrainedLlama has it) */
export interface ServedModel {
  readonly model: LlamaModel;
  /** ids never to sample (those the tokenizer cannot decode), or null */
  readonly vocabMask: VocabMask | null;
}

export interface EngineStats {
  readonly pool: PoolStats;
  readonly running: number;
  readonly waiting: number;
  readonly steps: number;
  /** sequences preempted (and later recomputed) for lack of blocks */
  readonly preemptions: number;
  /** prompt tokens whose keys and values came from the prefix cache */
  readonly prefixHitTokens: number;
}

/** a submitted request's handle */
export interface SequenceHandle {
  readonly id: number;
  /** ends the request (finish reason 'cancelled') and frees its blocks; nothing if it has ended */
  cancel(): void;
}

export class Engine {
  readonly pool: BlockPool;
  readonly cache: PagedKVCache;
  readonly maxBatch: number;
  readonly maxSeqLen: number;
  readonly prefillChunk: number;
  readonly maxQueue: number;
  private readonly waiting: Sequence[] = [];
  private readonly running: Sequence[] = [];
  private nextId = 1;
  private steps = 0;
  private preemptions = 0;
  private prefixHitTokens = 0;
  /** the sequences of the step being run */
  private readonly inStep = new Set<Sequence>();
  private closing = false;
  private stopped = false;
  private wake: (() => void) | null = null;
  private idleWaiters: (() => void)[] = [];
  private readonly loopDone: Promise<void>;
  private readonly log: (line: string) => void;
  /** decode-only steps' graphs (EngineOptions.decodeGraphs), else null */
  private readonly graphs: DecodeGraphs | null;

  constructor(
    readonly served: ServedModel,
    opts: EngineOptions = {},
  ) {
    const model = served.model;
    const lim = engineLimits(model, opts);
    this.maxBatch = lim.maxBatch;
    this.maxSeqLen = lim.maxSeqLen;
    this.prefillChunk = lim.prefillChunk;
    this.maxQueue = lim.maxQueue;
    this.log = opts.log ?? (() => undefined);
    const graphs = opts.decodeGraphs ?? (!model.device.isCpu && model.shard === null);
    if (opts.decodeGraphs && model.device.isCpu)
      throw new TensorError(`serve: decodeGraphs needs a GPU device, the model is on ${model.device}`);
    if (opts.decodeGraphs && model.shard !== null)
      throw new TensorError(
        'serve: decodeGraphs is not for a tensor-parallel model (each of its steps sends the plan to the other ranks from the host)',
      );
    this.pool = new BlockPool(lim.blocks, lim.blockSize);
    const c = model.config;
    this.cache = new PagedKVCache(
      {
        layers: c.layers,
        blocks: lim.blocks,
        blockSize: lim.blockSize,
        // a rank of a tensor-parallel job caches the key/value heads it computes
        kvHeads: model.shard?.kvHeads ?? c.kvHeads,
        headDim: c.headDim,
      },
      model.device,
      model.dtype,
    );
    model.rope.reserve(this.maxSeqLen);
    this.graphs = graphs ? new DecodeGraphs(model, this.cache, Math.ceil(this.maxSeqLen / lim.blockSize)) : null;
    // a server's steps come in every batch size and prompt length, which leave odd-sized
    // segments in the allocator's cache: unless the user chose a limit, idle segments past
    // SERVE_CACHE_LIMIT go back to the device (the library's default is sized for training)
    if (!model.device.isCpu && readEnv('ROCM_TENSOR_MEMORY_CACHE_LIMIT') === undefined)
      model.device.allocator.setCacheLimit(SERVE_CACHE_LIMIT);
    this.loopDone = this.loop();
  }

  stats(): EngineStats {
    return {
      pool: this.pool.stats(),
      running: this.running.length,
      waiting: this.waiting.length,
      steps: this.steps,
      preemptions: this.preemptions,
      prefixHitTokens: this.prefixHitTokens,
    };
  }

  /**
   * Queues a request. Throws BadRequestError for a prompt the model cannot take (empty, ids
   * outside the vocabulary, no room left in the context) or bad sampling options,
   * QueueFullError when maxQueue requests are waiting, UnavailableError while shutting down.
   */
  submit(req: SequenceRequest, sampling: SamplingOptions = {}, names?: OptionNames): SequenceHandle {
    if (this.closing) throw new UnavailableError('the server is shutting down');
    const vocab = this.served.model.config.vocabSize;
    const n = req.prompt.length;
    if (n === 0) throw new BadRequestError('the prompt is empty: it needs at least one token', 'prompt');
    const bad = req.prompt.find((id) => !Number.isInteger(id) || id < 0 || id >= vocab);
    if (bad !== undefined)
      throw new BadRequestError(`token id ${bad} is outside the model's vocabulary [0, ${vocab})`, 'prompt');
    if (n >= this.maxSeqLen)
      throw new BadRequestError(
        `the prompt has ${n} tokens; this server's context is ${this.maxSeqLen} tokens, prompt and completion together, so it must be shorter`,
        'messages',
        'context_length_exceeded',
      );
    if (!Number.isInteger(req.maxTokens) || req.maxTokens < 1)
      throw new BadRequestError(`max_tokens must be a positive integer, got ${req.maxTokens}`, 'max_tokens');
    if (this.waiting.length >= this.maxQueue) throw new QueueFullError(this.maxQueue);
    let sampler: Sampler;
    try {
      sampler = new Sampler(sampling, names);
    } catch (e) {
      throw e instanceof TensorError ? new BadRequestError(e.message) : e;
    }
    const history = sampler.history([req.prompt], vocab, this.served.model.device);
    const seq = new Sequence(this.nextId++, req, sampler, history);
    this.waiting.push(seq);
    this.wake?.();
    return { id: seq.id, cancel: () => this.cancel(seq) };
  }

  private cancel(seq: Sequence): void {
    if (seq.finished) return;
    // a sequence in the step being run keeps its blocks until the step's end
    if (this.inStep.has(seq)) seq.cancelPending = true;
    else this.finish(seq, 'cancelled');
  }

  /** resolves once nothing is running or waiting */
  idle(): Promise<void> {
    if (this.running.length === 0 && this.waiting.length === 0) return Promise.resolve();
    return new Promise((r) => this.idleWaiters.push(r));
  }

  /** refuses new requests, lets the queued and running ones finish, then frees the cache */
  async close(): Promise<void> {
    this.closing = true;
    await this.idle();
    this.stopped = true;
    this.wake?.();
    await this.loopDone;
    this.graphs?.dispose();
    this.cache.dispose();
  }

  /** ends every request now (finish reason 'cancelled'), then closes */
  async abort(): Promise<void> {
    this.closing = true;
    for (const s of [...this.running, ...this.waiting]) this.cancel(s);
    await this.close();
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      if (this.running.length === 0 && this.waiting.length === 0) {
        for (const r of this.idleWaiters.splice(0)) r();
        if (this.stopped) break;
        await new Promise<void>((r) => {
          this.wake = r;
        });
        this.wake = null;
        continue;
      }
      try {
        await this.step();
      } catch (e) {
        // a fault of the engine itself (run() answers for the model's): the requests in it end,
        // the process and the other requests go on
        const err = e instanceof Error ? e : new Error(String(e));
        this.log(`engine step failed: ${err.stack ?? err.message}`);
        for (const s of [...this.running]) this.finish(s, 'error', err);
      }
      // a turn of the event loop between steps: requests arrive, streams flush, clients leave
      await new Promise((r) => setImmediate(r));
    }
    for (const r of this.idleWaiters.splice(0)) r();
  }

  /** the blocks `tokens` tokens take */
  private blocksFor(tokens: number): number {
    return Math.ceil(tokens / this.pool.blockSize);
  }

  /** takes the cached blocks of the sequence's longest known prefix (never its last token) */
  private matchPrefix(s: Sequence): void {
    const bs = this.pool.blockSize;
    let parent = '';
    for (let i = 0; (i + 1) * bs <= s.tokens.length - 1; i++) {
      const name = blockHash(parent, s.tokens.slice(i * bs, (i + 1) * bs));
      const b = this.pool.take(name);
      if (b === null) break;
      s.blocks.push(b);
      s.names.push(name);
      parent = name;
    }
    s.computed = s.blocks.length * bs;
  }

  private admit(): void {
    while (this.waiting.length > 0 && this.running.length < this.maxBatch) {
      const s = this.waiting[0]!;
      this.matchPrefix(s);
      const first = Math.min(s.tokens.length - s.computed, this.prefillChunk);
      if (this.blocksFor(s.computed + first) - s.blocks.length > this.pool.available) {
        this.releaseBlocks(s);
        return;
      }
      if (!s.admitted) {
        s.cachedTokens = s.computed;
        this.prefixHitTokens += s.computed;
      }
      s.admitted = true;
      this.waiting.shift();
      this.running.push(s);
    }
  }

  private releaseBlocks(s: Sequence): void {
    for (const b of s.blocks) this.pool.release(b);
    s.blocks = [];
    s.names = [];
    s.computed = 0;
  }

  /** gives s the blocks for `tokens` tokens, preempting later sequences; false if s itself was preempted */
  private grow(s: Sequence, tokens: number): boolean {
    while (s.blocks.length < this.blocksFor(tokens)) {
      const b = this.pool.allocate();
      if (b !== null) {
        s.blocks.push(b);
        continue;
      }
      const victim = this.running[this.running.length - 1]!;
      this.preempt(victim);
      if (victim === s) return false;
    }
    return true;
  }

  private preempt(s: Sequence): void {
    this.releaseBlocks(s);
    this.running.splice(this.running.indexOf(s), 1);
    this.waiting.unshift(s);
    this.preemptions++;
    this.log(`request ${s.id} preempted for lack of KV blocks: it will be recomputed (${s.tokens.length} tokens)`);
  }

  private finish(s: Sequence, reason: FinishReason, error?: Error): void {
    if (s.finished) return;
    s.finished = true;
    const r = this.running.indexOf(s);
    if (r >= 0) this.running.splice(r, 1);
    const w = this.waiting.indexOf(s);
    if (w >= 0) this.waiting.splice(w, 1);
    this.releaseBlocks(s);
    s.history?.dispose();
    try {
      s.request.onFinish(reason, s.usage(), error);
    } catch (e) {
      this.log(`request ${s.id}: its finish handler threw: ${(e as Error).message}`);
    }
  }

  /** names the sequence's full blocks that are computed and not yet named (prefix cache) */
  private nameBlocks(s: Sequence): void {
    const bs = this.pool.blockSize;
    for (let i = s.names.length; (i + 1) * bs <= s.computed; i++) {
      const name = blockHash(s.names[i - 1] ?? '', s.tokens.slice(i * bs, (i + 1) * bs));
      this.pool.name(s.blocks[i]!, name);
      s.names.push(name);
    }
  }

  private async step(): Promise<void> {
    this.admit();
    const batch: { seq: Sequence; n: number }[] = [];
    let budget = this.prefillChunk;
    for (const s of [...this.running]) {
      if (!this.running.includes(s)) continue; // preempted for an earlier one
      const left = s.tokens.length - s.computed;
      const n = left === 1 ? 1 : Math.min(left, budget);
      if (n === 0) continue;
      if (!this.grow(s, s.computed + n)) continue;
      if (left > 1) budget -= n;
      batch.push({ seq: s, n });
    }
    if (batch.length === 0) return;
    for (const { seq } of batch) this.inStep.add(seq);
    try {
      await this.run(batch);
    } catch (e) {
      const err = e instanceof Error ? e : new Error(String(e));
      this.log(`step failed: ${err.message}`);
      for (const { seq } of batch) this.finish(seq, 'error', err);
    } finally {
      this.inStep.clear();
      this.steps++;
    }
    for (const { seq } of batch) if (seq.cancelPending) this.finish(seq, 'cancelled');
  }

  /** one model step over the batch, then the samples, appended and handed out */
  private async run(batch: readonly { seq: Sequence; n: number }[]): Promise<void> {
    const bs = this.pool.blockSize;
    const t = batch.reduce((a, b) => a + b.n, 0);
    const ids = new Uint32Array(t),
      positions = new Uint32Array(t),
      slots = new Uint32Array(t);
    const maxBlocks = Math.max(...batch.map((b) => b.seq.blocks.length));
    const table = new Uint32Array(batch.length * maxBlocks);
    const rows: number[] = [],
      sampling: Sequence[] = [];
    let at = 0;
    batch.forEach(({ seq, n }, i) => {
      table.set(seq.blocks, i * maxBlocks);
      for (let p = seq.computed; p < seq.computed + n; p++, at++) {
        ids[at] = seq.tokens[p]!;
        positions[at] = p;
        slots[at] = seq.blocks[Math.floor(p / bs)]! * bs + (p % bs);
      }
      if (seq.computed + n === seq.tokens.length) {
        rows.push(at - 1);
        sampling.push(seq);
      }
    });
    const device = this.served.model.device;
    const up = (a: Uint32Array, shape?: number[]) => Tensor.from(a, { device, ...(shape ? { shape } : {}) });
    const owned: Tensor[] = [];
    const own = (x: Tensor): Tensor => {
      owned.push(x);
      return x;
    };
    // a step of one new token a sequence, each sampled, replays its bucket's graph
    const decode =
      this.graphs !== null && batch.every(({ seq, n }) => n === 1 && seq.computed + 1 === seq.tokens.length);
    try {
      const logits = own(
        decode
          ? this.graphs!.step(
              batch.map(({ seq }, i) => ({
                id: ids[i]!,
                position: positions[i]!,
                slot: slots[i]!,
                blocks: seq.blocks,
                context: seq.computed + 1,
              })),
            )
          : this.served.model.forwardPaged(
              own(up(ids)),
              own(up(positions)),
              this.cache,
              {
                slots: own(up(slots)),
                blockTable: own(up(table, [batch.length, maxBlocks])),
                queryLens: batch.map((b) => b.n),
                contextLens: batch.map((b) => b.seq.computed + b.n),
              },
              // a step of prefill chunks only still runs the head on one row: nothing reads it
              own(up(Uint32Array.from(rows.length ? rows : [t - 1]))),
            ),
      );
      // the blocks are written once the step is queued: a cancel during the readback may free them
      for (const { seq, n } of batch) {
        seq.computed += n;
        this.nameBlocks(seq);
      }
      if (sampling.length === 0) return;
      const drawn = await sampleRows(logits, sampling, this.served.vocabMask);
      sampling.forEach((seq, i) => this.accept(seq, drawn[i]!));
    } finally {
      for (const x of owned) x.dispose();
    }
  }

  /** a sampled id: appended, handed out, and the sequence ended where it must */
  private accept(s: Sequence, id: number): void {
    if (s.finished || s.cancelPending) return;
    if (id === NONFINITE_ID) {
      this.finish(
        s,
        'error',
        new TensorError(`the logits of new token ${s.generated + 1} are not finite (NaN or infinity)`),
      );
      return;
    }
    s.tokens.push(id);
    if (s.request.stopIds.includes(id)) {
      this.finish(s, 'stop');
      return;
    }
    let stop: boolean | undefined;
    try {
      stop = s.request.onToken(id);
    } catch (e) {
      this.finish(s, 'error', e instanceof Error ? e : new Error(String(e)));
      return;
    }
    if (stop) this.finish(s, 'stop');
    else if (s.generated >= s.request.maxTokens || s.tokens.length >= this.maxSeqLen) this.finish(s, 'length');
  }
}
