// The packed-argument launch path shared by HIP and CUDA: `extra` = {BUFFER_POINTER, buf,
// BUFFER_SIZE, &size, END}, with the vendor's marker values (HIP ends with 0x03, CUDA with 0x00).
// The array, the size cell and the argument buffer are native allocations made once (the buffer
// grows on demand); both runtimes copy the arguments during the launch call, so reuse is safe.
import koffi from 'koffi';
import { ShapeError } from '../core/errors.ts';

export interface LaunchMarkers {
  readonly pointer: number;
  readonly size: number;
  readonly end: number;
}

export class LaunchBlock {
  readonly extra = koffi.alloc('uint64_t', 5) as bigint;
  private readonly extraView = new BigUint64Array(koffi.view(this.extra, 40));
  private readonly sizeCell = koffi.alloc('uint64_t', 1) as bigint;
  private readonly sizeView = new BigUint64Array(koffi.view(this.sizeCell, 8));
  private buf = 0n;
  private bufView = new Uint8Array(0);
  private lastSize = -1;

  constructor(m: LaunchMarkers) {
    this.extraView[0] = BigInt(m.pointer);
    this.extraView[2] = BigInt(m.size);
    this.extraView[3] = this.sizeCell;
    this.extraView[4] = BigInt(m.end);
    this.grow(512);
  }

  private grow(bytes: number): void {
    if (this.buf !== 0n) koffi.free(this.buf);
    this.buf = koffi.alloc('uint8_t', bytes) as bigint;
    this.bufView = new Uint8Array(koffi.view(this.buf, bytes));
    this.extraView[1] = this.buf;
  }

  pack(args: Uint8Array): void {
    if (args.length > this.bufView.length) this.grow(Math.max(args.length, this.bufView.length * 2));
    this.bufView.set(args);
    // launches of one kernel repeat one size: skip the BigInt when it has not changed
    if (args.length !== this.lastSize) {
      this.sizeView[0] = BigInt(args.length);
      this.lastSize = args.length;
    }
  }

  dispose(): void {
    koffi.free(this.buf);
    koffi.free(this.sizeCell);
    koffi.free(this.extra);
  }
}

const U32 = 0xffffffff;
// module level, not a closure per call: this runs on every launch
const ok = (v: number): boolean => Number.isInteger(v) && v >= 0 && v <= U32;

/** grid, block and shared-memory size as the launch APIs take them: 32-bit unsigned integers */
export function checkLaunchDims(name: string, grid: readonly number[], block: readonly number[], shared: number): void {
  if (ok(grid[0]!) && ok(grid[1]!) && ok(grid[2]!) && ok(block[0]!) && ok(block[1]!) && ok(block[2]!) && ok(shared))
    return;
  throw new ShapeError(
    `launch ${name}: grid [${grid.join(', ')}], block [${block.join(', ')}], shared ${shared} must be 32-bit unsigned integers`,
  );
}
