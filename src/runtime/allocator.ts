// Caching device allocator. cudaMalloc/hipMalloc synchronize the device and cost tens of
// microseconds, so freed blocks are kept and reused. Requests are rounded to size classes;
// small ones (<= 1 MiB) are carved out of 2 MiB segments, large ones out of segments rounded to
// 2 MiB (20 MiB for mid sizes) so that a slightly smaller request later can reuse them. Blocks
// are split on allocation and merged with free neighbours on free. A block freed on a stream
// is only reused on that stream: work on one stream runs in order, so no event is needed.
//
// The cache is bounded (ROCM_TENSOR_MEMORY_CACHE_LIMIT): each segment counts the blocks handed
// out of it, and once the segments no block uses ("idle") add up past the limit, the least
// recently used of them go back to the device. A limit on idle segments, not on all free bytes:
// free space inside a segment that still holds a live block cannot be returned, so a cap on it
// could not be kept. Varied request sizes (batches, prompt lengths) otherwise leave one more
// odd-sized segment behind each time, and a long-running process only ever grows. A graph
// capture takes the segments a disposed graph gave back ("quiet": nothing ran on them since the
// dispose synchronized) before it mallocs: one decode graph per generation reuses the last's.
import type { DevicePtr, GpuRuntime, GpuStream } from './gpu.ts';
import { OutOfMemoryError } from '../core/errors.ts';
import { parseEnv, readEnv } from '../core/config.ts';

const SMALL = 1 << 20;
const SMALL_SEGMENT = 2 << 20;
const MID_SEGMENT = 20 << 20;
const LARGE_ROUND = 2 << 20;
const MIN_BLOCK = 512;
/** requests from which a capture pool's segments are rounded up to its largest (alloc) */
const CAPTURE_ROUND_FROM = 10 << 20;
const STACK_FLUSH_AT = 64 << 10;
/** idle segments kept when ROCM_TENSOR_MEMORY_CACHE_LIMIT is unset: a quarter of the device's
 *  memory, and at least 2 GiB. Well above what a decode loop's transients need; and a training
 *  step frees its activations (gigabytes) back to the cache and takes them again in the next
 *  step, which a small limit would turn into frees, synchronizations and mallocs every step */
export function defaultCacheLimit(totalMemory: number): number {
  return Math.max(2 * 2 ** 30, Math.floor((Number.isFinite(totalMemory) ? totalMemory : 0) / 4));
}

/** `stream` keys the segment's free lists: a real stream, or a graph's private pool */
interface Segment {
  readonly base: DevicePtr;
  readonly size: number;
  readonly small: boolean;
  stream: GpuStream;
  /** blocks handed out of it and not freed (those in the exact-size cache count as freed) */
  used: number;
  /** given back by a disposed graph and unused since: no queued work can touch it, so the next
   *  capture may take it on any stream (releasePool's caller has synchronized) */
  quiet: boolean;
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
  /** the part of `cached` in segments no block uses: what `cacheLimit` bounds (the rest is free
   *  space inside segments that still hold a live block) */
  idle: number;
  peakInUse: number;
  peakReserved: number;
  /** calls to the device's malloc */
  deviceAllocations: number;
  /** segments given back to the device (by the cache limit, emptyCache or an out-of-memory retry) */
  deviceFrees: number;
  /** of those, the segments given back because idle ones passed `cacheLimit` */
  cacheReleases: number;
  /** alloc() calls served */
  allocations: number;
  /** ROCM_TENSOR_MEMORY_LIMIT: the most reserved bytes; null for the device's memory */
  limit: number | null;
  /** ROCM_TENSOR_MEMORY_CACHE_LIMIT: the most idle bytes kept */
  cacheLimit: number;
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

function checkCacheLimit(bytes: number): void {
  if (!Number.isSafeInteger(bytes) || bytes < 0)
    throw new RangeError(`allocator: the cache limit must be a whole number of bytes >= 0, got ${bytes}`);
}

export class CachingAllocator {
  /** free blocks per stream and pool, sorted by size then address */
  private readonly pools = new Map<GpuStream, { small: BlockImpl[]; large: BlockImpl[] }>();
  /** small blocks freed and kept whole, per stream and size: the hot loop's alloc/free pairs
   *  become a pop and a push; they merge back into the free lists when a small request misses */
  private readonly stacks = new Map<GpuStream, Map<number, BlockImpl[]>>();
  private readonly segments = new Set<Segment>();
  private readonly live = new Set<BlockImpl>();
  /** segments no block uses, outside live graphs' pools; oldest first (insertion order) */
  private readonly idle = new Set<Segment>();
  private idleBytes = 0;
  private inUse = 0;
  private reserved = 0;
  private peak = 0;
  private peakReserved = 0;
  private deviceAllocs = 0;
  private deviceFrees = 0;
  private cacheReleases = 0;
  private allocs = 0;

