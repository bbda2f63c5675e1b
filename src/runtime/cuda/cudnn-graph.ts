// Convolutions through cuDNN's graph API (cudnn_graph.h). Per shape, once: an operation graph of
// one convolution node, the heuristics' engine configurations tried in their order until one
// finalizes into an execution plan, kept with its workspace size. Per call: a variant pack (the
// three data pointers and the workspace) and cudnnBackendExecute. The legacy entry points
// (cudnnConvolutionForward and its two backward twins) cost about 117 µs of host time a call in
// cuDNN 9 on an H200's host, most of a small network's eager step; executing a kept plan is how
// PyTorch reaches cuDNN.
//
// The three tensors keep the legacy path's roles: `a` [n, cIn, inH, inW] at p.x, `b`
// [n, cOut, outH, outW] at p.y and the filter at p.w ([cOut, cIn/g, kH, kW]; for the data
// gradient, which maps b-shaped tensors to a-shaped ones, [cIn, cOut/g, kH, kW]):
//   fwd        X = a, W = filter, Y = b
//   bwdData    DY = a, W = filter, DX = b
//   bwdFilter  X = a, DY = b, DW = filter
// Groups follow from the channel counts of the filter and the tensors, as cuDNN's graph API reads them.
import { GpuError, NotOnDeviceError } from '../../core/errors.ts';
import { CUDNN_CONST as K, type Cudnn } from '../../ffi/cudnn.ts';
import type { ConvParams, DevicePtr, DnnDType } from '../gpu.ts';

export type ConvKind = 'fwd' | 'bwdData' | 'bwdFilter';

/** the filter's first two dims: fwd and bwdFilter [cOut, cIn/g] (x [n, cIn, ...], y or dy
 *  [n, cOut, ...]); bwdData, whose dy is the a-side tensor, [cIn, cOut/g] */
export function convFilterDims(kind: ConvKind, p: ConvParams): [number, number] {
  return kind === 'bwdData' ? [p.cIn, p.cOut / p.groups] : [p.cOut, p.cIn / p.groups];
}

/** what a failing call was doing: the text, or a function that makes it */
type Why = string | (() => string);

/** an execution plan and every descriptor it rests on (destroyed together) */
export interface GraphConvPlan {
  readonly plan: bigint;
  readonly workspace: number;
  readonly owned: readonly bigint[];
}

/** the operation descriptor type and its attribute names, per kind */
const OPS: Record<
  ConvKind,
  { readonly type: number; alpha: number; beta: number; conv: number; a: number; w: number; b: number }
> = {
  fwd: {
    type: K.CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
    alpha: K.CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
    beta: K.CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA,
    conv: K.CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
    a: K.CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
    w: K.CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
    b: K.CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
  },
  bwdData: {
    type: K.CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
    alpha: K.CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
    beta: K.CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA,
    conv: K.CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
    a: K.CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
    w: K.CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
    b: K.CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
  },
  bwdFilter: {
    type: K.CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
    alpha: K.CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
    beta: K.CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA,
    conv: K.CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
    a: K.CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
    w: K.CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
    b: K.CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
  },
};

const DATA_TYPE: Record<DnnDType, number> = {
  f32: K.CUDNN_DATA_FLOAT,
  f64: K.CUDNN_DATA_DOUBLE,
  f16: K.CUDNN_DATA_HALF,
  bf16: K.CUDNN_DATA_BFLOAT16,
};
const UID_A = 1n;
const UID_W = 2n;
const UID_B = 3n;
/** engine configurations read from the heuristics at most */
const MAX_CONFIGS = 32;

/** the largest power of two up to 16 that divides a device address (part of a plan's key) */
export function alignmentOf(ptr: DevicePtr): number {
  const low = Number(BigInt.asUintN(5, ptr));
  for (const a of [16, 8, 4, 2]) if (low % a === 0) return a;
  return 1;
}

/**
 * Engines a dtype may run on: f32 keeps its full precision (no TF32 tensor-core engines, as the
 * legacy path keeps FMA math), f64 takes no engine that converts its inputs down; f16 and bf16
 * take any.
 */
