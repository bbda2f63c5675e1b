// Shapes, strides and views. A Layout says where each logical element of a tensor lives in its
// storage (offset + sum(index[i] * strides[i]), in elements); views only make new Layouts.
import { ShapeError, fmtShape } from './errors.ts';

export type Shape = readonly number[];

export class Layout {
  constructor(
    readonly shape: Shape,
    readonly strides: readonly number[],
    readonly offset = 0,
  ) {}

  static contiguous(shape: Shape, offset = 0): Layout {
    return new Layout(shape, contiguousStrides(shape), offset);
  }

  get rank(): number {
    return this.shape.length;
  }
  get numel(): number {
    return numel(this.shape);
  }
  isContiguous(): boolean {
    let expected = 1;
    for (let i = this.shape.length - 1; i >= 0; i--) {
      if (this.shape[i] !== 1 && this.strides[i] !== expected) return false;
      expected *= this.shape[i]!;
    }
    return true;
  }
  /** true when the elements are contiguous but possibly at an offset */
  get isDense(): boolean {
    return this.isContiguous();
  }

  transpose(a: number, b: number): Layout {
    const s = [...this.shape],
      st = [...this.strides];
    [s[a], s[b]] = [s[b]!, s[a]!];
    [st[a], st[b]] = [st[b]!, st[a]!];
    return new Layout(s, st, this.offset);
  }
  permute(dims: readonly number[]): Layout {
    return new Layout(
      dims.map((d) => this.shape[d]!),
      dims.map((d) => this.strides[d]!),
      this.offset,
    );
  }
  narrow(dim: number, start: number, len: number): Layout {
    const s = [...this.shape];
    s[dim] = len;
    return new Layout(s, this.strides, this.offset + (len > 0 ? start * this.strides[dim]! : 0));
  }
  /** shape with stride 0 on broadcast dims; `shape` must be a valid broadcast target */
  broadcastAs(shape: Shape): Layout {
    const extra = shape.length - this.shape.length;
    const strides = shape.map((n, i) => {
      if (i < extra) return 0;
      const have = this.shape[i - extra]!;
      return have === n ? this.strides[i - extra]! : 0;
    });
    return new Layout(shape, strides, this.offset);
  }
  /** a reshape that needs no copy, or null when the strides do not allow one */
  reshapeView(shape: Shape): Layout | null {
    if (this.isContiguous()) return Layout.contiguous(shape, this.offset);
    return null;
  }
  squeeze(dim: number): Layout {
    return new Layout(
      this.shape.filter((_, i) => i !== dim),
      this.strides.filter((_, i) => i !== dim),
      this.offset,
    );
  }
  unsqueeze(dim: number): Layout {
    const s = [...this.shape],
      st = [...this.strides];
    const stride = dim < this.shape.length ? this.strides[dim]! * this.shape[dim]! : 1;
    s.splice(dim, 0, 1);
    st.splice(dim, 0, stride);
    return new Layout(s, st, this.offset);
  }
  /** storage index of every logical element, in row-major order */
  indices(): Int32Array | Float64Array {
    const n = this.numel;
    const out = n < 2 ** 31 ? new Int32Array(n) : new Float64Array(n);
    const rank = this.shape.length;
    if (rank === 0) {
      if (n) out[0] = this.offset;
      return out;
    }
    const idx = new Array<number>(rank).fill(0);
    let pos = this.offset;
    for (let i = 0; i < n; i++) {
      out[i] = pos;
      for (let d = rank - 1; d >= 0; d--) {
        idx[d]!++;
        pos += this.strides[d]!;
        if (idx[d]! < this.shape[d]!) break;
        pos -= this.strides[d]! * this.shape[d]!;
        idx[d] = 0;
      }
    }
    return out;
  }
  /** [min, max] storage element touched, for bounds checks; null for an empty view */
  span(): [number, number] | null {
    if (this.numel === 0) return null;
    let lo = this.offset,
      hi = this.offset;
    this.shape.forEach((n, i) => {
      const s = this.strides[i]! * (n - 1);
      if (s < 0) lo += s;
      else hi += s;
    });
    return [lo, hi];
  }
}

export function numel(shape: Shape): number {
  return shape.reduce((a, b) => a * b, 1);
}

export function contiguousStrides(shape: Shape): number[] {
  const st = new Array<number>(shape.length);
  let acc = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    st[i] = acc;
    acc *= shape[i]!;
  }
  return st;
}

export function sameShape(a: Shape, b: Shape): boolean {
  return a.length === b.length && a.every((n, i) => n === b[i]);
}

/** numpy broadcasting of two shapes; `op` names the caller in the error */
export function broadcastShapes(op: string, a: Shape, b: Shape): number[] {
  const r = Math.max(a.length, b.length);
  const out = new Array<number>(r);
  for (let i = 0; i < r; i++) {
    const x = a[a.length - r + i] ?? 1,
      y = b[b.length - r + i] ?? 1;
    if (x !== y && x !== 1 && y !== 1) {
      throw new ShapeError(
        `${op}: shapes ${fmtShape(a)} and ${fmtShape(b)} cannot be broadcast together (dim ${i}: ${x} vs ${y})`,
      );
    }
    out[i] = x === 1 ? y : x;
  }
  return out;
}

/** a dim index that may be negative, checked against rank */
export function normDim(op: string, dim: number, rank: number): number {
  const d = dim < 0 ? dim + rank : dim;
  if (!Number.isInteger(d) || d < 0 || d >= rank) {
    throw new ShapeError(`${op}: dim ${dim} out of range for a tensor of rank ${rank}`);
  }
  return d;
}

export function checkShape(op: string, shape: Shape): void {
  for (const n of shape) {
    if (!Number.isInteger(n) || n < 0) throw new ShapeError(`${op}: invalid shape ${fmtShape(shape)}`);
  }
}