  /** while a graph is captured on `stream`, its allocations come from the pool keyed `key` */
  private capture: { readonly stream: GpuStream; readonly key: GpuStream } | null = null;
  /** the largest large segment the current capture's pool made (see alloc) */
  private captureSegMax = 0;
  /** pools of live graphs: emptyCache() leaves them alone, replays still use their memory */
  private readonly graphPools = new Set<GpuStream>();

  constructor(
    private readonly rt: GpuRuntime,
    readonly limit: number | null = readEnv('ROCM_TENSOR_MEMORY_LIMIT') ?? null,
    private cacheLimit: number = readEnv('ROCM_TENSOR_MEMORY_CACHE_LIMIT') ??
      defaultCacheLimit(rt.info?.totalMemory ?? 0),
  ) {
    checkCacheLimit(cacheLimit);
  }

  /** changes the most idle bytes kept; idle segments past it go back to the device now */
  setCacheLimit(bytes: number): void {
    checkCacheLimit(bytes);
    this.cacheLimit = bytes;
    this.trim();
  }

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
    this.captureSegMax = 0;
    this.graphPools.add(key);
    return key;
  }
  endCapture(): void {
    this.capture = null;
    this.trim();
  }

  /**
   * Gives a graph's private segments back to the allocator for `stream` once no replay can run
   * any more (the caller synchronizes first). Blocks still held by tensors free into `stream`'s
   * lists when they are disposed.
   */
  releasePool(key: GpuStream, stream: GpuStream): void {
    this.flushStacks(key);
    const from = this.pools.get(key);
    this.graphPools.delete(key);
    for (const seg of this.segments) {
      if (seg.stream !== key) continue;
      seg.stream = stream;
      if (seg.used === 0) {
        seg.quiet = true;
        this.toIdle(seg);
      }
    }
    if (from) {
      const to = this.pool(stream);
      for (const k of ['small', 'large'] as const) for (const b of from[k]) this.insertFree(to[k], b);
      this.pools.delete(key);
    }
    this.stacks.delete(key);
    this.trim();
  }

  /** bytes reserved by segments of one pool (a stream's or a graph's) */
  poolBytes(key: GpuStream): number {
    let n = 0;
    for (const seg of this.segments) if (seg.stream === key) n += seg.size;
    return n;
  }

