// Recurrent layers on MIOpen's sequence-tensor RNN API (miopenRNNForward, miopenRNNBackwardSeqData,
// miopenRNNBackwardWeightsSeqTensor), the twin of cuda/cudnn-rnn.ts: one layer, one direction per
// call, descriptors made and destroyed around each call, weights in a caller-owned weight space.
// MIOpen numbers the gates differently from PyTorch: LSTM paramIDs 0..3 are input, forget,
// output, new memory (PyTorch i, f, g, o -> 0, 1, 3, 2), GRU 0..2 are update, reset, new memory
// (PyTorch r, z, n -> 1, 0, 2); the hidden side adds the gate count. Offsets come back in elements.
import { NotOnDeviceError } from '../../core/errors.ts';
import { dtypeSize } from '../../core/dtype.ts';
import { MIOPEN_CONST, type Miopen } from '../../ffi/miopen.ts';
import type {
  DnnDType,
  GpuStream,
  RnnBackwardParams,
  RnnForwardParams,
  RnnShape,
  RnnSizes,
  RnnWeightOffsets,
} from '../gpu.ts';
import { rnnWhat } from '../gpu.ts';

type Out<T> = [T];
type Ptr = bigint;

/** MIOpen's paramID / biasID of each PyTorch gate, input side (the hidden side adds the gate count) */
const GATE_ID: Record<'lstm' | 'gru', readonly number[]> = { lstm: [0, 1, 3, 2], gru: [1, 0, 2] };

const DTYPE: Partial<Record<DnnDType, number>> = { f32: MIOPEN_CONST.miopenFloat, f16: MIOPEN_CONST.miopenHalf };

interface Descs {
  readonly rnn: Ptr;
  /** [B, I]: the legacy descriptor the parameter queries take */
  readonly x2: Ptr;
  readonly xs: Ptr;
  readonly ys: Ptr;
  readonly h: Ptr;
  /** scratch for the parameter queries' output descriptor */
  readonly param: Ptr;
}

