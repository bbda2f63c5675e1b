// A GPU-like Device for storage-level tests without a GPU: a real caching allocator over a fake
// runtime that hands out addresses from a bump pointer and records memsets. Enough for
// Storage.alloc / release and the safety net; no op runs on it.
import type { Device } from '../src/device/device.ts';
import { CachingAllocator } from '../src/runtime/allocator.ts';
import { asDevicePtr, type DevicePtr, type GpuRuntime, type GpuStream } from '../src/runtime/gpu.ts';

export interface Memset {
  ptr: DevicePtr;
  value: number;
  bytes: number;
  stream: GpuStream;
}

export function fakeGpu(): { dev: Device; memsets: Memset[] } {
  let next = 0x10000n;
  const memsets: Memset[] = [];
  const stream = { fake: 'stream' } as unknown as GpuStream;
  const rt = {
    vendor: 'cuda',
    index: 0,
    defaultStream: stream,
    malloc(bytes: number): DevicePtr {
      const p = next;
      next += BigInt(bytes);
      return asDevicePtr(p);
    },
    free(): void {},
    synchronize(): void {},
    memGetInfo: () => ({ free: 1 << 30, total: 1 << 30 }),
    memsetAsync(ptr: DevicePtr, value: number, bytes: number, s: GpuStream): void {
      memsets.push({ ptr, value, bytes, stream: s });
    },
  } as unknown as GpuRuntime;
  const allocator = new CachingAllocator(rt, null);
  const dev = { kind: 'cuda', index: 0, stream, runtime: rt, allocator, toString: () => 'fake:0' } as unknown as Device;
  return { dev, memsets };
}
