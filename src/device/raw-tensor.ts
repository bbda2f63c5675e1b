// RawTensor: a storage seen through a layout (shape, strides, offset), with a dtype. It is what
// the backends compute on: they take RawTensors and return new ones, and never see Tensor (which
// extends this class with the user-facing methods, scope tracking and, later, autograd). Views
// share the storage; each RawTensor holds one reference to it until dispose().
import type { DType } from '../core/dtype.ts';
import { Layout, checkShape, normDim, numel, type Shape } from '../core/layout.ts';
import { DisposedError, ShapeError, TensorError, fmtShape } from '../core/errors.ts';
import type { Device } from './device.ts';
import { Storage } from './storage.ts';

/** the constructor every RawTensor class shares, so a view keeps its tensor's class */
type ViewOf<T> = new (storage: Storage, layout: Layout, dtype: DType) => T;

export class RawTensor {
  private disposed = false;
  /** its place in autograd (tensor/autograd.ts); null: it takes no part */
  gradState: { readonly node: unknown } | null = null;

  constructor(
    readonly storage: Storage,
    readonly layout: Layout,
    readonly dtype: DType,
  ) {
    if (storage.dtype !== dtype)
      throw new TensorError(`internal: storage dtype ${storage.dtype} != tensor dtype ${dtype}`);
    storage.retain();
  }

  /** an uninitialized contiguous tensor on `device` */
  static empty(shape: Shape, dtype: DType, device: Device): RawTensor {
    checkShape('empty', shape);
    return new RawTensor(Storage.alloc(device, dtype, numel(shape)), Layout.contiguous(shape), dtype);
  }

  get device(): Device {
    return this.storage.device;
  }
  get shape(): number[] {
    return [...this.layout.shape];
  }
  get strides(): number[] {
    return [...this.layout.strides];
  }
  get rank(): number {
    return this.layout.rank;
  }
  get numel(): number {
    return this.layout.numel;
  }
  get isDisposed(): boolean {
    return this.disposed;
  }
  dim(d: number): number {
    return this.layout.shape[normDim('dim', d, this.rank)]!;
  }
  isContiguous(): boolean {
    return this.layout.isContiguous();
  }
  describe(): string {
    return `Tensor(${fmtShape(this.layout.shape)}, ${this.dtype}, ${this.device})`;
  }
  toString(): string {
    return this.describe();
  }

  /** throws DisposedError when this tensor (or its storage) is gone; ops call it first */
  check(op: string): this {
    if (this.disposed || this.storage.isReleased)
      throw new DisposedError(`${op}: ${this.describe()} was used after dispose()`);
    return this;
  }

  /** a new view of this tensor's storage, of the same class (a Tensor's view is a Tensor) */
  view(layout: Layout): this {
    this.check('view');
    return new (this.constructor as ViewOf<this>)(this.storage, layout, this.dtype);
  }
  /** a view with another shape; the layout must allow it (backends use it where that is known) */
  viewAs(shape: Shape): this {
    const l = this.layout.reshapeView(shape);
    if (!l) throw new TensorError(`internal: ${this.describe()} cannot be viewed as ${fmtShape(shape)} without a copy`);
    return this.view(l);
  }

