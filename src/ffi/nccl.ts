// The collectives library through koffi: RCCL on ROCm (librccl.so.1) and NCCL on NVIDIA
// (libnccl.so.2) share one C API, so one table of prototypes serves both; only the soname and
// the stream type's spelling differ (hipStream_t / cudaStream_t, both opaque pointers). Loaded
// on first use only, with an error that says how to install it. The ABI suite checks the table
// against RCCL's real header and shared object (Debian's librccl-dev and librccl1).
import koffi from 'koffi';
import { GpuError } from '../core/errors.ts';
import { openLibrary, NCCL_LIB, RCCL_LIB, type LoadedLibrary } from './loader.ts';
import { declareTable, fmtArgs, registerAliases, type NativeAlias, type NativeTable } from './native.ts';
import { HIP_ALIASES } from './hip.ts';

/** bytes of ncclUniqueId, the token every rank of one communicator must share */
export const NCCL_UNIQUE_ID_BYTES = 128;

export const NCCL_ALIASES: readonly NativeAlias[] = [
  { name: 'ncclResult_t', c: 'ncclResult_t', cls: 'enum' },
  { name: 'ncclDataType_t', c: 'ncclDataType_t', cls: 'enum' },
  { name: 'ncclRedOp_t', c: 'ncclRedOp_t', cls: 'enum' },
  { name: 'ncclComm_t', c: 'ncclComm_t', cls: 'pointer', handle: true },
];

// passed by value to ncclCommInitRank: 128 bytes on the stack, so a struct, not a pointer
let uniqueIdRegistered = false;
export function registerUniqueId(): void {
  if (uniqueIdRegistered) return;
  koffi.struct('ncclUniqueId', { internal: koffi.array('uint8_t', NCCL_UNIQUE_ID_BYTES, 'Array') });
  uniqueIdRegistered = true;
}

export const NCCL_FUNCTIONS = {
  ncclGetVersion: { proto: 'ncclResult_t ncclGetVersion(_Out_ int *version)' },
  ncclGetUniqueId: { proto: 'ncclResult_t ncclGetUniqueId(_Out_ ncclUniqueId *uniqueId)' },
  ncclCommInitRank: {
    proto: 'ncclResult_t ncclCommInitRank(_Out_ ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank)',
  },
  ncclCommInitAll: { proto: 'ncclResult_t ncclCommInitAll(_Out_ ncclComm_t *comm, int ndev, const int *devlist)' },
  ncclCommDestroy: { proto: 'ncclResult_t ncclCommDestroy(ncclComm_t comm)' },
  ncclCommAbort: { proto: 'ncclResult_t ncclCommAbort(ncclComm_t comm)' },
  ncclGetErrorString: { proto: 'const char *ncclGetErrorString(ncclResult_t result)' },
  ncclCommGetAsyncError: {
    proto: 'ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, _Out_ ncclResult_t *asyncError)',
  },
  ncclCommCount: { proto: 'ncclResult_t ncclCommCount(const ncclComm_t comm, _Out_ int *count)' },
  ncclCommUserRank: { proto: 'ncclResult_t ncclCommUserRank(const ncclComm_t comm, _Out_ int *rank)' },
  ncclAllReduce: {
    proto:
      'ncclResult_t ncclAllReduce(cdevptr_t sendbuff, devptr_t recvbuff, size_t count, ncclDataType_t datatype, ' +
      'ncclRedOp_t op, ncclComm_t comm, hipStream_t stream)',
  },
  ncclAllGather: {
    proto:
      'ncclResult_t ncclAllGather(cdevptr_t sendbuff, devptr_t recvbuff, size_t sendcount, ncclDataType_t datatype, ' +
      'ncclComm_t comm, hipStream_t stream)',
  },
  ncclReduceScatter: {
    proto:
      'ncclResult_t ncclReduceScatter(cdevptr_t sendbuff, devptr_t recvbuff, size_t recvcount, ncclDataType_t datatype, ' +
      'ncclRedOp_t op, ncclComm_t comm, hipStream_t stream)',
  },
  ncclBroadcast: {
    proto:
      'ncclResult_t ncclBroadcast(cdevptr_t sendbuff, devptr_t recvbuff, size_t count, ncclDataType_t datatype, int root, ' +
      'ncclComm_t comm, hipStream_t stream)',
  },
  ncclReduce: {
    proto:
      'ncclResult_t ncclReduce(cdevptr_t sendbuff, devptr_t recvbuff, size_t count, ncclDataType_t datatype, ' +
      'ncclRedOp_t op, int root, ncclComm_t comm, hipStream_t stream)',
  },
  ncclSend: {
    proto:
      'ncclResult_t ncclSend(cdevptr_t sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm, hipStream_t stream)',
  },
  ncclRecv: {
    proto:
      'ncclResult_t ncclRecv(devptr_t recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm, hipStream_t stream)',
  },
  ncclGroupStart: { proto: 'ncclResult_t ncclGroupStart(void)' },
  ncclGroupEnd: { proto: 'ncclResult_t ncclGroupEnd(void)' },
} as const satisfies NativeTable;

