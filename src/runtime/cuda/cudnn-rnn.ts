// Recurrent layers on cuDNN's v8 RNN API (cudnn_adv): one layer, one direction per call, so the
// dropout between layers and the second direction stay with the caller. The descriptors for a
// call are made and destroyed around it; weights live in a weight space the caller owns, filled
// from PyTorch-shaped tensors at the offsets rnnWeightOffsets reports. cuDNN's gate order
// (linLayerID 0..3 input side, 4..7 hidden side: LSTM i, f, g, o; GRU r, z, n in 0..2 and 3..5)
// is PyTorch's, and so are its GRU equations (r scales W_hn h + b_hn).
import { DTypeError, NotOnDeviceError } from '../../core/errors.ts';
import { CUDNN_CONST, type Cudnn } from '../../ffi/cudnn.ts';
import type {
  DevicePtr,
  DnnDType,
  GpuStream,
  RnnBackwardParams,
  RnnForwardParams,
  RnnShape,
  RnnSizes,
  RnnWeightOffsets,
} from '../gpu.ts';
import { rnnWhat } from '../gpu.ts';

/** what the RNN calls need of the cuDNN handle that owns them */
export interface CudnnRnnHost {
  readonly lib: Cudnn;
  readonly handle: bigint;
  /** makes the device current */
  enter(): void;
  /** makes the device current and binds the handle to the stream */
  begin(stream: GpuStream): void;
  /** throws the library's error (NotOnDeviceError for configurations cuDNN does not support) */
  fail(status: number, what: string, call: string): never;
}

const DATA: Record<DnnDType, number> = {
  f32: CUDNN_CONST.CUDNN_DATA_FLOAT,
  f64: CUDNN_CONST.CUDNN_DATA_DOUBLE,
  f16: CUDNN_CONST.CUDNN_DATA_HALF,
  bf16: CUDNN_CONST.CUDNN_DATA_BFLOAT16,
};

interface Descs {
  readonly rnn: bigint;
  readonly dropout: bigint;
  readonly x: bigint;
  readonly y: bigint;
  readonly h: bigint;
}

export class CudnnRnn {
  private readonly out = new BigUint64Array(1);
  private readonly out2 = new BigUint64Array(1);
  constructor(private readonly host: CudnnRnnHost) {}

  private check(status: number, call: string, p: RnnShape): void {
    if (status === CUDNN_CONST.CUDNN_STATUS_SUCCESS) return;
    // a bad-parameter status for a dtype other than f32 / f16 is cuDNN declining that dtype for
    // RNNs (the f32 / f16 calls are the same calls): refused by name, never a wrong answer
    if ((p.dtype === 'bf16' || p.dtype === 'f64') && status >= 2000 && status < 4000)
      throw new NotOnDeviceError(
        `${rnnWhat(p)}: cuDNN refuses ${p.dtype} recurrent layers (${call}: ${this.host.lib.statusText(status)})`,
      );
    this.host.fail(status, `${call}: ${rnnWhat(p)}`, call);
  }
  private create(call: string, f: (o: BigUint64Array) => number, p: RnnShape): bigint {
    this.out[0] = 0n;
    this.check(f(this.out), call, p);
    return this.out[0]!;
  }

