// Errors found by kernels while they run. Ids (indexSelect, gather, scatter, ...) are checked on
// the GPU, not on the host, because reading them first would be a hidden sync. A kernel that
// meets an id outside its range skips it and records the first such id in a small record in
// device memory (layout in hip-src/indexing.hip, record_bad_id); the next readback or
// synchronize calls throwPendingDeviceError, which reads the record and throws an IndexError.
//
// Each launch that may record passes a tag: an op code and a sequence number naming a
// description kept here (the ids' shape and dtype, what they index), so the error reads like
// the CPU reference's. Reading is cheap when nothing is pending: an event per stream says
// whether a recording kernel was queued since the last look, and the record is only read
// (on a private stream, so unrelated queued work is not waited for) once one has finished.
import type { DType } from '../core/dtype.ts';
import { IndexError, fmtShape } from '../core/errors.ts';
import type { Device } from '../device/device.ts';
import type { DevicePtr, GpuEvent, GpuRuntime, GpuStream, PinnedBuffer } from './gpu.ts';

/** u32 tag, u32 done, u64 id bits, u64 position, u64 limit */
export const ERROR_RECORD_BYTES = 32;

/** the ops whose kernels record bad ids; the code is the index + 1 (the tag's low 4 bits) */
export const ERROR_OPS = [
  'indexSelect',
  'gather',
  'scatter',
  'scatterAdd',
  'indexAdd',
  'embedding',
  'indexSet',
  'pagedAttention',
  'indexSetDistinct',
] as const;
export type ErrorOp = (typeof ERROR_OPS)[number];

/** what a launch's ids index, to name it in the error */
export interface ErrorSite {
  readonly op: ErrorOp;
  readonly idsShape: readonly number[];
  readonly idsDType: DType;
  /** e.g. 'dim 1 of x [4, 5] f32' */
  readonly what: string;
}

/** descriptions kept for the most recent launches; older tags still name op, id and range */
const SITES_KEPT = 4096;
const SEQ_LIMIT = 2 ** 28;

interface State {
  readonly rt: GpuRuntime;
  readonly ptr: DevicePtr;
  /** private stream for reading and clearing the record */
  readonly stream: GpuStream;
  readonly host: PinnedBuffer;
  /** one reusable event per stream that recording kernels were queued on */
  readonly events: Map<GpuStream, GpuEvent>;
  /** streams with a recording kernel queued since the record was last read */
  readonly armed: Set<GpuStream>;
  readonly sites: Map<number, ErrorSite>;
  seq: number;
}

const states = new WeakMap<Device, State>();

function stateOf(device: Device): State {
  let st = states.get(device);
  if (st) return st;
  const rt = device.runtime;
  const ptr = rt.malloc(ERROR_RECORD_BYTES);
  const stream = rt.streamCreate();
  const host = rt.hostAlloc(ERROR_RECORD_BYTES);
  rt.memsetAsync(ptr, 0, ERROR_RECORD_BYTES, stream);
  // once per device: kernels queued after this on any stream see a clear record
  rt.streamSynchronize(stream);
  st = { rt, ptr, stream, host, events: new Map(), armed: new Set(), sites: new Map(), seq: 0 };
  states.set(device, st);
  return st;
}

/** the device's error record, for kernels that take an `err` pointer (allocated on first use) */
export function deviceErrorPtr(device: Device): DevicePtr {
  return stateOf(device).ptr;
}

/** a tag naming `site` for the kernels of one launch (a u32, never 0) */
export function deviceErrorTag(device: Device, site: ErrorSite): number {
  const st = stateOf(device);
  st.seq = st.seq + 1 >= SEQ_LIMIT ? 1 : st.seq + 1;
  st.sites.set(st.seq, site);
  if (st.sites.size > SITES_KEPT) st.sites.delete(st.sites.keys().next().value!);
  return ((st.seq << 4) | (ERROR_OPS.indexOf(site.op) + 1)) >>> 0;
}

/** call after queuing kernels that may record, on the stream they were queued on */
export function deviceErrorsQueued(device: Device, stream: GpuStream = device.stream): void {
  const st = stateOf(device);
  let ev = st.events.get(stream);
  if (!ev) {
    ev = st.rt.eventCreate(false);
    st.events.set(stream, ev);
  }
  st.rt.eventRecord(ev, stream);
  st.armed.add(stream);
}

/**
 * Runs `launch` with the error record and a tag for `site`, then notes that kernels that may
 * record were queued on the device's current stream. The glue's one entry point.
 */
export function withDeviceErrors(device: Device, site: ErrorSite, launch: (err: DevicePtr, tag: number) => void): void {
  const ptr = deviceErrorPtr(device),
    tag = deviceErrorTag(device, site);
  // during a capture the event is recorded after each replay instead (an event recorded into a
  // capture is not a real record a readback could query)
  try {
    launch(ptr, tag);
  } finally {
    if (device.isCapturing) device.noteCapturedIdChecks();
    else deviceErrorsQueued(device);
  }
}

function position(shape: readonly number[], p: bigint): string {
  if (shape.length === 0) return '[]';
  const idx: bigint[] = [];
  for (let i = shape.length - 1; i >= 0; i--) {
    const n = BigInt(Math.max(1, shape[i]!));
    idx.unshift(p % n);
    p /= n;
  }
  return `[${idx.join(', ')}]`;
}

/**
 * Throws an IndexError for the first bad id a finished kernel recorded on `device` since the
 * last call, and clears the record; returns at once on the CPU and when no recording kernel was
 * queued. Kernels still running are looked at by a later call.
 */
export function throwPendingDeviceError(device: Device): void {
  const st = states.get(device);
  if (!st || st.armed.size === 0) return;
  const finished = [...st.armed].filter((s) => st.rt.eventQuery(st.events.get(s)!));
  if (finished.length === 0) return;
  const { rt } = st;
  rt.copyDtoHAsync(st.host, 0, st.ptr, ERROR_RECORD_BYTES, st.stream);
  rt.streamSynchronize(st.stream);
  for (const s of finished) st.armed.delete(s);
  const b = st.host.bytes;
  const dv = new DataView(b.buffer, b.byteOffset, ERROR_RECORD_BYTES);
  const tag = dv.getUint32(0, true);
  // a record whose fields are still being written belongs to a kernel not yet finished
  if (tag === 0 || dv.getUint32(4, true) !== 1) return;
  const idBits = dv.getBigUint64(8, true),
    pos = dv.getBigUint64(16, true),
    limit = dv.getBigUint64(24, true);
  rt.memsetAsync(st.ptr, 0, ERROR_RECORD_BYTES, st.stream);
  rt.streamSynchronize(st.stream);
  throw new IndexError(describe(device, st.sites.get(tag >>> 4), tag & 15, idBits, pos, limit));
}

function describe(
  device: Device,
  site: ErrorSite | undefined,
  code: number,
  idBits: bigint,
  pos: bigint,
  limit: bigint,
): string {
  const later = `(found on ${device} by a kernel queued earlier, reported at this readback or sync; that op's output is incomplete)`;
  if (!site) {
    const op = ERROR_OPS[code - 1] ?? `an indexing op (code ${code})`;
    return `${op}: id ${BigInt.asIntN(64, idBits)} at flat position ${pos} of its ids is out of range [0, ${limit}) ${later}`;
  }
  const id = site.idsDType === 'i64' ? BigInt.asIntN(64, idBits) : idBits;
  return `${site.op}: id ${id} at position ${position(site.idsShape, pos)} of ids ${fmtShape(site.idsShape)} ${site.idsDType} is out of range [0, ${limit}) for ${site.what} ${later}`;
}