function notesAllowed(dtype: DnnDType, notes: readonly number[]): boolean {
  if (dtype === 'f16' || dtype === 'bf16') return true;
  const lossy: number[] = [
    K.CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS,
    K.CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION,
  ];
  if (dtype === 'f32') lossy.push(K.CUDNN_NUMERICAL_NOTE_TENSOR_CORE);
  return !notes.some((n) => lossy.includes(n));
}

export class CudnnGraphConvs {
  private readonly plans = new Map<string, GraphConvPlan>();
  private readonly out = new BigUint64Array(1);
  private readonly count = new BigInt64Array(1);
  private readonly one32 = new Float32Array([1]);
  private readonly zero32 = new Float32Array([0]);
  private readonly one64 = new Float64Array([1]);
  private readonly zero64 = new Float64Array([0]);
  private readonly uids = BigInt64Array.of(UID_A, UID_W, UID_B);
  private readonly ptrs = new BigUint64Array(3);
  private readonly wsPtr = new BigUint64Array(1);

  constructor(
    private readonly lib: Cudnn,
    private readonly handle: bigint,
    private readonly label: string,
    private readonly version: string,
    /** plans kept, the oldest made destroyed first */
    private readonly capacity = 64,
  ) {}

  /** the shape's plan (made on its first call and kept); `shape` names the kind and shape, `what`
   *  the call for errors (formatted only when a plan is made or a call fails) */
  plan(kind: ConvKind, p: ConvParams, shape: string, what: () => string): GraphConvPlan {
    const full = `${shape} ${alignmentOf(p.x)},${alignmentOf(p.w)},${alignmentOf(p.y)}`;
    const hit = this.plans.get(full);
    if (hit) return hit;
    const made = this.make(kind, p, what());
    if (this.plans.size >= this.capacity) {
      const [oldKey, old] = this.plans.entries().next().value!;
      this.plans.delete(oldKey);
      this.destroyAll(old.owned);
    }
    this.plans.set(full, made);
    return made;
  }

  /** runs a plan on p's pointers with a workspace of at least plan.workspace bytes */
  execute(pl: GraphConvPlan, p: ConvParams, ws: DevicePtr | null, what: () => string): void {
    const f = this.lib.fn;
    const vp = this.create(K.CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, what);
    try {
      this.ptrs[0] = p.x;
      this.ptrs[1] = p.w;
      this.ptrs[2] = p.y;
      this.wsPtr[0] = ws ?? 0n;
      this.set(vp, K.CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, K.CUDNN_TYPE_INT64, 3, this.uids, what);
      this.set(vp, K.CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, K.CUDNN_TYPE_VOID_PTR, 3, this.ptrs, what);
      this.set(vp, K.CUDNN_ATTR_VARIANT_PACK_WORKSPACE, K.CUDNN_TYPE_VOID_PTR, 1, this.wsPtr, what);
      this.check(f.cudnnBackendFinalize(vp), 'cudnnBackendFinalize(variant pack)', what);
      this.check(f.cudnnBackendExecute(this.handle, pl.plan, vp), 'cudnnBackendExecute', what);
    } finally {
      f.cudnnBackendDestroyDescriptor(vp);
    }
  }

  destroy(): void {
    for (const pl of this.plans.values()) this.destroyAll(pl.owned);
    this.plans.clear();
  }