  /** the call's descriptors, destroyed after body returns or throws */
  private with<T>(p: RnnShape, body: (d: Descs) => T): T {
    const f = this.host.lib.fn;
    const t = DATA[p.dtype];
    if (t === undefined) throw new DTypeError(`${rnnWhat(p)}: cuDNN has no RNN path for this dtype`);
    let rnn = 0n,
      dropout = 0n,
      x = 0n,
      y = 0n,
      h = 0n;
    try {
      dropout = this.create('cudnnCreateDropoutDescriptor', (o) => f.cudnnCreateDropoutDescriptor(o), p);
      // no dropout inside the call (one layer): cuDNN then needs no RNG states
      this.check(f.cudnnSetDropoutDescriptor(dropout, this.host.handle, 0, null, 0, 0), 'cudnnSetDropoutDescriptor', p);
      rnn = this.create('cudnnCreateRNNDescriptor', (o) => f.cudnnCreateRNNDescriptor(o), p);
      const half = p.dtype === 'f16' || p.dtype === 'bf16';
      // half data computes in f32; f32 stays off TF32 so results match the CPU reference
      const mathPrec = p.dtype === 'f64' ? CUDNN_CONST.CUDNN_DATA_DOUBLE : CUDNN_CONST.CUDNN_DATA_FLOAT;
      const mathType = half
        ? CUDNN_CONST.CUDNN_TENSOR_OP_MATH
        : p.dtype === 'f32'
          ? CUDNN_CONST.CUDNN_FMA_MATH
          : CUDNN_CONST.CUDNN_DEFAULT_MATH;
      this.check(
        f.cudnnSetRNNDescriptor_v8(
          rnn,
          CUDNN_CONST.CUDNN_RNN_ALGO_STANDARD,
          p.mode === 'lstm' ? CUDNN_CONST.CUDNN_LSTM : CUDNN_CONST.CUDNN_GRU,
          p.bias ? CUDNN_CONST.CUDNN_RNN_DOUBLE_BIAS : CUDNN_CONST.CUDNN_RNN_NO_BIAS,
          CUDNN_CONST.CUDNN_UNIDIRECTIONAL,
          CUDNN_CONST.CUDNN_LINEAR_INPUT,
          t,
          mathPrec,
          mathType,
          p.I,
          p.H,
          p.H,
          1,
          dropout,
          CUDNN_CONST.CUDNN_RNN_PADDED_IO_DISABLED,
        ),
        'cudnnSetRNNDescriptor_v8',
        p,
      );
      const lengths = new Int32Array(p.B).fill(p.T);
      const data = (vector: number): bigint => {
        const d = this.create('cudnnCreateRNNDataDescriptor', (o) => f.cudnnCreateRNNDataDescriptor(o), p);
        try {
          const layout = CUDNN_CONST.CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED;
          this.check(
            f.cudnnSetRNNDataDescriptor(d, t, layout, p.T, p.B, vector, lengths, null),
            'cudnnSetRNNDataDescriptor',
            p,
          );
        } catch (e) {
          f.cudnnDestroyRNNDataDescriptor(d);
          throw e;
        }
        return d;
      };
      x = data(p.I);
      y = data(p.H);
      h = this.create('cudnnCreateTensorDescriptor', (o) => f.cudnnCreateTensorDescriptor(o), p);
      this.check(
        f.cudnnSetTensorNdDescriptor(h, t, 3, new Int32Array([1, p.B, p.H]), new Int32Array([p.B * p.H, p.H, 1])),
        'cudnnSetTensorNdDescriptor',
        p,
      );
      return body({ rnn, dropout, x, y, h });
    } finally {
      if (h) f.cudnnDestroyTensorDescriptor(h);
      if (y) f.cudnnDestroyRNNDataDescriptor(y);
      if (x) f.cudnnDestroyRNNDataDescriptor(x);
      if (rnn) f.cudnnDestroyRNNDescriptor(rnn);
      if (dropout) f.cudnnDestroyDropoutDescriptor(dropout);
    }
  }

  sizes(p: RnnShape, training: boolean): RnnSizes {
    this.host.enter();
    const f = this.host.lib.fn;
    return this.with(p, (d) => {
      this.out[0] = 0n;
      this.check(f.cudnnGetRNNWeightSpaceSize(this.host.handle, d.rnn, this.out), 'cudnnGetRNNWeightSpaceSize', p);
      const weightBytes = Number(this.out[0]!);
      const mode = training ? CUDNN_CONST.CUDNN_FWD_MODE_TRAINING : CUDNN_CONST.CUDNN_FWD_MODE_INFERENCE;
      this.out[0] = 0n;
      this.out2[0] = 0n;
      this.check(
        f.cudnnGetRNNTempSpaceSizes(this.host.handle, d.rnn, mode, d.x, this.out, this.out2),
        'cudnnGetRNNTempSpaceSizes',
        p,
      );
      return { weightBytes, workspaceBytes: Number(this.out[0]!), reserveBytes: training ? Number(this.out2[0]!) : 0 };
    });
  }

