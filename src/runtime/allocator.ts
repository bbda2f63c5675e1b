// Caching device allocator. cudaMalloc/hipMalloc synchronize the device and cost tens of
// microseconds, so freed blocks are kept and reused. Requests are rounded to size classes;
// small ones (<= 1 MiB) are carved out of 2 MiB segments, large ones out of segments rounded to
// 2 MiB (20 MiB for mid sizes) so that a slightly smaller request later can reuse them. Blocks
// are split on allocation and merged with free neighbours on free. A block freed on a stream
// is only reused on that stream: work on one stream runs in order, so no event is needed.
import type { DevicePtr, GpuRuntime, GpuStream } from './gpu.ts';
import { OutOfMemoryError } from '../core/errors.ts';
import { parseEnv, readEnv } from '../core/config.ts';

const SMALL = 1 << 20;
const SMALL_SEGMENT = 2 << 20;
const MID_SEGMENT = 20 << 20;
const LARGE_ROUND = 2 << 20;
const MIN_BLOCK = 512;
const STACK_FLUSH_AT = 64 << 10;

/** `stream` keys the segment's free lists: a real stream, or a graph's private pool */
interface Segment {
  readonly base: DevicePtr;
  readonly size: number;
  readonly small: boolean;
  stream: GpuStream;
}

export interface Block {
  readonly ptr: DevicePtr;
  readonly size: number;
}

class BlockImpl implements Block {
  prev: BlockImpl | null = null;
  next: BlockImpl | null = null;
  free = false;
  /** freed into the exact-size cache, not yet merged with its neighbours */
  stacked = false;
  constructor(
    readonly segment: Segment,
    public ptr: DevicePtr,
    public size: number,
  ) {}
}

export interface MemoryStats {
  /** bytes in blocks handed out */
  inUse: number;
  /** bytes held from the device, in use or cached */
  reserved: number;
  /** reserved - inUse */
  cached: number;
  peakInUse: number;
  /** calls to the device's malloc */
  deviceAllocations: number;
  /** alloc() calls served */
  allocations: number;
  limit: number | null;
}

export function roundSize(bytes: number): number {
  return Math.max(MIN_BLOCK, Math.ceil(bytes / MIN_BLOCK) * MIN_BLOCK);
}
function segmentSize(rounded: number): number {
  if (rounded <= SMALL) return SMALL_SEGMENT;
  if (rounded < 10 * SMALL) return MID_SEGMENT;
  return Math.ceil(rounded / LARGE_ROUND) * LARGE_ROUND;
}

/** parses ROCM_TENSOR_MEMORY_LIMIT: bytes, or a number with k/m/g suffix (binary units) */
export function parseByteLimit(text: string | undefined): number | null {
  return parseEnv('ROCM_TENSOR_MEMORY_LIMIT', text) ?? null;
}

export class CachingAllocator {
  /** free blocks per stream and pool, sorted by size then address */
  private readonly pools = new Map<GpuStream, { small: BlockImpl[]; large: BlockImpl[] }>();
  /** small blocks freed and kept whole, per stream and size: the hot loop's alloc/free pairs
   *  become a pop and a push; they merge back into the free lists when a small request misses */
  private readonly stacks = new Map<GpuStream, Map<number, BlockImpl[]>>();
  private readonly segments = new Set<Segment>();
  private readonly live = new Set<BlockImpl>();
  private inUse = 0;
  private reserved = 0;
  private peak = 0;
  private deviceAllocs = 0;
  private allocs = 0;

  /** while a graph is captured on `stream`, its allocations come from the pool keyed `key` */
  private capture: { readonly stream: GpuStream; readonly key: GpuStream } | null = null;
  /** pools of live graphs: emptyCache() leaves them alone, replays still use their memory */
  private readonly graphPools = new Set<GpuStream>();

  constructor(
    private readonly rt: GpuRuntime,
    readonly limit: number | null = readEnv('ROCM_TENSOR_MEMORY_LIMIT') ?? null,
  ) {}

  /**
   * From now until endCapture(), allocations on `stream` come from fresh segments private to a
   * graph, never from blocks cached for eager work: a replay writes those addresses again, so
   * nothing outside the graph may ever hold them. Blocks freed during the capture go back to
   * the private pool (later captured work reuses them in stream order, as the graph replays
   * it). Returns the pool's key for releasePool().
   */
  beginCapture(stream: GpuStream): GpuStream {
    if (this.capture) throw new Error('allocator: a capture is already in progress on this device');
    const key = Object.freeze({ graphPool: true }) as unknown as GpuStream;
    this.capture = { stream, key };
    this.graphPools.add(key);
    return key;
  }
  endCapture(): void {
    this.capture = null;
  }