  // ---- views: no copy, no kernel ---------------------------------------------------------------
  transpose(a: number, b: number): this {
    this.check('transpose');
    return this.view(this.layout.transpose(normDim('transpose', a, this.rank), normDim('transpose', b, this.rank)));
  }
  /** transpose of the last two dims */
  get T(): this {
    return this.transpose(-2, -1);
  }
  permute(dims: readonly number[]): this {
    this.check('permute');
    const d = dims.map((x) => normDim('permute', x, this.rank));
    if (d.length !== this.rank || new Set(d).size !== d.length) {
      throw new ShapeError(
        `permute: dims [${dims.join(', ')}] are not a permutation of ${this.rank} dims (tensor ${fmtShape(this.layout.shape)})`,
      );
    }
    return this.view(this.layout.permute(d));
  }
  narrow(dim: number, start: number, len: number): this {
    this.check('narrow');
    const d = normDim('narrow', dim, this.rank);
    const n = this.layout.shape[d]!;
    if (!Number.isInteger(start) || !Number.isInteger(len) || start < 0 || len < 0 || start + len > n) {
      throw new ShapeError(
        `narrow: start ${start} + len ${len} out of range for dim ${d} of size ${n} (tensor ${fmtShape(this.layout.shape)})`,
      );
    }
    return this.view(this.layout.narrow(d, start, len));
  }
  /** Python-style slice along one dim: [start, end) by step (negative start/end count from the end) */
  slice(dim: number, start = 0, end?: number, step = 1): this {
    this.check('slice');
    const d = normDim('slice', dim, this.rank);
    const n = this.layout.shape[d]!;
    if (!Number.isInteger(step) || step < 1)
      throw new ShapeError(`slice: step must be a positive integer, got ${step}`);
    const clamp = (x: number) => Math.min(Math.max(x < 0 ? x + n : x, 0), n);
    const s = clamp(start),
      e = Math.max(clamp(end ?? n), s);
    const len = Math.ceil((e - s) / step);
    const narrowed = this.layout.narrow(d, s, len);
    const strides = [...narrowed.strides];
    strides[d] = strides[d]! * step;
    return this.view(new Layout(narrowed.shape, strides, narrowed.offset));
  }
  /** broadcast to `shape` without copying (stride 0 on expanded dims) */
  broadcastAs(shape: Shape): this {
    this.check('broadcastAs');
    const extra = shape.length - this.rank;
    const ok = extra >= 0 && this.layout.shape.every((n, i) => n === shape[i + extra] || n === 1);
    if (!ok) throw new ShapeError(`broadcastAs: cannot broadcast ${fmtShape(this.layout.shape)} to ${fmtShape(shape)}`);
    return this.view(this.layout.broadcastAs(shape));
  }
  /** like broadcastAs; -1 keeps a dim */
  expand(shape: Shape): this {
    const extra = shape.length - this.rank;
    return this.broadcastAs(shape.map((n, i) => (n === -1 && i >= extra ? this.layout.shape[i - extra]! : n)));
  }
  squeeze(dim?: number): this {
    this.check('squeeze');
    if (dim === undefined) {
      let l = this.layout;
      for (let i = l.rank - 1; i >= 0; i--) if (l.shape[i] === 1) l = l.squeeze(i);
      return this.view(l);
    }
    const d = normDim('squeeze', dim, this.rank);
    if (this.layout.shape[d] !== 1) return this.view(this.layout);
    return this.view(this.layout.squeeze(d));
  }
  unsqueeze(dim: number): this {
    this.check('unsqueeze');
    return this.view(this.layout.unsqueeze(normDim('unsqueeze', dim, this.rank + 1)));
  }
  /** n nearly equal views along dim (the last may be smaller) */
  chunk(n: number, dim = 0): this[] {
    const d = normDim('chunk', dim, this.rank);
    if (!Number.isInteger(n) || n < 1) throw new ShapeError(`chunk: chunks must be a positive integer, got ${n}`);
    const size = this.layout.shape[d]!,
      step = Math.ceil(size / n);
    const out: this[] = [];
    for (let s = 0; s < size; s += step) out.push(this.narrow(d, s, Math.min(step, size - s)));
    return out;
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.storage.release();
  }
  [Symbol.dispose](): void {
    this.dispose();
  }
}

/** t with `dim` moved last, as a new view the caller disposes (a row op's operand) */
export function lastDimView(t: RawTensor, dim: number): RawTensor {
  const last = t.rank - 1;
  return t.rank === 0 || dim === last ? t.view(t.layout) : t.transpose(dim, last);
}
/** undoes lastDimView on a result `y` computed in its layout: y itself, or (y disposed) a view
 *  with the last dim moved back to `dim` */
export function fromLastDim(y: RawTensor, dim: number): RawTensor {
  const last = y.rank - 1;
  if (y.rank === 0 || dim === last) return y;
  const back = y.transpose(dim, last);
  y.dispose();
  return back;
}

/** x as a new view when it is contiguous, else a contiguous copy made with copy(dst, src) */
export function contiguousVia(x: RawTensor, copy: (dst: RawTensor, src: RawTensor) => void): RawTensor {
  return x.isContiguous() ? x.view(x.layout) : copyVia(x, copy);
}

/** a new contiguous copy of x made with copy(dst, src) */
export function copyVia(x: RawTensor, copy: (dst: RawTensor, src: RawTensor) => void): RawTensor {
  const out = RawTensor.empty(x.layout.shape, x.dtype, x.device);
  try {
    copy(out, x);
  } catch (e) {
    out.dispose();
    throw e;
  }
  return out;
}

/** x with another shape (the same element count): a view where the layout allows, else a view
 *  of a contiguous copy made with copy(dst, src) */
export function reshapeVia(
  x: RawTensor,
  shape: readonly number[],
  copy: (dst: RawTensor, src: RawTensor) => void,
): RawTensor {
  const l = x.layout.reshapeView(shape);
  if (l) return x.view(l);
  const c = contiguousVia(x, copy);
  try {
    return c.viewAs(shape);
  } finally {
    c.dispose();
  }
}