  weightOffsets(p: RnnShape, weights: DevicePtr, weightBytes: number): RnnWeightOffsets {
    this.host.enter();
    const f = this.host.lib.fn;
    const gates = p.mode === 'lstm' ? 4 : 3;
    return this.with(p, (d) => {
      const md = this.create('cudnnCreateTensorDescriptor', (o) => f.cudnnCreateTensorDescriptor(o), p);
      let bd = 0n;
      try {
        bd = this.create('cudnnCreateTensorDescriptor', (o) => f.cudnnCreateTensorDescriptor(o), p);
        const m = new BigUint64Array(1),
          b = new BigUint64Array(1);
        const at = (id: number): [number, number] => {
          m[0] = 0n;
          b[0] = 0n;
          this.check(
            f.cudnnGetRNNWeightParams(this.host.handle, d.rnn, 0, weightBytes, weights, id, md, m, bd, b),
            'cudnnGetRNNWeightParams',
            p,
          );
          return [Number(m[0]! - weights), p.bias ? Number(b[0]! - weights) : -1];
        };
        const inSide = Array.from({ length: gates }, (_, g) => at(g));
        const hSide = Array.from({ length: gates }, (_, g) => at(gates + g));
        return {
          wIh: inSide.map((v) => v[0]),
          wHh: hSide.map((v) => v[0]),
          bIh: p.bias ? inSide.map((v) => v[1]) : [],
          bHh: p.bias ? hSide.map((v) => v[1]) : [],
        };
      } finally {
        if (bd) f.cudnnDestroyTensorDescriptor(bd);
        f.cudnnDestroyTensorDescriptor(md);
      }
    });
  }

  forward(p: RnnForwardParams, stream: GpuStream): void {
    this.host.begin(stream);
    const f = this.host.lib.fn;
    this.with(p, (d) =>
      this.check(
        f.cudnnRNNForward(
          this.host.handle,
          d.rnn,
          p.training ? CUDNN_CONST.CUDNN_FWD_MODE_TRAINING : CUDNN_CONST.CUDNN_FWD_MODE_INFERENCE,
          p.seqLengths,
          d.x,
          p.x,
          d.y,
          p.y,
          d.h,
          p.hx,
          p.hy,
          d.h,
          p.cx,
          p.cy,
          p.weightBytes,
          p.weights,
          p.workspaceBytes,
          p.workspace,
          p.reserveBytes,
          p.reserve,
        ),
        'cudnnRNNForward',
        p,
      ),
    );
  }

  backwardData(p: RnnBackwardParams, stream: GpuStream): void {
    this.host.begin(stream);
    const f = this.host.lib.fn;
    this.with(p, (d) =>
      this.check(
        f.cudnnRNNBackwardData_v8(
          this.host.handle,
          d.rnn,
          p.seqLengths,
          d.y,
          p.y,
          p.dy,
          d.x,
          p.dx,
          d.h,
          p.hx,
          p.dhy,
          p.dhx,
          d.h,
          p.cx,
          p.dcy,
          p.dcx,
          p.weightBytes,
          p.weights,
          p.workspaceBytes,
          p.workspace,
          p.reserveBytes,
          p.reserve,
        ),
        'cudnnRNNBackwardData_v8',
        p,
      ),
    );
  }

  backwardWeights(p: RnnBackwardParams, stream: GpuStream): void {
    this.host.begin(stream);
    const f = this.host.lib.fn;
    // cuDNN 9 only adds into the gradient buffer (CUDNN_WGRAD_MODE_ADD): the caller zeroes it
    this.with(p, (d) =>
      this.check(
        f.cudnnRNNBackwardWeights_v8(
          this.host.handle,
          d.rnn,
          CUDNN_CONST.CUDNN_WGRAD_MODE_ADD,
          p.seqLengths,
          d.x,
          p.x,
          d.h,
          p.hx,
          d.y,
          p.y,
          p.weightBytes,
          p.dweights,
          p.workspaceBytes,
          p.workspace,
          p.reserveBytes,
          p.reserve,
        ),
        'cudnnRNNBackwardWeights_v8',
        p,
      ),
    );
  }
}
