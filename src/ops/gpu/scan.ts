// GPU cumsum from GEMMs on rocBLAS / cuBLAS: a row of n is cut into blocks of B; each block's
// inclusive prefix sums are one GEMM with an upper-triangular ones matrix [B, B], and the
// blocks' offsets are the exclusive prefix sums of their totals, the same scan one level up
// (recursive, so any length works). Work is rows * n * B multiply-adds: far below a GEMM's
// ceiling at the sizes sampling uses (vocabularies of 10^5), and no kernel of its own to keep.
import { Tensor } from '../../tensor.ts';
import type { Device } from '../../device.ts';
import { keep as keepAlive } from '../../scope.ts';

const BLOCK = 256;

// The triangles are kept per device, dtype and size (a few at most): building one uploads its
// index vector, which a graph capture cannot record, so a step replayed from a graph finds the
// ones an eager run of the same step made.
const KEEP_TRIANGLES = 8;
const triangles = new WeakMap<Device, Map<string, Tensor>>();

/** [n, n] ones on and above the diagonal, of x's dtype and device (a shared tensor: never disposed by callers) */
function upper(x: Tensor, n: number): Tensor {
  let m = triangles.get(x.device);
  if (!m) { m = new Map(); triangles.set(x.device, m); }
  const key = `${x.dtype}:${n}`;
  const hit = m.get(key);
  if (hit) { m.delete(key); m.set(key, hit); return hit; }
  // outlives any tidy() scope it was first made in
  const t = keepAlive(buildUpper(x, n));
  m.set(key, t);
  if (m.size > KEEP_TRIANGLES) { const [k, old] = m.entries().next().value!; m.delete(k); old.dispose(); }
  return t;
}

function buildUpper(x: Tensor, n: number): Tensor {
  const dev = x.device;
  const i = Tensor.arange(0, n, 1, { dtype: 'f32', device: dev });
  const col = i.unsqueeze(0), row = i.unsqueeze(1);
  const on = col.ge(row);
  const out = on.toDtype(x.dtype);
  for (const t of [i, col, row, on]) t.dispose();
  return out;
}

/** inclusive prefix sums along the last dim of a contiguous [rows, n] tensor */
function scanRows(x: Tensor): Tensor {
  const [rows, n] = x.layout.shape as [number, number];
  const temps: Tensor[] = [];
  const keep = (t: Tensor): Tensor => { temps.push(t); return t; };
  try {
    if (n <= BLOCK) return x.matmul(upper(x, n));
    const nb = Math.ceil(n / BLOCK), padded = nb * BLOCK;
    const xp = padded === n ? x : keep(Tensor.cat([x, keep(Tensor.zeros([rows, padded - n], { dtype: x.dtype, device: x.device }))], 1));
    const local = keep(keep(keep(xp.reshape([rows * nb, BLOCK])).matmul(upper(x, BLOCK))).reshape([rows, nb, BLOCK]));
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