  // ---- making a plan ------------------------------------------------------------------------
  private make(kind: ConvKind, p: ConvParams, what: string): GraphConvPlan {
    const owned: bigint[] = [];
    const keep = (d: bigint): bigint => {
      owned.push(d);
      return d;
    };
    try {
      const t = DATA_TYPE[p.dtype];
      const [fk, fc] = convFilterDims(kind, p);
      const a = keep(this.tensor(t, [p.n, p.cIn, p.inH, p.inW], UID_A, alignmentOf(p.x), what));
      const w = keep(this.tensor(t, [fk, fc, p.kH, p.kW], UID_W, alignmentOf(p.w), what));
      const b = keep(this.tensor(t, [p.n, p.cOut, p.outH, p.outW], UID_B, alignmentOf(p.y), what));
      const conv = keep(this.convolution(p, what));
      const o = OPS[kind];
      const op = keep(this.create(o.type, what));
      const wide = p.dtype === 'f64';
      const scaleType = wide ? K.CUDNN_TYPE_DOUBLE : K.CUDNN_TYPE_FLOAT;
      this.setDescs(op, o.conv, [conv], what);
      this.setDescs(op, o.a, [a], what);
      this.setDescs(op, o.w, [w], what);
      this.setDescs(op, o.b, [b], what);
      this.set(op, o.alpha, scaleType, 1, wide ? this.one64 : this.one32, what);
      this.set(op, o.beta, scaleType, 1, wide ? this.zero64 : this.zero32, what);
      this.finalize(op, 'operation', what);
      const graph = keep(this.create(K.CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, what));
      this.set(graph, K.CUDNN_ATTR_OPERATIONGRAPH_HANDLE, K.CUDNN_TYPE_HANDLE, 1, BigUint64Array.of(this.handle), what);
      this.setDescs(graph, K.CUDNN_ATTR_OPERATIONGRAPH_OPS, [op], what);
      this.finalize(graph, 'operation graph', what);
      // heuristics mode A's configurations, then the fallback list's where none of those finalizes
      const first = this.configs(graph, K.CUDNN_HEUR_MODE_A, keep, what);
      try {
        return this.firstPlan(p.dtype, first, owned, keep, what);
      } catch (e) {
        if (!(e instanceof NotOnDeviceError)) throw e;
        const fallback = this.configs(graph, K.CUDNN_HEUR_MODE_FALLBACK, keep, what);
        return this.firstPlan(p.dtype, fallback, owned, keep, what);
      }
    } catch (e) {
      this.destroyAll(owned);
      throw e;
    }
  }

  /** the heuristics' engine configurations for a graph in one mode, best first */
  private configs(graph: bigint, mode: number, keep: (d: bigint) => bigint, what: string): bigint[] {
    const f = this.lib.fn;
    const heur = keep(this.create(K.CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, what));
    this.setDescs(heur, K.CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, [graph], what);
    this.set(heur, K.CUDNN_ATTR_ENGINEHEUR_MODE, K.CUDNN_TYPE_HEUR_MODE, 1, Int32Array.of(mode), what);
    this.finalize(heur, 'engine heuristics', what);
    // how many configurations there are (out null), or up to n of them into out
    const results = (n: number, out: BigUint64Array | null): number => {
      this.count[0] = 0n;
      this.check(
        f.cudnnBackendGetAttribute(
          heur,
          K.CUDNN_ATTR_ENGINEHEUR_RESULTS,
          K.CUDNN_TYPE_BACKEND_DESCRIPTOR,
          n,
          this.count,
          out,
        ),
        'cudnnBackendGetAttribute(engine heuristics results)',
        what,
      );
      return Number(this.count[0]);
    };
    const n = Math.min(results(0, null), MAX_CONFIGS);
    const cfgs = new BigUint64Array(n);
    for (let i = 0; i < n; i++) cfgs[i] = keep(this.create(K.CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, what));
    if (n === 0) return [];
    const got = results(n, cfgs);
    return [...cfgs.subarray(0, Math.min(n, got))];
  }

