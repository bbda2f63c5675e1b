// The recurrent op on MIOpen / cuDNN: one library call per layer and direction. Our weights are
// PyTorch-shaped tensors, so every call packs them into a fresh library weight space (one device
// copy per gate matrix and bias, at the offsets the library reports) rather than keeping a
// packed copy that would go stale when an optimizer steps the parameters. A reverse direction
// runs the library forward in time over a time-reversed copy of x and reverses its results.
// The backward recomputes the forward in training mode to get the library's reserve space (the
// op's output carries no library state), then runs backward data and backward weights, and
// unpacks the weight gradients into the flat result the op's gradient rule cuts up.
import { DTYPE_INFO } from '../../core/dtype.ts';
import { GpuError } from '../../core/errors.ts';
import { numel } from '../../core/layout.ts';
import { RawTensor } from '../../device/raw-tensor.ts';
import type { DnnApi, DnnDType, RnnBuffers, RnnShape, RnnSizes } from '../../runtime/gpu.ts';
import { type RnnArgs, rnnDims, rnnGradParts, rnnOutRows } from '../rnn-args.ts';
import { constSet } from './copy.ts';
import { denseIn } from './dnn-util.ts';
import { filled } from './fill.ts';

/** the element k places past t's first element (t dense) */
const at = (t: RawTensor, k = 0) => t.storage.ptrAt(t.layout.offset + k);

/** the [T, B, K] rows of src (dense) into dst (dense), time reversed: one copy per step */
function reverseInto(dst: RawTensor, src: RawTensor, T: number, per: number): void {
  const dev = src.device;
  const bytes = per * DTYPE_INFO[src.dtype].size;
  for (let t = 0; t < T; t++)
    dev.runtime.copyDtoDAsync(at(dst, (T - 1 - t) * per), at(src, t * per), bytes, dev.stream);
}

/** x [T, B, I] dense, in the library's time order */
function libraryInput(x: RawTensor, reverse: boolean, temps: RawTensor[]): RawTensor {
  const X = denseIn(x, temps);
  if (!reverse) return X;
  const [T, B, I] = x.layout.shape as [number, number, number];
  const r = RawTensor.empty([T, B, I], x.dtype, x.device);
  temps.push(r);
  reverseInto(r, X, T, B * I);
  return r;
}

function bytes(dev: RawTensor['device'], n: number, temps: RawTensor[]): RawTensor {
  const t = RawTensor.empty([Math.max(n, 1)], 'u8', dev);
  temps.push(t);
  return t;
}

interface Packed {
  readonly shape: RnnShape;
  readonly sizes: RnnSizes;
  readonly dnn: DnnApi;
  readonly space: RawTensor;
  readonly offsets: ReturnType<DnnApi['rnnWeightOffsets']>;
  readonly buffers: RnnBuffers;
}

/** the library's buffers for the call, the PyTorch weights copied into its weight space */
function prepare(a: RnnArgs, training: boolean, temps: RawTensor[]): Packed {
  const [x, , , wIh, wHh, bIh, bHh] = a;
  const d = rnnDims(a);
  const dev = x.device;
  const dnn = dev.dnn('rnn');
  const shape: RnnShape = { dtype: x.dtype as DnnDType, mode: d.mode, T: d.T, B: d.B, I: d.I, H: d.H, bias: d.bias };
  const sizes = dnn.rnnSizes(shape, training, dev.stream);
  const space = bytes(dev, sizes.weightBytes, temps);
  // the library's padding between tensors, if any, holds zeros rather than whatever was there
  dev.runtime.memsetAsync(at(space), 0, sizes.weightBytes, dev.stream);
  const offsets = dnn.rnnWeightOffsets(shape, at(space), sizes.weightBytes);
  const el = DTYPE_INFO[x.dtype].size;
  const gates = d.G / d.H;
  const put = (src: RawTensor | null, offs: readonly number[], per: number, name: string) => {
    if (!src) return;
    const S = denseIn(src, temps);
    if (offs.length !== gates)
      throw new GpuError(`rnn: ${dnn.name} reported ${offs.length} ${name} offsets for ${gates} gates`, 0, 'rnn');
    offs.forEach((o, g) => {
      if (!(o >= 0 && o + per * el <= sizes.weightBytes))
        throw new GpuError(
          `rnn: ${dnn.name} placed gate ${g} of ${name} at byte ${o}, outside its ${sizes.weightBytes}-byte weight space`,
          0,
          'rnn',
        );
      dev.runtime.copyDtoDAsync(space.storage.ptrAt(o), at(S, g * per), per * el, dev.stream);
    });
  };
  put(wIh, offsets.wIh, d.H * d.I, 'weightIh');
  put(wHh, offsets.wHh, d.H * d.H, 'weightHh');
  put(bIh, offsets.bIh, d.H, 'biasIh');
  put(bHh, offsets.bHh, d.H, 'biasHh');
  const ws = sizes.workspaceBytes > 0 ? bytes(dev, sizes.workspaceBytes, temps) : null;
  const rs = sizes.reserveBytes > 0 ? bytes(dev, sizes.reserveBytes, temps) : null;
  const lengths = RawTensor.empty([d.B], 'u32', dev);
  temps.push(lengths);
  constSet(lengths, d.T);
  const buffers: RnnBuffers = {
    ...shape,
    weights: at(space),
    weightBytes: sizes.weightBytes,
    workspace: ws ? at(ws) : null,
    workspaceBytes: sizes.workspaceBytes,
    reserve: rs ? at(rs) : null,
    reserveBytes: sizes.reserveBytes,
    seqLengths: at(lengths),
  };
  return { shape, sizes, dnn, space, offsets, buffers };
}