export function createMiopenRnn(mi: Miopen, handleFor: (s: GpuStream) => bigint, activate: () => void) {
  const f = mi.fn;
  const dtypeOf = (p: RnnShape): number => {
    const t = DTYPE[p.dtype];
    if (t === undefined)
      throw new NotOnDeviceError(
        `${rnnWhat(p)}: MIOpen's recurrent layers are used for f32 and f16 only (got ${p.dtype})`,
      );
    return t;
  };

  const withDescs = <T>(p: RnnShape, body: (d: Descs) => T): T => {
    const t = dtypeOf(p);
    activate();
    const made: [Ptr, 'tensor' | 'seq' | 'rnn'][] = [];
    const make = (kind: 'tensor' | 'seq' | 'rnn'): Ptr => {
      const o: Out<Ptr | null> = [null];
      const [st, call] =
        kind === 'tensor'
          ? [f.miopenCreateTensorDescriptor(o), 'miopenCreateTensorDescriptor']
          : kind === 'seq'
            ? [f.miopenCreateSeqTensorDescriptor(o), 'miopenCreateSeqTensorDescriptor']
            : [f.miopenCreateRNNDescriptor(o), 'miopenCreateRNNDescriptor'];
      mi.check(st, call, [rnnWhat(p)]);
      made.push([o[0] ?? 0n, kind]);
      return o[0] ?? 0n;
    };
    try {
      const rnn = make('rnn');
      const args = [
        rnn,
        p.H,
        1,
        MIOPEN_CONST.miopenRNNlinear,
        MIOPEN_CONST.miopenRNNunidirection,
        p.mode === 'lstm' ? MIOPEN_CONST.miopenLSTM : MIOPEN_CONST.miopenGRU,
        p.bias ? MIOPEN_CONST.miopenRNNwithBias : MIOPEN_CONST.miopenRNNNoBias,
        MIOPEN_CONST.miopenRNNdefault,
        t,
      ] as const;
      mi.check(f.miopenSetRNNDescriptor(...args), 'miopenSetRNNDescriptor', [rnnWhat(p), ...args]);
      const x2 = make('tensor');
      mi.check(
        f.miopenSetTensorDescriptor(x2, t, 2, new Int32Array([p.B, p.I]), new Int32Array([p.I, 1])),
        'miopenSetTensorDescriptor',
        [rnnWhat(p), `[${p.B}, ${p.I}]`],
      );
      const h = make('tensor');
      mi.check(
        f.miopenSetTensorDescriptor(h, t, 3, new Int32Array([1, p.B, p.H]), new Int32Array([p.B * p.H, p.H, 1])),
        'miopenSetTensorDescriptor',
        [rnnWhat(p), `[1, ${p.B}, ${p.H}]`],
      );
      const lengths = new Int32Array(p.B).fill(p.T);
      const seq = (vector: number): Ptr => {
        const d = make('seq');
        const layout = MIOPEN_CONST.miopenRNNDataSeqMajorNotPadded;
        mi.check(
          f.miopenSetRNNDataSeqTensorDescriptor(d, t, layout, p.T, p.B, vector, lengths, null),
          'miopenSetRNNDataSeqTensorDescriptor',
          [rnnWhat(p), `vector ${vector}`],
        );
        return d;
      };
      const xs = seq(p.I),
        ys = seq(p.H);
      const param = make('tensor');
      return body({ rnn, x2, xs, ys, h, param });
    } finally {
      for (const [d, kind] of made.reverse()) {
        if (kind === 'tensor') f.miopenDestroyTensorDescriptor(d);
        else if (kind === 'seq') f.miopenDestroySeqTensorDescriptor(d);
        else f.miopenDestroyRNNDescriptor(d);
      }
    }
  };

  return {
    sizes(p: RnnShape, training: boolean, stream: GpuStream): RnnSizes {
      const h = handleFor(stream);
      return withDescs(p, (d) => {
        const w: Out<number> = [0];
        mi.check(f.miopenGetRNNParamsSize(h, d.rnn, d.x2, w, dtypeOf(p)), 'miopenGetRNNParamsSize', [rnnWhat(p)]);
        const ws: Out<number> = [0],
          rs: Out<number> = [0];
        const mode = training ? MIOPEN_CONST.miopenRNNTraining : MIOPEN_CONST.miopenRNNInference;
        mi.check(f.miopenGetRNNTempSpaceSizes(h, d.rnn, d.xs, mode, ws, rs), 'miopenGetRNNTempSpaceSizes', [
          rnnWhat(p),
        ]);
        return { weightBytes: w[0], workspaceBytes: ws[0], reserveBytes: training ? rs[0] : 0 };
      });
    },

    weightOffsets(p: RnnShape): RnnWeightOffsets {
      return withDescs(p, (d) => {
        const ids = GATE_ID[p.mode];
        const n = ids.length;
        const el = dtypeSize(p.dtype);
        const param = (id: number): number => {
          const o: Out<number> = [0];
          mi.check(f.miopenGetRNNLayerParamOffset(d.rnn, 0, d.x2, id, d.param, o), 'miopenGetRNNLayerParamOffset', [
            rnnWhat(p),
            `paramID ${id}`,
          ]);
          return o[0] * el;
        };
        const bias = (id: number): number => {
          const o: Out<number> = [0];
          mi.check(f.miopenGetRNNLayerBiasOffset(d.rnn, 0, d.x2, id, d.param, o), 'miopenGetRNNLayerBiasOffset', [
            rnnWhat(p),
            `biasID ${id}`,
          ]);
          return o[0] * el;
        };
        return {
          wIh: ids.map((id) => param(id)),
          wHh: ids.map((id) => param(n + id)),
          bIh: p.bias ? ids.map((id) => bias(id)) : [],
          bHh: p.bias ? ids.map((id) => bias(n + id)) : [],
        };
      });
    },

    forward(p: RnnForwardParams, stream: GpuStream): void {
      const h = handleFor(stream);
      withDescs(p, (d) => {
        const mode = p.training ? MIOPEN_CONST.miopenRNNTraining : MIOPEN_CONST.miopenRNNInference;
        const args = [
          h,
          d.rnn,
          mode,
          d.xs,
          p.x,
          d.h,
          p.hx,
          p.hy,
          d.h,
          p.cx,
          p.cy,
          d.ys,
          p.y,
          p.weights,
          p.weightBytes,
          p.workspace,
          p.workspaceBytes,
          p.reserve,
          p.reserveBytes,
        ] as const;
        mi.check(f.miopenRNNForward(...args), 'miopenRNNForward', [rnnWhat(p), ...args]);
      });
    },

    backwardData(p: RnnBackwardParams, stream: GpuStream): void {
      const h = handleFor(stream);
      withDescs(p, (d) => {
        const args = [
          h,
          d.rnn,
          d.ys,
          p.y,
          p.dy,
          d.h,
          p.hx,
          p.dhy,
          p.dhx,
          d.h,
          p.cx,
          p.dcy,
          p.dcx,
          d.xs,
          p.dx,
          p.weights,
          p.weightBytes,
          p.workspace,
          p.workspaceBytes,
          p.reserve,
          p.reserveBytes,
        ] as const;
        mi.check(f.miopenRNNBackwardSeqData(...args), 'miopenRNNBackwardSeqData', [rnnWhat(p), ...args]);
      });
    },

    /** adds the weight gradients into p.dweights (the caller zeroes it) */
    backwardWeights(p: RnnBackwardParams, stream: GpuStream): void {
      const h = handleFor(stream);
      withDescs(p, (d) => {
        const args = [
          h,
          d.rnn,
          d.xs,
          p.x,
          d.h,
          p.hx,
          d.ys,
          p.y,
          p.dweights,
          p.weightBytes,
          p.workspace,
          p.workspaceBytes,
          p.reserve,
          p.reserveBytes,
        ] as const;
        mi.check(f.miopenRNNBackwardWeightsSeqTensor(...args), 'miopenRNNBackwardWeightsSeqTensor', [
          rnnWhat(p),
          ...args,
        ]);
      });
    },
  };
}

export type MiopenRnn = ReturnType<typeof createMiopenRnn>;
