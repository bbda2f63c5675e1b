// GPU cumsum from GEMMs on rocBLAS / cuBLAS: a row of n is cut into blocks of B; each block's
// inclusive prefix sums are one GEMM with an upper-triangular ones matrix [B, B], and the
// blocks' offsets are the exclusive prefix sums of their totals, the same scan one level up
// (recursive, so any length works). Work is rows * n * B multiply-adds: far below a GEMM's
// ceiling at the sizes sampling uses (vocabularies of 10^5), and no kernel of its own to keep.
import { Tensor } from '../../tensor.ts';

const BLOCK = 256;

/** [n, n] ones on and above the diagonal (strict: only above), of x's dtype and device */
function upper(x: Tensor, n: number, strict: boolean): Tensor {
  const dev = x.device;
  const i = Tensor.arange(0, n, 1, { dtype: 'f32', device: dev });
  const col = i.unsqueeze(0), row = i.unsqueeze(1);
  const keep = strict ? col.gt(row) : col.ge(row);
  const out = keep.toDtype(x.dtype);
  for (const t of [i, col, row, keep]) t.dispose();
  return out;
}

/** inclusive prefix sums along the last dim of a contiguous [rows, n] tensor */
function scanRows(x: Tensor): Tensor {
  const [rows, n] = x.layout.shape as [number, number];
  const temps: Tensor[] = [];
  const keep = (t: Tensor): Tensor => { temps.push(t); return t; };
  try {
    if (n <= BLOCK) return x.matmul(keep(upper(x, n, false)));
    const nb = Math.ceil(n / BLOCK), padded = nb * BLOCK;
    const xp = padded === n ? x : keep(Tensor.cat([x, keep(Tensor.zeros([rows, padded - n], { dtype: x.dtype, device: x.device }))], 1));
    const local = keep(keep(keep(xp.reshape([rows * nb, BLOCK])).matmul(keep(upper(x, BLOCK, false)))).reshape([rows, nb, BLOCK]));
    const totals = keep(keep(local.narrow(2, BLOCK - 1, 1)).reshape([rows, nb]));
    const before = keep(keep(scanRows(totals)).sub(totals));
    const out = keep(keep(local.add(keep(before.unsqueeze(2)))).reshape([rows, padded]));
    if (padded === n) { temps.pop(); return out; }
    return out.narrow(1, 0, n).contiguous();
  } finally {
    for (const t of temps) t.dispose();
  }
}

export function cumsum(x: Tensor, dim: number): Tensor {
  const shape = x.layout.shape;
  const n = shape[dim]!;
  if (x.numel === 0) return Tensor.empty(shape, x.dtype, x.device);
  const last = x.rank - 1;
  const moved = dim === last ? x : x.transpose(dim, last);
  const flat = moved.contiguous();
  const rows = flat.reshape([flat.numel / n, n]);
  const scanned = scanRows(rows);
  const back = scanned.reshape(moved.layout.shape);
  const out = dim === last ? back : back.transpose(dim, last).contiguous();
  for (const t of [moved, flat, rows, scanned, back]) if (t !== x && t !== out) t.dispose();
  return out;
}