  /** the first configuration the dtype allows that finalizes into a plan; engines that compile
   *  kernels at run time only when none of the others does */
  private firstPlan(
    dtype: DnnDType,
    configs: readonly bigint[],
    owned: bigint[],
    keep: (d: bigint) => bigint,
    what: string,
  ): GraphConvPlan {
    const f = this.lib.fn;
    const tried: string[] = [];
    const notes = configs.map((c) => this.engineNotes(c, keep));
    for (const compiled of [false, true]) {
      for (let i = 0; i < configs.length; i++) {
        const nt = notes[i]!;
        if (nt.runtimeCompiled !== compiled) continue;
        if (!notesAllowed(dtype, nt.numerical)) {
          if (!compiled) tried.push(`config ${i}: numerical notes ${nt.numerical.join(',')}`);
          continue;
        }
        const plan = this.create(K.CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, what);
        let st: number;
        try {
          const h = BigUint64Array.of(this.handle);
          this.set(plan, K.CUDNN_ATTR_EXECUTION_PLAN_HANDLE, K.CUDNN_TYPE_HANDLE, 1, h, what);
          this.setDescs(plan, K.CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, [configs[i]!], what);
          st = f.cudnnBackendFinalize(plan);
        } catch (e) {
          f.cudnnBackendDestroyDescriptor(plan);
          throw e;
        }
        if (st !== K.CUDNN_STATUS_SUCCESS) {
          tried.push(`config ${i}: ${this.lib.statusText(st)}`);
          f.cudnnBackendDestroyDescriptor(plan);
          continue;
        }
        keep(plan);
        const ws = new BigInt64Array(1);
        this.count[0] = 0n;
        this.check(
          f.cudnnBackendGetAttribute(
            plan,
            K.CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
            K.CUDNN_TYPE_INT64,
            1,
            this.count,
            ws,
          ),
          'cudnnBackendGetAttribute(plan workspace size)',
          what,
        );
        return { plan, workspace: Number(ws[0]), owned };
      }
    }
    throw new NotOnDeviceError(
      `${what}: cuDNN ${this.version}'s graph API on ${this.label} offers no engine for it ` +
        `(${configs.length} configurations; ${tried.join('; ') || 'none returned'})`,
    );
  }

  /** an engine configuration's numerical notes, and whether its engine compiles kernels at run time */
  private engineNotes(cfg: bigint, keep: (d: bigint) => bigint): { numerical: number[]; runtimeCompiled: boolean } {
    const f = this.lib.fn;
    const engine = keep(this.create(K.CUDNN_BACKEND_ENGINE_DESCRIPTOR, 'engine'));
    this.count[0] = 0n;
    const got = f.cudnnBackendGetAttribute(
      cfg,
      K.CUDNN_ATTR_ENGINECFG_ENGINE,
      K.CUDNN_TYPE_BACKEND_DESCRIPTOR,
      1,
      this.count,
      BigUint64Array.of(engine),
    );
    // an engine whose notes cannot be read is taken as one with none
    if (got !== K.CUDNN_STATUS_SUCCESS) return { numerical: [], runtimeCompiled: false };
    const read = (name: number, type: number, max: number): number[] => {
      const v = new Int32Array(max);
      this.count[0] = 0n;
      if (f.cudnnBackendGetAttribute(engine, name, type, max, this.count, v) !== K.CUDNN_STATUS_SUCCESS) return [];
      return [...v.subarray(0, Math.min(max, Number(this.count[0])))];
    };
    const numerical = read(
      K.CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
      K.CUDNN_TYPE_NUMERICAL_NOTE,
      K.CUDNN_NUMERICAL_NOTE_TYPE_COUNT,
    );
    const behavior = read(
      K.CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE,
      K.CUDNN_TYPE_BEHAVIOR_NOTE,
      K.CUDNN_BEHAVIOR_NOTE_TYPE_COUNT,
    );
    return { numerical, runtimeCompiled: behavior.includes(K.CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION) };
  }

  /** a finalized NCHW tensor descriptor, packed strides */
  private tensor(type: number, dims: readonly number[], uid: bigint, align: number, what: string): bigint {
    const d = this.create(K.CUDNN_BACKEND_TENSOR_DESCRIPTOR, what);
    try {
      const strides = [dims[1]! * dims[2]! * dims[3]!, dims[2]! * dims[3]!, dims[3]!, 1];
      this.set(d, K.CUDNN_ATTR_TENSOR_DATA_TYPE, K.CUDNN_TYPE_DATA_TYPE, 1, Int32Array.of(type), what);
      this.set(d, K.CUDNN_ATTR_TENSOR_DIMENSIONS, K.CUDNN_TYPE_INT64, 4, BigInt64Array.from(dims, BigInt), what);
      this.set(d, K.CUDNN_ATTR_TENSOR_STRIDES, K.CUDNN_TYPE_INT64, 4, BigInt64Array.from(strides, BigInt), what);
      this.set(d, K.CUDNN_ATTR_TENSOR_UNIQUE_ID, K.CUDNN_TYPE_INT64, 1, BigInt64Array.of(uid), what);
      this.set(d, K.CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, K.CUDNN_TYPE_INT64, 1, BigInt64Array.of(BigInt(align)), what);
      this.finalize(d, `tensor [${dims.join(', ')}]`, what);
      return d;
    } catch (e) {
      this.lib.fn.cudnnBackendDestroyDescriptor(d);
      throw e;
    }
  }

