// Argument checks shared by every collective: the tensor is alive, on the communicator's device,
// contiguous (the library reads and writes one flat run of elements), of a dtype that agrees, and
// an output never half-overlaps its input. Errors name the op, the rank, the shapes and dtypes.
import type { Device } from '../device/device.ts';
import type { Tensor } from '../tensor/tensor.ts';
import { DTypeError, ShapeError, TensorError, fmtShape } from '../core/errors.ts';

/** who is asking: one rank's communicator, for the messages */
export interface RankCtx {
  readonly op: string;
  readonly rank: number;
  readonly size: number;
  readonly device: Device;
}

export const where = (c: RankCtx): string => `${c.op} on rank ${c.rank} of ${c.size} (${c.device})`;
export const desc = (t: Tensor): string => `${t.dtype} ${fmtShape(t.layout.shape)}`;

/** a tensor a collective reads or writes: alive, on this rank's device, contiguous */
export function checkTensor(c: RankCtx, role: string, t: Tensor): void {
  t.check(c.op);
  if (t.device !== c.device) {
    throw new TensorError(
      `${where(c)}: the ${role} tensor (${desc(t)}) is on ${t.device}, not on the communicator's device ${c.device}`,
    );
  }
  if (!t.isContiguous()) {
    throw new ShapeError(
      `${where(c)}: the ${role} tensor (${desc(t)}, strides [${t.layout.strides.join(', ')}]) is not contiguous; ` +
        'call .contiguous() first (collectives read and write one flat run of elements)',
    );
  }
}

export function checkSameDType(c: RankCtx, input: Tensor, out: Tensor): void {
  if (out.dtype !== input.dtype)
    throw new DTypeError(`${where(c)}: out is ${desc(out)} but the input is ${desc(input)}: the dtypes must match`);
}

export function checkOutNumel(c: RankCtx, input: Tensor, out: Tensor, want: number, rule: string): void {
  if (out.numel !== want) {
    throw new ShapeError(
      `${where(c)}: out ${desc(out)} has ${out.numel} elements, needs ${want} (${rule}; input ${desc(input)})`,
    );
  }
}

export function checkSameShape(c: RankCtx, input: Tensor, out: Tensor): void {
  const a = input.layout.shape,
    b = out.layout.shape;
  if (a.length !== b.length || a.some((n, i) => n !== b[i])) {
    throw new ShapeError(`${where(c)}: out ${desc(out)} must have the input's shape ${fmtShape(a)}`);
  }
}

export function checkPeer(c: RankCtx, what: string, peer: number): void {
  if (!Number.isInteger(peer) || peer < 0 || peer >= c.size) {
    throw new TensorError(`${where(c)}: ${what} ${peer} is not a rank of this communicator (0 .. ${c.size - 1})`);
  }
}

/**
 * An output that shares memory with the input must be the input exactly, or have the input start
 * `inPlaceOffset` elements after its own start (all-gather: rank r's input is its part of out, at
 * r * count; reduce-scatter: -r * count, out is rank r's part of the input): the library's own
 * in-place forms. Any other overlap would read what it already wrote.
 */
export function checkAliasing(c: RankCtx, input: Tensor, out: Tensor, inPlaceOffset = 0): void {
  if (input.storage !== out.storage) return;
  const a0 = input.layout.offset,
    a1 = a0 + input.numel,
    b0 = out.layout.offset,
    b1 = b0 + out.numel;
  if (a1 <= b0 || b1 <= a0 || input.numel === 0 || out.numel === 0) return;
  if (a0 - b0 === inPlaceOffset) return;
  throw new TensorError(
    `${where(c)}: out (${desc(out)}, elements ${b0}..${b1} of its storage) overlaps the input (${desc(input)}, ` +
      `elements ${a0}..${a1}) without being its in-place form`,
  );
}
