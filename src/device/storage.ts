// A Storage is one allocation (host typed array or device block) shared by every view of it.
// Views hold references; the memory goes back when the last view is disposed (or, as a safety
// net, garbage-collected). Device pointer arithmetic happens here and nowhere else.
import { DTYPE_INFO, type DType, type HostArray } from '../core/dtype.ts';
import { DisposedError, OutOfMemoryError } from '../core/errors.ts';
import { readEnv } from '../core/config.ts';
import { allocHost, recycleHost } from './host-memory.ts';
import type { Device } from './device.ts';
import type { DevicePtr } from '../runtime/gpu.ts';
import type { Block } from '../runtime/allocator.ts';
import { heldNote, registerStorage, unregisterStorage, type NetOwner, type StorageRecord } from '../core/scope.ts';

export class Storage implements NetOwner {
  private refs = 0;
  /** moves on at every in-place write (autograd refuses a gradient whose saved inputs were written) */
  version = 0;
  private released = false;
  private readonly rec: StorageRecord;
  private readonly regId: number;

  private constructor(
    readonly device: Device,
    readonly dtype: DType,
    /** in elements */
    readonly length: number,
    private readonly hostData: HostArray | null,
    private readonly block: Block | null,
  ) {
    this.rec = { dtype, length, device: String(device), views: 0 };
    this.regId = registerStorage(this, this.rec);
  }

  /** new storage; host memory is zeroed, device memory is not (poisoned when ROCM_TENSOR_POISON=1) */
  static alloc(device: Device, dtype: DType, length: number): Storage {
    if (device.kind === 'cpu') return new Storage(device, dtype, length, allocHost(dtype, length), null);
    const bytes = length * DTYPE_INFO[dtype].size;
    const block = deviceBlock(device, bytes);
    const s = new Storage(device, dtype, length, null, block);
    if ((poison ?? poisonFromEnv()) && bytes > 0) device.runtime.memsetAsync(block.ptr, 0xff, bytes, device.stream);
    return s;
  }

  /** wraps (CPU) or uploads (GPU) a host array of this dtype's host type */
  static fromHost(device: Device, dtype: DType, data: HostArray): Storage {
    if (device.kind === 'cpu') return new Storage(device, dtype, data.length, data, null);
    const s = Storage.alloc(device, dtype, data.length);
    if (data.length > 0) device.upload(s.ptrAt(0), data);
    return s;
  }

  get isReleased(): boolean {
    return this.released;
  }
  freeFn(): (() => void) | null {
    return this.block ? freeLater(this.device, this.block) : null;
  }
  get byteLength(): number {
    return this.length * DTYPE_INFO[this.dtype].size;
  }

  /** the host array (CPU storages only) */
  get host(): HostArray {
    this.check();
    if (!this.hostData) throw new Error(`storage on ${this.device} has no host array`);
    return this.hostData;
  }

  /** device address of element `elem` (GPU storages only) */
  ptrAt(elem: number): DevicePtr {
    this.check();
    if (!this.block) throw new Error(`storage on ${this.device} has no device memory`);
    return (this.block.ptr + BigInt(elem * DTYPE_INFO[this.dtype].size)) as DevicePtr;
  }

  retain(): void {
    this.check();
    this.refs++;
    this.rec.views++;
  }
  release(): void {
    if (this.released) return;
    this.rec.views--;
    if (--this.refs > 0) return;
    this.released = true;
    unregisterStorage(this, this.regId);
    if (this.block) this.device.allocator.free(this.block, this.device.stream);
    else if (this.hostData) recycleHost(this.hostData);
  }
  private check(): void {
    if (this.released)
      throw new DisposedError(`storage on ${this.device} (${this.dtype}, ${this.length} elements) was already freed`);
  }
}

// Poison (ROCM_TENSOR_POISON=1): new device memory is filled with 0xff so that an op leaving
// outputs unwritten shows NaN or all-ones bits instead of lucky zeros. The variable is read at
// the first device allocation, not when this module loads, so code that turns poison on before
// its first tensor (the GPU test harness, through setPoison) need not run before this module is
// evaluated: the harness used to set the variable from a `data:` import placed first, which Bun
// never evaluates, and import order is no contract across runtimes.
let poison: boolean | null = null;
function poisonFromEnv(): boolean {
  return (poison = readEnv('ROCM_TENSOR_POISON') === true);
}

/** turns poison on or off for every later device allocation, whatever the environment says */
export function setPoison(on: boolean): void {
  poison = on;
}
/** whether new device memory is poisoned */
export function poisonEnabled(): boolean {
  return poison ?? poisonFromEnv();
}

/** the safety net's free: a closure over the device and block only, never the storage */
function freeLater(device: Device, block: Block): () => void {
  return () => device.allocator.free(block, device.runtime.defaultStream);
}

/** a device block; an out-of-memory error also says what tensors not yet disposed hold there */
function deviceBlock(device: Device, bytes: number): Block {
  try {
    return device.allocator.alloc(bytes, device.stream);
  } catch (e) {
    if (e instanceof OutOfMemoryError) e.message += heldNote(String(device));
    throw e;
  }
}
