// The KV cache's bookkeeping on the host: which of the pool's fixed-size blocks are in use and by
// how many sequences, and which full blocks hold a known token prefix. A full block is named by
// a hash of its tokens chained to the hash of the block before it, so equal names mean equal
// prefixes and the block can be shared (reference-counted, never copied: a shared block is full
// and nobody writes it again). A block whose last user leaves keeps its contents and its name,
// and is reused by name until the space is needed; then the least recently released goes first.
import { createHash } from 'node:crypto';
import { TensorError } from '../core/errors.ts';

export interface PoolStats {
  readonly total: number;
  /** held by at least one sequence */
  readonly used: number;
  /** free, with a prefix still named (reusable by name until evicted) */
  readonly cached: number;
  /** free and empty */
  readonly empty: number;
}

/** the name of a full block: its tokens after the name of the block before it ('' for the first) */
export function blockHash(parent: string, tokens: readonly number[]): string {
  return createHash('sha256').update(parent).update(Uint32Array.from(tokens)).digest('base64');
}

export class BlockPool {
  private readonly refs: Int32Array;
  private readonly names: (string | null)[];
  private readonly byName = new Map<string, number>();
  /** free blocks that still hold a named prefix, least recently released first */
  private readonly cached = new Set<number>();
  private readonly empty: number[] = [];
  private peak = 0;
  private windowPeak = 0;

  constructor(
    readonly blocks: number,
    readonly blockSize: number,
  ) {
    if (!Number.isInteger(blocks) || blocks < 1 || !Number.isInteger(blockSize) || blockSize < 1)
      throw new TensorError(
        `BlockPool: blocks and blockSize must be positive integers, got ${blocks} and ${blockSize}`,
      );
    this.refs = new Int32Array(blocks);
    this.names = new Array<string | null>(blocks).fill(null);
    for (let b = blocks - 1; b >= 0; b--) this.empty.push(b);
  }

  /** blocks allocate() can still hand out */
  get available(): number {
    return this.empty.length + this.cached.size;
  }

  stats(): PoolStats {
    return {
      total: this.blocks,
      used: this.blocks - this.available,
      cached: this.cached.size,
      empty: this.empty.length,
    };
  }

  /** the most blocks held at once since the pool was made */
  get peakUsed(): number {
    return this.peak;
  }

  /** the most blocks held at once since the last call (or since the pool was made), then starts
   *  a new window at the blocks held now: a load generator's per-load peak */
  takeWindowPeak(): number {
    const p = this.windowPeak;
    this.windowPeak = this.blocks - this.available;
    return p;
  }

  private noteUse(): void {
    const used = this.blocks - this.available;
    if (used > this.peak) this.peak = used;
    if (used > this.windowPeak) this.windowPeak = used;
  }

  /** a block for one sequence (an empty one first, else the oldest cached prefix is forgotten), or null */
  allocate(): number | null {
    let b = this.empty.pop();
    if (b === undefined) {
      const oldest = this.cached.values().next();
      if (oldest.done) return null;
      b = oldest.value;
      this.cached.delete(b);
      this.byName.delete(this.names[b]!);
      this.names[b] = null;
    }
    this.refs[b] = 1;
    this.noteUse();
    return b;
  }

  /** the block holding the prefix with this name, taken for one more sequence; null if none */
  take(name: string): number | null {
    const b = this.byName.get(name);
    if (b === undefined) return null;
    if (this.refs[b] === 0) this.cached.delete(b);
    this.refs[b]!++;
    this.noteUse();
    return b;
  }

  /** names a full block after its contents were written; false when another block has the name */
  name(block: number, name: string): boolean {
    this.checkHeld(block, 'name');
    if (this.names[block] !== null || this.byName.has(name)) return false;
    this.names[block] = name;
    this.byName.set(name, block);
    return true;
  }

  /** one sequence lets go of the block */
  release(block: number): void {
    this.checkHeld(block, 'release');
    if (--this.refs[block]! > 0) return;
    if (this.names[block] !== null) this.cached.add(block);
    else this.empty.push(block);
  }

  /** sequences holding the block */
  refCount(block: number): number {
    return this.refs[block]!;
  }

  private checkHeld(block: number, what: string): void {
    if (!(block >= 0 && block < this.blocks) || this.refs[block]! < 1)
      throw new TensorError(`BlockPool.${what}: block ${block} is not held`);
  }
}
