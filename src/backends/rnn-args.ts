// The arguments both backends of the recurrent op take, as its check leaves them: one layer, one
// direction, sequence-first x [T, B, I], PyTorch's weight shapes and gate order.
import type { RawTensor } from '../device/raw-tensor.ts';

export type RnnMode = 'lstm' | 'gru';

/** gates per cell: LSTM i, f, g, o; GRU r, z, n */
export const RNN_GATES: Readonly<Record<RnnMode, number>> = { lstm: 4, gru: 3 };

/** the op's backend arguments: x, h0, c0, wIh, wHh, bIh, bHh, mode, reverse */
export type RnnArgs = [
  RawTensor,
  RawTensor | null,
  RawTensor | null,
  RawTensor,
  RawTensor,
  RawTensor | null,
  RawTensor | null,
  RnnMode,
  boolean,
];

/** the sizes read from checked arguments */
export interface RnnDims {
  readonly mode: RnnMode;
  readonly reverse: boolean;
  readonly T: number;
  readonly B: number;
  readonly I: number;
  readonly H: number;
  /** gates * H */
  readonly G: number;
  readonly bias: boolean;
}

export function rnnDims(a: RnnArgs): RnnDims {
  const [x, , , , wHh, bIh, , mode, reverse] = a;
  const [T, B, I] = x.layout.shape as [number, number, number];
  const H = wHh.layout.shape[1]!;
  return { mode, reverse, T, B, I, H, G: RNN_GATES[mode] * H, bias: bIh !== null };
}

/** rows of the forward's output: T hidden states, and for LSTM the final cell state after them */
export const rnnOutRows = (d: RnnDims): number => d.T + (d.mode === 'lstm' ? 1 : 0);

/**
 * The backward's flat result, in this order: dx [T, B, I], dh0 [B, H] (when h0 was given),
 * dc0 [B, H] (when c0 was given), dWih [G, I], dWhh [G, H], dbIh [G], dbHh [G] (with biases).
 */
export function rnnGradParts(a: RnnArgs): { name: string; shape: number[] }[] {
  const d = rnnDims(a);
  const parts = [{ name: 'x', shape: [d.T, d.B, d.I] }];
  if (a[1]) parts.push({ name: 'h0', shape: [d.B, d.H] });
  if (a[2]) parts.push({ name: 'c0', shape: [d.B, d.H] });
  parts.push({ name: 'wIh', shape: [d.G, d.I] }, { name: 'wHh', shape: [d.G, d.H] });
  if (d.bias) parts.push({ name: 'bIh', shape: [d.G] }, { name: 'bHh', shape: [d.G] });
  return parts;
}