  /** bytes of one pool's blocks in use (a graph's outputs: counted in inUse too) */
  poolInUse(key: GpuStream): number {
    let n = 0;
    for (const b of this.live) if (b.segment.stream === key) n += b.size;
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
        this.took(hit.segment);
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
    if (!block && this.capture && stream === this.capture.key) block = this.adoptQuiet(stream, small, size);
    if (!block) {
      let segBytes = segmentSize(size);
      // A capture pool's large segments take the size of its largest one when that is at most
      // twice theirs: a backward's 24.5 MiB gradients then fit the segments its forward's 12.25
      // MiB activations freed, which segments sized to their requests cut too small (a captured
      // CNN step's pool 214 -> 152 MiB on the null runtime; docs/internals/tried-not-kept.md)
      if (this.capture && stream === this.capture.key && size >= CAPTURE_ROUND_FROM) {
        if (2 * segBytes >= this.captureSegMax) segBytes = Math.max(segBytes, this.captureSegMax);
        this.captureSegMax = Math.max(this.captureSegMax, segBytes);
      }
      const base = this.deviceMalloc(segBytes, bytes);
      const seg: Segment = { base, size: segBytes, small, stream, used: 0, quiet: false };
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
    this.took(block.segment);
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
    const seg = block.segment;
    if (--seg.used === 0 && !this.graphPools.has(seg.stream)) this.toIdle(seg);
    if (block.segment.small) {
      const perStream = this.stacks.get(block.segment.stream) ?? this.newStacks(block.segment.stream);
      let st = perStream.get(block.size);
      if (!st) {
        st = [];
        perStream.set(block.size, st);
      }
      block.stacked = true;
      st.push(block);
    } else this.release(block);
    if (this.idleBytes > this.cacheLimit) this.trim();
  }

  private took(seg: Segment): void {
    if (seg.used++ !== 0) return;
    seg.quiet = false;
    if (this.idle.delete(seg)) this.idleBytes -= seg.size;
  }

  /**
   * For a capture's pool, instead of a device malloc: the smallest quiet idle segment that fits
   * (not one far larger, as in takeBestFit), moved to the pool `key` whole. Each generation
   * captures a decode graph; without this, each took fresh segments and gave the last graph's
   * back to the cache, a malloc and (past the limit) a free per generation.
   */
  private adoptQuiet(key: GpuStream, small: boolean, size: number): BlockImpl | null {
    let best: Segment | null = null;
    for (const seg of this.idle) {
      if (!seg.quiet || seg.small !== small || seg.size < size) continue;
      if (CachingAllocator.tooLarge(seg.size, size)) continue;
      if (!best || seg.size < best.size) best = seg;
    }
    if (!best) return null;
    const b = this.takeIdle(best);
    best.stream = key;
    return b;
  }
  /** an idle segment's one free block (the whole segment), out of its free list and the idle set */
  private takeIdle(seg: Segment): BlockImpl {
    const list = this.pool(seg.stream)[seg.small ? 'small' : 'large'];
    const i = this.lowerBound(list, seg.size, seg.base);
    const b = list[i];
    if (!b || b.segment !== seg || b.prev || b.next) throw new Error('allocator: free list corrupted');
    list.splice(i, 1);
    b.free = false;
    this.idle.delete(seg);
    this.idleBytes -= seg.size;
    return b;
  }
  private toIdle(seg: Segment): void {
    this.idle.add(seg);
    this.idleBytes += seg.size;
  }

  /**
   * gives the least recently used idle segments back to the device until the idle bytes fit the
   * limit; not while a graph is captured (a device free synchronizes, which a capture forbids):
   * endCapture() trims instead
   */
  private trim(): void {
    if (this.capture || this.idleBytes <= this.cacheLimit) return;
    this.waitForDevice();
    for (const seg of this.idle) {
      if (this.idleBytes <= this.cacheLimit) return;
      this.releaseSegment(seg);
      this.cacheReleases++;
    }
  }

  /**
   * Before segments go back: work queued on any stream may still use their blocks (a freed
   * block is reused in stream order, never waited for). The drivers' free may synchronize by
   * itself (cuMemFree says it "may"); an explicit wait makes it certain, once per batch of frees.
   */
  private waitForDevice(): void {
    if (!this.capture) this.rt.synchronize();
  }

  /** returns an idle segment to the device: its blocks are merged back into one free block first */
  private releaseSegment(seg: Segment): void {
    this.flushStacks(seg.stream);
    this.takeIdle(seg);
    this.segments.delete(seg);
    this.reserved -= seg.size;
    this.deviceFrees++;
    this.rt.free(seg.base);
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
      // emptied, not kept empty: a server's steps come in ever new sizes, and walking thousands
      // of empty stacks on every flush cost more than the cache saved
      for (const st of perStream.values()) {
        for (const b of st) {
          b.stacked = false;
          this.release(b);
          any = true;
        }
      }
      perStream.clear();
    }
    return any;
  }

  /** returns every wholly free segment to the device (those of live graphs' pools stay) */
  emptyCache(): void {
    if (this.idle.size === 0) return;
    this.waitForDevice();
    for (const seg of this.idle) this.releaseSegment(seg);
  }

  stats(): MemoryStats {
    return {
      inUse: this.inUse,
      reserved: this.reserved,
      cached: this.reserved - this.inUse,
      idle: this.idleBytes,
      peakInUse: this.peak,
      peakReserved: this.peakReserved,
      deviceAllocations: this.deviceAllocs,
      deviceFrees: this.deviceFrees,
      cacheReleases: this.cacheReleases,
      allocations: this.allocs,
      limit: this.limit,
      cacheLimit: this.cacheLimit,
    };
  }
  resetPeak(): void {
    this.peak = this.inUse;
    this.peakReserved = this.reserved;
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
    if (this.reserved > this.peakReserved) this.peakReserved = this.reserved;
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
  /** don't hand a huge cached block to a small large-pool request: it would pin the block */
  private static tooLarge(have: number, size: number): boolean {
    return have > SMALL && have > 4 * size && have - size > MID_SEGMENT;
  }
  private takeBestFit(pool: BlockImpl[], size: number): BlockImpl | null {
    const i = this.lowerBound(pool, size, 0n);
    if (i >= pool.length) return null;
    const b = pool[i]!;
    if (CachingAllocator.tooLarge(b.size, size)) return null;
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