  /**
   * Gives a graph's private segments back to the allocator for `stream` once no replay can run
   * any more (the caller synchronizes first). Blocks still held by tensors free into `stream`'s
   * lists when they are disposed.
   */
  releasePool(key: GpuStream, stream: GpuStream): void {
    this.flushStacks(key);
    const from = this.pools.get(key);
    for (const seg of this.segments) if (seg.stream === key) seg.stream = stream;
    if (from) {
      const to = this.pool(stream);
      for (const k of ['small', 'large'] as const) for (const b of from[k]) this.insertFree(to[k], b);
      this.pools.delete(key);
    }
    this.stacks.delete(key);
    this.graphPools.delete(key);
  }

  /** bytes reserved by segments of one pool (a stream's or a graph's) */
  poolBytes(key: GpuStream): number {
    let n = 0;
    for (const seg of this.segments) if (seg.stream === key) n += seg.size;
    return n;
  }

  alloc(bytes: number, requested: GpuStream): Block {
    const stream = this.capture && requested === this.capture.stream ? this.capture.key : requested;
    const size = roundSize(bytes);
    const small = size <= SMALL;
    if (small) {
      const hit = this.stacks.get(stream)?.get(size)?.pop();
      if (hit) {
        hit.stacked = false;
        this.live.add(hit);
        this.inUse += hit.size;
        if (this.inUse > this.peak) this.peak = this.inUse;
        this.allocs++;
        return hit;
      }
    }
    const pool = this.pool(stream)[small ? 'small' : 'large'];
    // a bigger small request merges the cache first, so that it is carved from merged space
    // rather than fragmenting what is left; tiny ones try the free list first
    if (small && size >= STACK_FLUSH_AT) this.flushStacks(stream);
    let block = this.takeBestFit(pool, size);
    if (!block && small && this.flushStacks(stream)) block = this.takeBestFit(pool, size);
    if (!block) {
      const segBytes = segmentSize(size);
      const base = this.deviceMalloc(segBytes, bytes);
      const seg: Segment = { base, size: segBytes, small, stream };
      this.segments.add(seg);
      block = new BlockImpl(seg, base, segBytes);
    }
    // split off the tail when the remainder is worth keeping
    const rest = block.size - size;
    if (rest >= (small ? MIN_BLOCK : SMALL)) {
      const tail = new BlockImpl(block.segment, (block.ptr + BigInt(size)) as DevicePtr, rest);
      tail.prev = block;
      tail.next = block.next;
      if (block.next) block.next.prev = tail;
      block.next = tail;
      block.size = size;
      this.insertFree(pool, tail);
    }
    block.free = false;
    this.live.add(block);
    this.inUse += block.size;
    this.peak = Math.max(this.peak, this.inUse);
    this.allocs++;
    return block;
  }

  free(b: Block, _stream: GpuStream): void {
    const block = b as BlockImpl;
    if (!this.live.delete(block)) throw new Error('allocator: block freed twice or not ours');
    this.inUse -= block.size;
    if (block.segment.small) {
      const perStream = this.stacks.get(block.segment.stream) ?? this.newStacks(block.segment.stream);
      let st = perStream.get(block.size);
      if (!st) {
        st = [];
        perStream.set(block.size, st);
      }
      block.stacked = true;
      st.push(block);
      return;
    }
    this.release(block);
  }

  /** puts a free block back in its free list, merged with free neighbours */
  private release(block: BlockImpl): void {
    const pool = this.pool(block.segment.stream)[block.segment.small ? 'small' : 'large'];
    let merged = block;
    for (const nb of [block.prev, block.next]) {
      if (!nb || !nb.free) continue;
      this.removeFree(pool, nb);
      if (nb === merged.prev) {
        nb.size += merged.size;
        nb.next = merged.next;
        if (merged.next) merged.next.prev = nb;
        merged = nb;
      } else {
        merged.size += nb.size;
        merged.next = nb.next;
        if (nb.next) nb.next.prev = merged;
      }
    }
    this.insertFree(pool, merged);
  }

