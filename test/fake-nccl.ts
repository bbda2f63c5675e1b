// A collectives library and GPUs that exist only in this process, for the CPU tests of the
// communicator layer: the fake NCCL records every call with its arguments and hands out handles;
// the fake devices allocate from a bump pointer (through the real caching allocator), give each
// stream a native pointer, and have events whose completion the test decides. Nothing runs.
import type { Device } from '../src/device/device.ts';
import { CachingAllocator } from '../src/runtime/allocator.ts';
import { asDevicePtr, type DevicePtr, type GpuEvent, type GpuRuntime, type GpuStream } from '../src/runtime/gpu.ts';
import { GpuError } from '../src/core/errors.ts';
import type { Nccl, NcclFns, NcclUniqueId } from '../src/ffi/nccl.ts';
import type { LoadedLibrary } from '../src/ffi/loader.ts';

export interface Call {
  readonly fn: string;
  readonly args: readonly unknown[];
}

export interface FakeNccl {
  readonly nccl: Nccl;
  readonly calls: Call[];
  /** what ncclCommGetAsyncError reports */
  asyncError: number;
  /** result code of the next collective call (then back to 0) */
  failNext: number;
  /** the calls of one function */
  of(fn: keyof NcclFns): Call[];
}

export function fakeNccl(version = 22803, idByte = 7): FakeNccl {
  const calls: Call[] = [];
  let nextComm = 0xc000n;
  const state = { asyncError: 0, failNext: 0 };
  const rec = (fn: string, args: unknown[]): number => {
    calls.push({ fn, args });
    const r = state.failNext;
    state.failNext = 0;
    return r;
  };
  const fn: NcclFns = {
    ncclGetVersion: (out) => {
      out[0] = version;
      return 0;
    },
    ncclGetUniqueId: (out) => {
      out[0] = { internal: Array.from({ length: 128 }, (_, i) => (i + idByte) & 255) };
      calls.push({ fn: 'ncclGetUniqueId', args: [] });
      return 0;
    },
    ncclCommInitRank: (out, n, id: NcclUniqueId, rank) => {
      out[0] = nextComm++;
      calls.push({ fn: 'ncclCommInitRank', args: [n, id.internal, rank] });
      return 0;
    },
    ncclCommInitAll: (out, n, devs) => {
      for (let i = 0; i < n; i++) out[i] = nextComm++;
      calls.push({ fn: 'ncclCommInitAll', args: [n, Array.from(devs)] });
      return 0;
    },
    ncclCommDestroy: (c) => rec('ncclCommDestroy', [c]),
    ncclCommAbort: (c) => {
      calls.push({ fn: 'ncclCommAbort', args: [c] });
      return 0;
    },
    ncclGetErrorString: (r) => `fake error ${r}`,
    ncclCommGetAsyncError: (_c, out) => {
      out[0] = state.asyncError;
      return 0;
    },
    ncclCommCount: (_c, out) => {
      out[0] = 1;
      return 0;
    },
    ncclCommUserRank: (_c, out) => {
      out[0] = 0;
      return 0;
    },
    ncclAllReduce: (...a) => rec('ncclAllReduce', a),
    ncclAllGather: (...a) => rec('ncclAllGather', a),
    ncclReduceScatter: (...a) => rec('ncclReduceScatter', a),
    ncclBroadcast: (...a) => rec('ncclBroadcast', a),
    ncclReduce: (...a) => rec('ncclReduce', a),
    ncclSend: (...a) => rec('ncclSend', a),
    ncclRecv: (...a) => rec('ncclRecv', a),
    ncclGroupStart: () => rec('ncclGroupStart', []),
    ncclGroupEnd: () => rec('ncclGroupEnd', []),
  };
  const nccl: Nccl = {
    loaded: { path: 'fake-nccl' } as unknown as LoadedLibrary,
    fn,
    version,
    check(result, call, args) {
      if (result !== 0)
        throw new GpuError(`${call}(${args.length} args) failed: fake error ${result} (${result})`, result, call);
    },
  };
  return {
    nccl,
    calls,
    get asyncError() {
      return state.asyncError;
    },
    set asyncError(v: number) {
      state.asyncError = v;
    },
    get failNext() {
      return state.failNext;
    },
    set failNext(v: number) {
      state.failNext = v;
    },
    of: (name) => calls.filter((c) => c.fn === name),
  };
}

export interface FakeGpus {
  readonly devices: Device[];
  /** whether recorded events report done */
  eventsDone: boolean;
  /** how many times a device was made current for a foreign call */
  readonly foreignCalls: number[];
}

/** the native stream pointer fake device i reports */
export const fakeStreamPtr = (i: number): bigint => 0x5000n + BigInt(i);

export function fakeGpus(n: number): FakeGpus {
  const state = { eventsDone: true };
  const foreignCalls = Array.from({ length: n }, () => 0);
  let next = 0x100000n;
  const devices = Array.from({ length: n }, (_, i) => {
    const stream = { fake: `stream ${i}` } as unknown as GpuStream;
    const rt = {
      vendor: 'cuda',
      index: i,
      defaultStream: stream,
      malloc(bytes: number): DevicePtr {
        const p = next;
        next += BigInt(bytes + 256);
        return asDevicePtr(p);
      },
      free(): void {},
      synchronize(): void {},
      memGetInfo: () => ({ free: 1 << 30, total: 1 << 30 }),
      memsetAsync(): void {},
      nativeStream: (s: GpuStream): bigint => {
        if (s !== stream) throw new Error('fake: foreign stream');
        return fakeStreamPtr(i);
      },
      callForeign<T>(fn: () => T): T {
        foreignCalls[i]!++;
        return fn();
      },
      eventCreate: (): GpuEvent => ({ fake: 'event' }) as unknown as GpuEvent,
      eventRecord(): void {},
      eventQuery: (): boolean => state.eventsDone,
      eventDestroy(): void {},
    } as unknown as GpuRuntime;
    const allocator = new CachingAllocator(rt, null);
    return {
      kind: 'cuda',
      index: i,
      stream,
      runtime: rt,
      allocator,
      isCpu: false,
      toString: () => `cuda:${i}`,
    } as unknown as Device;
  });
  return {
    devices,
    foreignCalls,
    get eventsDone() {
      return state.eventsDone;
    },
    set eventsDone(v: boolean) {
      state.eventsDone = v;
    },
  };
}
