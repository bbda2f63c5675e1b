// The DNN interface on MIOpen (ffi/miopen.ts), the twin of cuda/cudnn.ts.
//
// Environment that changes MIOpen's behaviour (read by MIOpen itself, not by us):
//   MIOPEN_USER_DB_PATH      where MIOpen keeps its per-user find/perf database; the first call
//                            for a new convolution shape benchmarks and records here, so keep it
//                            on persistent storage (default ~/.config/miopen).
//   MIOPEN_CUSTOM_CACHE_DIR  where compiled kernels are cached (default ~/.cache/miopen).
//   MIOPEN_FIND_MODE         how miopenFindConvolution*Algorithm searches: NORMAL (1) benchmarks
//                            every solver; FAST (2) takes the find-db entry or the immediate-mode
//                            fallback, for quick start-up; HYBRID (3) and DYNAMIC_HYBRID (5, the
//                            default) benchmark only on a find-db miss.
// First calls can take seconds while MIOpen compiles kernels; later ones hit both caches, and the
// algorithm chosen per shape is also cached in this process (convAlgoCache below).
import { GpuError, ShapeError } from '../../core/errors.ts';
import { loadMiopen, MIOPEN_CONST, MIOPEN_STRUCTS } from '../../ffi/miopen.ts';
import type {
  BatchNormBackwardParams,
  BatchNormTrainParams,
  ConvParams,
  DevicePtr,
  DnnApi,
  DnnDType,
  GpuStream,
  LrnBackwardParams,
  LrnParams,
  PoolBackwardParams,
  PoolParams,
  SoftmaxParams,
} from '../gpu.ts';
import { createMiopenRnn } from './miopen-rnn.ts';

/** an output argument: koffi writes the value into the one-element array */
type Out<T> = [T];
type Ptr = bigint;

/** what the DNN layer needs from the HIP runtime that owns it */
export interface DnnHost {
  readonly device: number;
  /** makes the device current on this thread */
  activate(): void;
  malloc(bytes: number): DevicePtr;
  free(p: DevicePtr): void;
  streamPtr(s: GpuStream): bigint | null;
}

const DTYPE: Record<DnnDType, number> = {
  f32: MIOPEN_CONST.miopenFloat,
  f64: MIOPEN_CONST.miopenDouble,
  f16: MIOPEN_CONST.miopenHalf,
  bf16: MIOPEN_CONST.miopenBFloat16,
};

const DTYPE_BYTES: Record<DnnDType, number> = { f32: 4, f64: 8, f16: 2, bf16: 2 };

// MIOpen reads alpha/beta as host floats for these ops
const ONE = new Float32Array([1]);
const ZERO = new Float32Array([0]);

/** the chosen forward algorithm per problem, for the life of the process */
const convAlgoCache = new Map<string, { algo: number; workspace: number }>();

