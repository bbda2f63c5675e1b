// The engine's decode-only steps (one new token for every sequence of the batch) replayed from
// captured graphs, one per batch-size bucket (1, 2, 4, 8, ... up to the engine's batch): a step
// of hundreds of small launches then costs the host one. Each bucket owns fixed device buffers
// for the step's inputs (token ids, positions, cache slots, block table, the lengths the paged
// attention kernel reads on the device, the rows whose logits are kept); a step uploads its
// values into them, outside any capture, and replays. The first step of a bucket captures it.
// A batch smaller than its bucket is padded with copies of its last sequence: the same token at
// the same slot, so the padded rows' cache writes put the same values in the same place, and
// their logits are left unread.
// The key splits of the paged attention kernel are chosen from the contexts of the capture's
// step and then kept (the kernel splits each token's keys evenly between them whatever their
// count, so any context stays correct; only the balance can drift as the contexts grow).
import { TensorError } from '../core/errors.ts';
import type { Graph } from '../device/graph.ts';
import type { LlamaModel } from '../models/llama.ts';
import type { PagedKVCache } from '../nn/paged-kv-cache.ts';
import { pagedMetadata } from '../ops/attention-paged.ts';
import { Tensor } from '../tensor/tensor.ts';

/** one sequence's token in a decode step */
export interface DecodeRow {
  readonly id: number;
  readonly position: number;
  /** its place in the pools: block * blockSize + offset */
  readonly slot: number;
  /** the sequence's blocks, in order */
  readonly blocks: readonly number[];
  /** its tokens in the cache after this step */
  readonly context: number;
}

interface Bucket {
  readonly ids: Tensor;
  readonly positions: Tensor;
  readonly slots: Tensor;
  readonly table: Tensor;
  readonly meta: Tensor;
  readonly rows: Tensor;
  graph: Graph<Tensor> | null;
}

/** the bucket of a batch of n sequences: the next power of two */
export function decodeBucket(n: number): number {
  let b = 1;
  while (b < n) b *= 2;
  return b;
}

export class DecodeGraphs {
  private readonly buckets = new Map<number, Bucket>();

  /** maxBlocks: the block table's width (the blocks of the longest sequence the engine allows) */
  constructor(
    readonly model: LlamaModel,
    readonly cache: PagedKVCache,
    readonly maxBlocks: number,
  ) {
    if (model.device.isCpu)
      throw new TensorError(`serve: decode graphs need a GPU device, the model is on ${model.device}`);
  }

  /**
   * The logits [rows, vocab] of a decode step over `rows` (one token a sequence, each sampled),
   * from its bucket's graph: a view of the graph's output, valid until the next step.
   */
  step(rows: readonly DecodeRow[]): Tensor {
    const n = rows.length;
    if (n === 0) throw new TensorError('serve: a decode step needs at least one sequence');
    const size = decodeBucket(n),
      mb = this.maxBlocks;
    const ids = new Uint32Array(size),
      positions = new Uint32Array(size),
      slots = new Uint32Array(size),
      table = new Uint32Array(size * mb);
    const contexts: number[] = [];
    for (let i = 0; i < size; i++) {
      const r = rows[Math.min(i, n - 1)]!;
      if (r.blocks.length > mb)
        throw new TensorError(`serve: a sequence holds ${r.blocks.length} blocks, the decode graphs' table ${mb}`);
      ids[i] = r.id;
      positions[i] = r.position;
      slots[i] = r.slot;
      table.set(r.blocks, i * mb);
      contexts.push(r.context);
    }
    const queryLens = new Array<number>(size).fill(1);
    const meta = pagedMetadata(queryLens, contexts);
    const device = this.model.device;
    let b = this.buckets.get(size);
    if (!b) {
      const up = (a: Uint32Array, shape?: number[]) => Tensor.from(a, { device, ...(shape ? { shape } : {}) });
      b = {
        ids: up(ids),
        positions: up(positions),
        slots: up(slots),
        table: up(table, [size, mb]),
        meta: up(meta),
        rows: up(Uint32Array.from({ length: size }, (_, i) => i)),
        graph: null,
      };
      this.buckets.set(size, b);
    } else {
      for (const [t, a] of [
        [b.ids, ids],
        [b.positions, positions],
        [b.slots, slots],
        [b.table, table],
        [b.meta, meta],
      ] as const)
        device.upload(t.storage.ptrAt(t.layout.offset), a);
    }
    if (!b.graph) {
      const bk = b;
      b.graph = device.captureGraph(() =>
        this.model.forwardPaged(
          bk.ids,
          bk.positions,
          this.cache,
          { slots: bk.slots, blockTable: bk.table, queryLens, contextLens: contexts, metadata: bk.meta },
          bk.rows,
        ),
      );
    }
    b.graph.replay();
    return b.graph.outputs.narrow(0, 0, n);
  }

  /** the buckets captured so far */
  get captured(): number[] {
    return [...this.buckets.entries()].filter(([, b]) => b.graph).map(([s]) => s);
  }

  dispose(): void {
    for (const b of this.buckets.values()) {
      b.graph?.dispose();
      for (const t of [b.ids, b.positions, b.slots, b.table, b.meta, b.rows]) t.dispose();
    }
    this.buckets.clear();
  }
}