  private newStacks(stream: GpuStream): Map<number, BlockImpl[]> {
    const m = new Map<number, BlockImpl[]>();
    this.stacks.set(stream, m);
    return m;
  }

  /** merges the exact-size cache of `stream` (or of every stream) back into the free lists */
  private flushStacks(stream?: GpuStream): boolean {
    let any = false;
    for (const [s, perStream] of this.stacks) {
      if (stream !== undefined && s !== stream) continue;
      for (const st of perStream.values()) {
        for (const b of st) {
          b.stacked = false;
          this.release(b);
          any = true;
        }
        st.length = 0;
      }
    }
    return any;
  }

  /** returns every wholly free segment to the device */
  emptyCache(): void {
    this.flushStacks();
    for (const [key, pools] of this.pools) {
      if (this.graphPools.has(key)) continue;
      for (const key of ['small', 'large'] as const) {
        pools[key] = pools[key].filter((b) => {
          if (b.prev || b.next) return true;
          this.rt.free(b.segment.base);
          this.segments.delete(b.segment);
          this.reserved -= b.segment.size;
          return false;
        });
      }
    }
  }

  stats(): MemoryStats {
    return {
      inUse: this.inUse,
      reserved: this.reserved,
      cached: this.reserved - this.inUse,
      peakInUse: this.peak,
      deviceAllocations: this.deviceAllocs,
      allocations: this.allocs,
      limit: this.limit,
    };
  }
  resetPeak(): void {
    this.peak = this.inUse;
  }

  private deviceMalloc(segBytes: number, asked: number): DevicePtr {
    const tryOnce = (): DevicePtr | null => {
      if (this.limit !== null && this.reserved + segBytes > this.limit) return null;
      try {
        return this.rt.malloc(segBytes);
      } catch (e) {
        if (e instanceof OutOfMemoryError) return null;
        throw e;
      }
    };
    let ptr = tryOnce();
    if (ptr === null) {
      // free what we cache, let the GC return forgotten tensors, and try again
      this.emptyCache();
      (globalThis as { gc?: () => void }).gc?.();
      this.emptyCache();
      ptr = tryOnce();
    }
    if (ptr === null) {
      const { free, total } = this.rt.memGetInfo();
      const mib = (n: number) => `${(n / 2 ** 20).toFixed(1)} MiB`;
      throw new OutOfMemoryError(
        `out of memory on ${this.rt.vendor}:${this.rt.index}: asked for ${asked} bytes (segment ${mib(segBytes)}); ` +
          `in use by tensors ${mib(this.inUse)}, held by the cache ${mib(this.reserved - this.inUse)}, ` +
          `device free ${mib(free)} of ${mib(total)}` +
          (this.limit !== null ? `, ROCM_TENSOR_MEMORY_LIMIT ${mib(this.limit)}` : ''),
        2,
        'allocator.alloc',
      );
    }
    this.reserved += segBytes;
    this.deviceAllocs++;
    return ptr;
  }

  private pool(stream: GpuStream) {
    let p = this.pools.get(stream);
    if (!p) {
      p = { small: [], large: [] };
      this.pools.set(stream, p);
    }
    return p;
  }
  private static cmp(a: BlockImpl, size: number, ptr: bigint): number {
    return a.size !== size ? a.size - size : a.ptr < ptr ? -1 : a.ptr > ptr ? 1 : 0;
  }
  private lowerBound(pool: BlockImpl[], size: number, ptr: bigint): number {
    let lo = 0,
      hi = pool.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (CachingAllocator.cmp(pool[mid]!, size, ptr) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
  private takeBestFit(pool: BlockImpl[], size: number): BlockImpl | null {
    const i = this.lowerBound(pool, size, 0n);
    if (i >= pool.length) return null;
    const b = pool[i]!;
    // don't hand a huge cached block to a small large-pool request: it would pin the block
    if (b.size > SMALL && b.size > 4 * size && b.size - size > MID_SEGMENT) return null;
    pool.splice(i, 1);
    b.free = false;
    return b;
  }
  private insertFree(pool: BlockImpl[], b: BlockImpl): void {
    b.free = true;
    pool.splice(this.lowerBound(pool, b.size, b.ptr), 0, b);
  }
  private removeFree(pool: BlockImpl[], b: BlockImpl): void {
    const i = this.lowerBound(pool, b.size, b.ptr);
    if (pool[i] !== b) throw new Error('allocator: free list corrupted');
    pool.splice(i, 1);
    b.free = false;
  }
}