export function createMiopenDnn(host: DnnHost): DnnApi & { dispose(): void } {
  const mi = loadMiopen();
  const f = mi.fn;
  const handles = new Map<string, bigint>();
  let ws = { ptr: 0n, size: 0 };

  const handleFor = (stream: GpuStream): bigint => {
    const s = host.streamPtr(stream);
    const key = (s ?? 0n).toString();
    const hit = handles.get(key);
    if (hit !== undefined) return hit;
    host.activate();
    const out: Out<Ptr | null> = [null];
    mi.check(f.miopenCreateWithStream(out, s), 'miopenCreateWithStream', [s]);
    const h = out[0] ?? 0n;
    handles.set(key, h);
    return h;
  };

  // one growable workspace per device; callers on one device share it, as MIOpen's own
  // workspace contract assumes work on it is ordered (ops use one stream per device)
  const workspace = (bytes: number): { ptr: bigint; size: number } => {
    if (bytes <= ws.size) return ws;
    if (ws.size > 0) host.free(ws.ptr as DevicePtr);
    ws = { ptr: 0n, size: 0 };
    const size = Math.max(bytes, 1 << 20);
    ws = { ptr: host.malloc(size), size };
    return ws;
  };

  // max-pooling backward's scratch (the indices workspace and the forward's second y), grown as
  // needed and kept like the convolution workspace, so no call frees (which would synchronize)
  const poolIndices = { ptr: 0n, size: 0 };
  const poolY = { ptr: 0n, size: 0 };
  const grow = (slot: { ptr: bigint; size: number }, bytes: number): { ptr: bigint; size: number } => {
    if (bytes <= slot.size) return slot;
    if (slot.size > 0) host.free(slot.ptr as DevicePtr);
    slot.ptr = 0n;
    slot.size = 0;
    const size = Math.max(bytes, 1 << 16);
    slot.ptr = host.malloc(size);
    slot.size = size;
    return slot;
  };

  const tensor = (dtype: number, n: number, c: number, h: number, w: number): bigint => {
    const out: Out<Ptr | null> = [null];
    mi.check(f.miopenCreateTensorDescriptor(out), 'miopenCreateTensorDescriptor', []);
    const d = out[0] ?? 0n;
    try {
      mi.check(f.miopenSet4dTensorDescriptor(d, dtype, n, c, h, w), 'miopenSet4dTensorDescriptor', [
        d,
        dtype,
        n,
        c,
        h,
        w,
      ]);
    } catch (e) {
      f.miopenDestroyTensorDescriptor(d);
      throw e;
    }
    return d;
  };

  /** runs body with descriptors that are always destroyed afterwards */
  const withDescs = <T>(body: (own: (d: bigint, kind: 'tensor' | 'conv' | 'pool' | 'lrn') => bigint) => T): T => {
    const owned: { d: bigint; kind: 'tensor' | 'conv' | 'pool' | 'lrn' }[] = [];
    try {
      return body((d, kind) => {
        owned.push({ d, kind });
        return d;
      });
    } finally {
      for (const { d, kind } of owned.reverse()) {
        if (kind === 'tensor') f.miopenDestroyTensorDescriptor(d);
        else if (kind === 'conv') f.miopenDestroyConvolutionDescriptor(d);
        else if (kind === 'lrn') f.miopenDestroyLRNDescriptor(d);
        else f.miopenDestroyPoolingDescriptor(d);
      }
    }
  };

  /** fwd: y from x and w; transpose: the transposed convolution (MIOpen's transpose mode);
   *  bwdWeights: w (the weight gradient) from x and y (the output gradient) */
  const conv = (p: ConvParams, stream: GpuStream, kind: 'fwd' | 'transpose' | 'bwdWeights'): void => {
    const transpose = kind === 'transpose';
    const op = transpose ? 'convTransposeForward' : kind === 'fwd' ? 'convForward' : 'convBackwardWeights';
    const dt = DTYPE[p.dtype];
    const g = p.groups;
    if (p.cIn % g !== 0 || p.cOut % g !== 0) {
      throw new ShapeError(`${op}: channels cIn=${p.cIn}, cOut=${p.cOut} are not divisible by groups=${g}`);
    }
    const h = handleFor(stream);
    host.activate();
    withDescs((own) => {
      const xd = own(tensor(dt, p.n, p.cIn, p.inH, p.inW), 'tensor');
      const wd = own(
        transpose ? tensor(dt, p.cIn, p.cOut / g, p.kH, p.kW) : tensor(dt, p.cOut, p.cIn / g, p.kH, p.kW),
        'tensor',
      );
      const yd = own(tensor(dt, p.n, p.cOut, p.outH, p.outW), 'tensor');
      const cdOut: Out<Ptr | null> = [null];
      mi.check(f.miopenCreateConvolutionDescriptor(cdOut), 'miopenCreateConvolutionDescriptor', []);
      const cd = own(cdOut[0] ?? 0n, 'conv');
      const mode = transpose ? MIOPEN_CONST.miopenTranspose : MIOPEN_CONST.miopenConvolution;
      const initArgs = [cd, mode, p.padH, p.padW, p.strideH, p.strideW, p.dilationH, p.dilationW] as const;
      mi.check(f.miopenInitConvolutionDescriptor(...initArgs), 'miopenInitConvolutionDescriptor', initArgs);
      if (g !== 1) mi.check(f.miopenSetConvolutionGroupCount(cd, g), 'miopenSetConvolutionGroupCount', [cd, g]);
      if (transpose) {
        // output padding: what the requested size adds beyond the smallest transposed output
        const adjH = p.outH - ((p.inH - 1) * p.strideH - 2 * p.padH + p.dilationH * (p.kH - 1) + 1);
        const adjW = p.outW - ((p.inW - 1) * p.strideW - 2 * p.padW + p.dilationW * (p.kW - 1) + 1);
        if (
          adjH < 0 ||
          adjW < 0 ||
          adjH >= Math.max(p.strideH, p.dilationH) ||
          adjW >= Math.max(p.strideW, p.dilationW)
        ) {
          throw new ShapeError(
            `${op}: output [${p.outH}, ${p.outW}] is not reachable from input [${p.inH}, ${p.inW}] ` +
              `with kernel [${p.kH}, ${p.kW}], stride [${p.strideH}, ${p.strideW}], padding [${p.padH}, ${p.padW}]`,
          );
        }
        if (adjH || adjW)
          mi.check(f.miopenSetTransposeConvOutputPadding(cd, adjH, adjW), 'miopenSetTransposeConvOutputPadding', [
            cd,
            adjH,
            adjW,
          ]);
      }
      const dims: Out<number>[] = [[0], [0], [0], [0]];
      mi.check(
        f.miopenGetConvolutionForwardOutputDim(cd, xd, wd, dims[0]!, dims[1]!, dims[2]!, dims[3]!),
        'miopenGetConvolutionForwardOutputDim',
        [cd, xd, wd],
      );
      const got = dims.map((d) => d[0]);
      const want = [p.n, p.cOut, p.outH, p.outW];
      if (got.some((v, i) => v !== want[i])) {
        throw new ShapeError(
          `${op}: MIOpen computes output [${got.join(', ')}] but y is [${want.join(', ')}] ` +
            `(x [${p.n}, ${p.cIn}, ${p.inH}, ${p.inW}], kernel [${p.kH}, ${p.kW}], ${p.dtype})`,
        );
      }
      const key = [
        op,
        p.dtype,
        p.n,
        p.cIn,
        p.inH,
        p.inW,
        p.cOut,
        p.kH,
        p.kW,
        p.outH,
        p.outW,
        p.padH,
        p.padW,
        p.strideH,
        p.strideW,
        p.dilationH,
        p.dilationW,
        g,
        host.device,
      ].join(',');
      let choice = convAlgoCache.get(key);
      const bwd = kind === 'bwdWeights';
      if (!choice) {
        const need: Out<number> = [0];
        if (bwd)
          mi.check(
            f.miopenConvolutionBackwardWeightsGetWorkSpaceSize(h, yd, xd, cd, wd, need),
            'miopenConvolutionBackwardWeightsGetWorkSpaceSize',
            [h],
          );
        else
          mi.check(
            f.miopenConvolutionForwardGetWorkSpaceSize(h, wd, xd, cd, yd, need),
            'miopenConvolutionForwardGetWorkSpaceSize',
            [h],
          );
        const w = need[0] > 0 ? workspace(need[0]) : { ptr: 0n, size: 0 };
        const perf = new Uint8Array(MIOPEN_STRUCTS.miopenConvAlgoPerf_t.size * 4);
        const count: Out<number> = [0];
        const call = bwd ? 'miopenFindConvolutionBackwardWeightsAlgorithm' : 'miopenFindConvolutionForwardAlgorithm';
        if (bwd) {
          const findArgs = [h, yd, p.y, xd, p.x, cd, wd, p.w, 4, count, perf, w.ptr, need[0], false] as const;
          mi.check(f.miopenFindConvolutionBackwardWeightsAlgorithm(...findArgs), call, findArgs);
        } else {
          const findArgs = [h, xd, p.x, wd, p.w, cd, yd, p.y, 4, count, perf, w.ptr, need[0], false] as const;
          mi.check(f.miopenFindConvolutionForwardAlgorithm(...findArgs), call, findArgs);
        }
        if (count[0] < 1) throw new GpuError(`${call} found no algorithm for ${key}`, -1, call);
        const dv = new DataView(perf.buffer);
        const fields = MIOPEN_STRUCTS.miopenConvAlgoPerf_t.fields;
        // the algorithm sits in a union: fwd_algo and bwd_weights_algo share offset 0
        choice = { algo: dv.getInt32(fields.fwd_algo, true), workspace: Number(dv.getBigUint64(fields.memory, true)) };
        convAlgoCache.set(key, choice);
      }
      const w = choice.workspace > 0 ? workspace(choice.workspace) : { ptr: 0n, size: 0 };
      if (bwd) {
        const args = [h, ONE, yd, p.y, xd, p.x, cd, choice.algo, ZERO, wd, p.w, w.ptr, w.size] as const;
        mi.check(f.miopenConvolutionBackwardWeights(...args), 'miopenConvolutionBackwardWeights', args);
        return;
      }
      const fwdArgs = [h, ONE, xd, p.x, wd, p.w, cd, choice.algo, ZERO, yd, p.y, w.ptr, w.size] as const;
      mi.check(f.miopenConvolutionForward(...fwdArgs), 'miopenConvolutionForward', fwdArgs);
    });
  };

  /** the forward, or with b the backward (dx from dy, x and y), on one pooling descriptor */
  const pool = (p: PoolParams, b: PoolBackwardParams | null, stream: GpuStream): void => {
    const dt = DTYPE[p.dtype];
    const mode =
      p.mode === 'max'
        ? MIOPEN_CONST.miopenPoolingMax
        : p.countIncludePad
          ? MIOPEN_CONST.miopenPoolingAverageInclusive
          : MIOPEN_CONST.miopenPoolingAverage;
    const h = handleFor(stream);
    host.activate();
    withDescs((own) => {
      const xd = own(tensor(dt, p.n, p.c, p.inH, p.inW), 'tensor');
      const yd = own(tensor(dt, p.n, p.c, p.outH, p.outW), 'tensor');
      const pdOut: Out<Ptr | null> = [null];
      mi.check(f.miopenCreatePoolingDescriptor(pdOut), 'miopenCreatePoolingDescriptor', []);
      const pd = own(pdOut[0] ?? 0n, 'pool');
      const setArgs = [pd, mode, p.kH, p.kW, p.padH, p.padW, p.strideH, p.strideW] as const;
      mi.check(f.miopenSet2dPoolingDescriptor(...setArgs), 'miopenSet2dPoolingDescriptor', setArgs);
      const dims: Out<number>[] = [[0], [0], [0], [0]];
      mi.check(
        f.miopenGetPoolingForwardOutputDim(pd, xd, dims[0]!, dims[1]!, dims[2]!, dims[3]!),
        'miopenGetPoolingForwardOutputDim',
        [pd, xd],
      );
      if (dims[2]![0] !== p.outH || dims[3]![0] !== p.outW) {
        throw new ShapeError(
          `poolForward: MIOpen computes output [${dims[2]![0]}, ${dims[3]![0]}] (floor mode) but y is ` +
            `[${p.outH}, ${p.outW}] (x [${p.n}, ${p.c}, ${p.inH}, ${p.inW}], kernel [${p.kH}, ${p.kW}], ${p.dtype})`,
        );
      }
      if (!b) {
        const args = [h, pd, ONE, xd, p.x, ZERO, yd, p.y, false, 0n, 0] as const;
        mi.check(f.miopenPoolingForward(...args), 'miopenPoolingForward', args);
        return;
      }
      // MIOpen's max-pooling backward reads where each maximum was from a workspace that only a
      // forward run with do_backward fills: the forward runs again into a scratch y for it (32-bit
      // indices, so any window size fits). Average pooling needs no workspace.
      let indices = 0n;
      if (p.mode === 'max') {
        mi.check(f.miopenSetPoolingIndexType(pd, MIOPEN_CONST.miopenIndexUint32), 'miopenSetPoolingIndexType', [pd]);
        const need: Out<number> = [0];
        mi.check(f.miopenPoolingGetWorkSpaceSizeV2(pd, yd, need), 'miopenPoolingGetWorkSpaceSizeV2', [pd, yd]);
        indices = grow(poolIndices, need[0]).ptr;
        const yAgain = grow(poolY, p.n * p.c * p.outH * p.outW * DTYPE_BYTES[p.dtype]).ptr;
        const fargs = [h, pd, ONE, xd, b.x, ZERO, yd, yAgain, true, indices, need[0]] as const;
        mi.check(f.miopenPoolingForward(...fargs), 'miopenPoolingForward', fargs);
      }
      const args = [h, pd, ONE, yd, b.y, yd, b.dy, xd, b.x, ZERO, xd, b.dx, indices] as const;
      mi.check(f.miopenPoolingBackward(...args), 'miopenPoolingBackward', args);
    });
  };

  /** the forward (fw) or the backward (bw) of training-mode batch norm, spatial mode over NCHW */
  const batchNorm = (fw: BatchNormTrainParams | null, bw: BatchNormBackwardParams | null, stream: GpuStream): void => {
    const p = (fw ?? bw)!;
    const mode = MIOPEN_CONST.miopenBNSpatial;
    const h = handleFor(stream);
    host.activate();
    withDescs((own) => {
      const xd = own(tensor(DTYPE[p.dtype], p.n, p.c, p.h, p.w), 'tensor');
      const dOut: Out<Ptr | null> = [null];
      mi.check(f.miopenCreateTensorDescriptor(dOut), 'miopenCreateTensorDescriptor', []);
      const bd = own(dOut[0] ?? 0n, 'tensor');
      mi.check(f.miopenDeriveBNTensorDescriptor(bd, xd, mode), 'miopenDeriveBNTensorDescriptor', [bd, xd, mode]);
      if (fw) {
        const args = [
          h,
          mode,
          ONE,
          ZERO,
          xd,
          fw.x,
          xd,
          fw.y,
          bd,
          fw.scale,
          fw.bias,
          fw.momentum,
          fw.runningMean ?? 0n,
          fw.runningVar ?? 0n,
          fw.eps,
          0n,
          0n,
        ] as const;
        mi.check(f.miopenBatchNormalizationForwardTraining(...args), 'miopenBatchNormalizationForwardTraining', args);
        return;
      }
      const b = bw!;
      const args = [
        h,
        mode,
        ONE,
        ZERO,
        ONE,
        ZERO,
        xd,
        b.x,
        xd,
        b.dy,
        xd,
        b.dx,
        bd,
        b.scale,
        b.dScale,
        b.dBias,
        b.eps,
        0n,
        0n,
      ] as const;
      mi.check(f.miopenBatchNormalizationBackward(...args), 'miopenBatchNormalizationBackward', args);
    });
  };

  // LRN backward's scratch: the scale the forward saves with do_backward, and that forward's y
  const lrnScale = { ptr: 0n, size: 0 };
  const lrnY = { ptr: 0n, size: 0 };

  /** LRN across channels: the forward, or with b the backward (dx from dy, x and y) */
  const lrn = (p: LrnParams, b: LrnBackwardParams | null, stream: GpuStream): void => {
    const dt = DTYPE[p.dtype];
    const h = handleFor(stream);
    host.activate();
    withDescs((own) => {
      const xd = own(tensor(dt, p.n, p.c, p.h, p.w), 'tensor');
      const out: Out<Ptr | null> = [null];
      mi.check(f.miopenCreateLRNDescriptor(out), 'miopenCreateLRNDescriptor', []);
      const ld = own(out[0] ?? 0n, 'lrn');
      // MIOpen divides alpha by lrnN in cross-channel mode, as PyTorch does
      const setArgs = [ld, MIOPEN_CONST.miopenLRNCrossChannel, p.size, p.alpha, p.beta, p.k] as const;
      mi.check(f.miopenSetLRNDescriptor(...setArgs), 'miopenSetLRNDescriptor', setArgs);
      if (!b) {
        const args = [h, ld, ONE, xd, p.x, ZERO, xd, p.y, false, 0n] as const;
        mi.check(f.miopenLRNForward(...args), 'miopenLRNForward', args);
        return;
      }
      // the backward reads the scale only a forward with do_backward saves: the forward runs again
      // into a scratch y for it, so the op's contract stays (x, y, dy) -> dx as on cuDNN
      const need: Out<number> = [0];
      mi.check(f.miopenLRNGetWorkSpaceSize(xd, need), 'miopenLRNGetWorkSpaceSize', [xd]);
      const scale = grow(lrnScale, need[0]).ptr;
      const yAgain = grow(lrnY, p.n * p.c * p.h * p.w * DTYPE_BYTES[p.dtype]).ptr;
      const fargs = [h, ld, ONE, xd, b.x, ZERO, xd, yAgain, true, scale] as const;
      mi.check(f.miopenLRNForward(...fargs), 'miopenLRNForward', fargs);
      const args = [h, ld, ONE, xd, b.y, xd, b.dy, xd, b.x, ZERO, xd, b.dx, scale] as const;
      mi.check(f.miopenLRNBackward(...args), 'miopenLRNBackward', args);
    });
  };

  const rnn = createMiopenRnn(mi, handleFor, () => host.activate());

  return {
    name: 'MIOpen',
    version: mi.version,
    convForward: (p, s) => conv(p, s, 'fwd'),
    convTransposeForward: (p, s) => conv(p, s, 'transpose'),
    convBackwardWeights: (p, s) => conv(p, s, 'bwdWeights'),
    poolForward: (p, s) => pool(p, null, s),
    poolBackward: (p, s) => pool(p, p, s),
    batchNormForwardTraining(p: BatchNormTrainParams, stream: GpuStream): void {
      batchNorm(p, null, stream);
    },
    batchNormBackward(p: BatchNormBackwardParams, stream: GpuStream): void {
      batchNorm(null, p, stream);
    },
    softmaxForward(p: SoftmaxParams, stream: GpuStream): void {
      const dt = DTYPE[p.dtype];
      const h = handleFor(stream);
      host.activate();
      withDescs((own) => {
        // [rows, cols, 1, 1] with channel mode: softmax over cols for every row
        const d = own(tensor(dt, p.rows, p.cols, 1, 1), 'tensor');
        const algo = p.log ? MIOPEN_CONST.MIOPEN_SOFTMAX_LOG : MIOPEN_CONST.MIOPEN_SOFTMAX_ACCURATE;
        const args = [h, ONE, d, p.x, ZERO, d, p.y, algo, MIOPEN_CONST.MIOPEN_SOFTMAX_MODE_CHANNEL] as const;
        mi.check(f.miopenSoftmaxForward_V2(...args), 'miopenSoftmaxForward_V2', args);
      });
    },
    lrnForward: (p, s) => lrn(p, null, s),
    lrnBackward: (p, s) => lrn(p, p, s),
    rnnSizes: (p, training, s) => rnn.sizes(p, training, s),
    rnnWeightOffsets: (p) => rnn.weightOffsets(p),
    rnnForward: (p, s) => rnn.forward(p, s),
    rnnBackwardData: (p, s) => rnn.backwardData(p, s),
    rnnBackwardWeights: (p, s) => rnn.backwardWeights(p, s),
    dispose(): void {
      for (const hd of handles.values()) f.miopenDestroy(hd);
      handles.clear();
      if (ws.size > 0) host.free(ws.ptr as DevicePtr);
      ws = { ptr: 0n, size: 0 };
      for (const slot of [poolIndices, poolY, lrnScale, lrnY]) {
        if (slot.size > 0) host.free(slot.ptr as DevicePtr);
        slot.ptr = 0n;
        slot.size = 0;
      }
    },
  };
}