/** [T (+1 for LSTM), B, H]: the hidden states in time order, then (LSTM) the final cell state */
export function rnn(...a: RnnArgs): RawTensor {
  const [x, h0, c0, , , , , mode, reverse] = a;
  const d = rnnDims(a);
  const dev = x.device;
  const out = RawTensor.empty([rnnOutRows(d), d.B, d.H], x.dtype, dev);
  return filled(out, (temps) => {
    const p = prepare(a, false, temps);
    const X = libraryInput(x, reverse, temps);
    const Y = reverse ? RawTensor.empty([d.T, d.B, d.H], x.dtype, dev) : out;
    if (reverse) temps.push(Y);
    p.dnn.rnnForward(
      {
        ...p.buffers,
        training: false,
        x: at(X),
        hx: h0 ? at(denseIn(h0, temps)) : null,
        cx: c0 ? at(denseIn(c0, temps)) : null,
        y: at(Y),
        hy: null,
        cy: mode === 'lstm' ? at(out, d.T * d.B * d.H) : null,
      },
      dev.stream,
    );
    if (reverse) reverseInto(out, Y, d.T, d.B * d.H);
  });
}

/** the flat gradients of rnnGradParts from the output's gradient g */
export function rnnBackward(g: RawTensor, ...a: RnnArgs): RawTensor {
  const [x, h0, c0, , , , , mode, reverse] = a;
  const d = rnnDims(a);
  const dev = x.device;
  const el = DTYPE_INFO[x.dtype].size;
  const parts = rnnGradParts(a);
  const offset: Record<string, number> = {};
  let total = 0;
  for (const p of parts) {
    offset[p.name] = total;
    total += numel(p.shape);
  }
  const flat = RawTensor.empty([total], x.dtype, dev);
  return filled(flat, (temps) => {
    const p = prepare(a, true, temps);
    const X = libraryInput(x, reverse, temps);
    const hx = h0 ? at(denseIn(h0, temps)) : null;
    const cx = c0 ? at(denseIn(c0, temps)) : null;
    const n = d.B * d.H;
    const Y = RawTensor.empty([d.T, d.B, d.H], x.dtype, dev);
    temps.push(Y);
    p.dnn.rnnForward({ ...p.buffers, training: true, x: at(X), hx, cx, y: at(Y), hy: null, cy: null }, dev.stream);
    const G = denseIn(g, temps);
    let dy = G;
    if (reverse) {
      dy = RawTensor.empty([d.T, d.B, d.H], x.dtype, dev);
      temps.push(dy);
      reverseInto(dy, G, d.T, n);
    }
    // the final hidden state is the last output row, whose gradient dy already carries
    const zeros = RawTensor.empty([n], x.dtype, dev);
    temps.push(zeros);
    constSet(zeros, 0);
    const DX = reverse ? RawTensor.empty([d.T, d.B, d.I], x.dtype, dev) : null;
    if (DX) temps.push(DX);
    const dweights = bytes(dev, p.sizes.weightBytes, temps);
    dev.runtime.memsetAsync(at(dweights), 0, p.sizes.weightBytes, dev.stream);
    const b = {
      ...p.buffers,
      x: at(X),
      hx,
      cx,
      y: at(Y),
      dy: at(dy),
      dhy: at(zeros),
      dcy: mode === 'lstm' ? at(G, d.T * n) : null,
      dx: DX ? at(DX) : at(flat, offset.x),
      dhx: h0 ? at(flat, offset.h0) : null,
      dcx: c0 ? at(flat, offset.c0) : null,
      dweights: at(dweights),
    };
    p.dnn.rnnBackwardData(b, dev.stream);
    // the library adds into the zeroed gradient space
    p.dnn.rnnBackwardWeights(b, dev.stream);
    if (DX) {
      const dst = flat.narrow(0, offset.x!, d.T * d.B * d.I);
      try {
        reverseInto(dst, DX, d.T, d.B * d.I);
      } finally {
        dst.dispose();
      }
    }
    const take = (name: string, offs: readonly number[], per: number) => {
      if (!(name in offset)) return;
      offs.forEach((o, gate) =>
        dev.runtime.copyDtoDAsync(
          at(flat, offset[name]! + gate * per),
          dweights.storage.ptrAt(o),
          per * el,
          dev.stream,
        ),
      );
    };
    take('wIh', p.offsets.wIh, d.H * d.I);
    take('wHh', p.offsets.wHh, d.H * d.H);
    take('bIh', p.offsets.bIh, d.H);
    take('bHh', p.offsets.bHh, d.H);
  });
}