export const NCCL_CONST = {
  ncclSuccess: 0,
  ncclInvalidArgument: 4,
  ncclInvalidUsage: 5,
  ncclInt8: 0,
  ncclUint8: 1,
  ncclInt32: 2,
  ncclUint32: 3,
  ncclInt64: 4,
  ncclUint64: 5,
  ncclFloat16: 6,
  ncclFloat32: 7,
  ncclFloat64: 8,
  ncclBfloat16: 9,
  ncclSum: 0,
  ncclProd: 1,
  ncclMax: 2,
  ncclMin: 3,
  ncclAvg: 4,
  NCCL_UNIQUE_ID_BYTES,
} as const;

type Ptr = bigint;
type Res = number;
/** ncclUniqueId as koffi passes it by value */
export interface NcclUniqueId {
  internal: number[];
}
export interface NcclFns {
  ncclGetVersion(out: [number]): Res;
  ncclGetUniqueId(out: [NcclUniqueId | null]): Res;
  ncclCommInitRank(out: [Ptr | null], nranks: number, id: NcclUniqueId, rank: number): Res;
  ncclCommInitAll(out: (Ptr | null)[], ndev: number, devs: Int32Array): Res;
  ncclCommDestroy(c: Ptr): Res;
  ncclCommAbort(c: Ptr): Res;
  ncclGetErrorString(r: number): string | null;
  ncclCommGetAsyncError(c: Ptr, out: [number]): Res;
  ncclCommCount(c: Ptr, out: [number]): Res;
  ncclCommUserRank(c: Ptr, out: [number]): Res;
  ncclAllReduce(s: Ptr, r: Ptr, n: number, t: number, op: number, c: Ptr, st: Ptr | null): Res;
  ncclAllGather(s: Ptr, r: Ptr, n: number, t: number, c: Ptr, st: Ptr | null): Res;
  ncclReduceScatter(s: Ptr, r: Ptr, n: number, t: number, op: number, c: Ptr, st: Ptr | null): Res;
  ncclBroadcast(s: Ptr, r: Ptr, n: number, t: number, root: number, c: Ptr, st: Ptr | null): Res;
  ncclReduce(s: Ptr, r: Ptr, n: number, t: number, op: number, root: number, c: Ptr, st: Ptr | null): Res;
  ncclSend(s: Ptr, n: number, t: number, peer: number, c: Ptr, st: Ptr | null): Res;
  ncclRecv(r: Ptr, n: number, t: number, peer: number, c: Ptr, st: Ptr | null): Res;
  ncclGroupStart(): Res;
  ncclGroupEnd(): Res;
}
const _sameKeys: [keyof typeof NCCL_FUNCTIONS, keyof NcclFns] extends [keyof NcclFns, keyof typeof NCCL_FUNCTIONS]
  ? true
  : never = true;
void _sameKeys;

export interface Nccl {
  readonly loaded: LoadedLibrary;
  readonly fn: NcclFns;
  /** NCCL_VERSION_CODE: major * 10000 + minor * 100 + patch (2.x and later) */
  readonly version: number;
  check(result: number, call: string, args: readonly unknown[]): void;
}

/** registers the aliases and the by-value id struct the prototypes name (the ABI suite too) */
export function registerNcclTypes(): void {
  registerAliases(HIP_ALIASES);
  registerAliases(NCCL_ALIASES);
  registerUniqueId();
}

const loadedBy = new Map<'rocm' | 'cuda', Nccl>();

/** the collectives library of a vendor: RCCL for 'rocm', NCCL for 'cuda' */
export function loadNccl(vendor: 'rocm' | 'cuda'): Nccl {
  const have = loadedBy.get(vendor);
  if (have) return have;
  const loaded = openLibrary(vendor === 'rocm' ? RCCL_LIB : NCCL_LIB);
  registerNcclTypes();
  const fn = Object.fromEntries(declareTable(loaded.lib, NCCL_FUNCTIONS, loaded.path)) as unknown as NcclFns;
  const check = (result: number, call: string, args: readonly unknown[]): void => {
    if (result === NCCL_CONST.ncclSuccess) return;
    const text = fn.ncclGetErrorString(result) ?? `ncclResult_t ${result}`;
    throw new GpuError(`${call}(${fmtArgs(args)}) failed: ${text} (${result})`, result, call);
  };
  const v: [number] = [0];
  check(fn.ncclGetVersion(v), 'ncclGetVersion', []);
  const nccl: Nccl = { loaded, fn, version: v[0], check };
  loadedBy.set(vendor, nccl);
  return nccl;
}