  /** a finalized 2-d cross-correlation: sums in f32 for half types, f64 for f64 (as the legacy path) */
  private convolution(p: ConvParams, what: string): bigint {
    const d = this.create(K.CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, what);
    try {
      const comp = p.dtype === 'f64' ? K.CUDNN_DATA_DOUBLE : K.CUDNN_DATA_FLOAT;
      const pair = (x: number, y: number): BigInt64Array => BigInt64Array.of(BigInt(x), BigInt(y));
      this.set(d, K.CUDNN_ATTR_CONVOLUTION_COMP_TYPE, K.CUDNN_TYPE_DATA_TYPE, 1, Int32Array.of(comp), what);
      this.set(
        d,
        K.CUDNN_ATTR_CONVOLUTION_CONV_MODE,
        K.CUDNN_TYPE_CONVOLUTION_MODE,
        1,
        Int32Array.of(K.CUDNN_CROSS_CORRELATION),
        what,
      );
      this.set(d, K.CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, K.CUDNN_TYPE_INT64, 1, BigInt64Array.of(2n), what);
      this.set(d, K.CUDNN_ATTR_CONVOLUTION_DILATIONS, K.CUDNN_TYPE_INT64, 2, pair(p.dilationH, p.dilationW), what);
      this.set(d, K.CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, K.CUDNN_TYPE_INT64, 2, pair(p.strideH, p.strideW), what);
      this.set(d, K.CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, K.CUDNN_TYPE_INT64, 2, pair(p.padH, p.padW), what);
      this.set(d, K.CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, K.CUDNN_TYPE_INT64, 2, pair(p.padH, p.padW), what);
      this.finalize(d, 'convolution', what);
      return d;
    } catch (e) {
      this.lib.fn.cudnnBackendDestroyDescriptor(d);
      throw e;
    }
  }

  // ---- plumbing -----------------------------------------------------------------------------
  private create(type: number, what: Why): bigint {
    this.out[0] = 0n;
    this.check(this.lib.fn.cudnnBackendCreateDescriptor(type, this.out), `cudnnBackendCreateDescriptor(${type})`, what);
    return this.out[0]!;
  }
  private set(d: bigint, name: number, type: number, n: number, values: ArrayBufferView, what: Why): void {
    this.check(
      this.lib.fn.cudnnBackendSetAttribute(d, name, type, n, values),
      `cudnnBackendSetAttribute(${name})`,
      what,
    );
  }
  private setDescs(d: bigint, name: number, descs: readonly bigint[], what: Why): void {
    this.set(d, name, K.CUDNN_TYPE_BACKEND_DESCRIPTOR, descs.length, BigUint64Array.from(descs), what);
  }
  private finalize(d: bigint, which: string, what: Why): void {
    this.check(this.lib.fn.cudnnBackendFinalize(d), `cudnnBackendFinalize(${which})`, what);
  }
  private check(status: number, call: string, what: Why): void {
    if (status === K.CUDNN_STATUS_SUCCESS) return;
    const msg = `${call} for ${typeof what === 'string' ? what : what()} on ${this.label} failed: ${this.lib.statusText(status)}`;
    if (status >= 3000 && status < 4000)
      throw new NotOnDeviceError(`${msg} (cuDNN ${this.version} does not support this configuration)`);
    throw new GpuError(msg, status, call);
  }
  private destroyAll(ds: readonly bigint[]): void {
    // the plan first, the tensors it was made from last
    for (let i = ds.length - 1; i >= 0; i--) this.lib.fn.cudnnBackendDestroyDescriptor(ds[i]!);
  }
}
