// CPU reference for softmax, the norms, rotary embeddings, batch norm and attention: every sum in
// f64, one rounding to the output dtype on store.
import type { RawTensor } from '../../device/raw-tensor.ts';
import { DTYPE_INFO } from '../../core/dtype.ts';
import {
  forEachLine,
  fromNumbers,
  fromRaw,
  gather,
  outArray,
  readBroadcast,
  readNumbers,
  scatter,
  scatterStrided,
} from './util.ts';
import type { AttentionParams } from '../options.ts';

export type RopeLayout = 'halves' | 'interleaved' | 'thd';

/** x rank 0 counts as one element along dim 0; each line along dim is read, computed and written on its own */
export function softmax(x: RawTensor, dim: number, log: boolean): RawTensor {
  const shape = x.layout.shape;
  let inner = 1;
  for (let i = dim + 1; i < shape.length; i++) inner *= shape[i]!;
  const n = shape.length === 0 ? 1 : shape[dim]!;
  const sd = shape.length === 0 ? 0 : x.layout.strides[dim]!;
  const dtype = x.dtype,
    host = x.storage.host;
  const out = outArray(dtype, x.numel);
  const v = new Float64Array(n),
    tmp = new DTYPE_INFO[dtype].hostArray(inner > 1 ? n : 0);
  if (n > 0)
    forEachLine(x, dim, (start, p) => {
      gather(dtype, host, start, sd, v, 0, n);
      // Math.max passes NaN on; a row of -inf gets max -inf and so NaN (-inf - -inf), like PyTorch
      let m = -Infinity;
      for (let k = 0; k < n; k++) m = Math.max(m, v[k]!);
      let s = 0;
      for (let k = 0; k < n; k++) s += Math.exp(v[k]! - m);
      const logS = Math.log(s);
      for (let k = 0; k < n; k++) {
        const z = v[k]! - m;
        v[k] = log ? z - logS : Math.exp(z) / s;
      }
      // line p is (o, i) with p = o inner + i: it starts at o n inner + i in the output
      const o = Math.floor(p / inner);
      scatterStrided(dtype, v, 0, out, o * n * inner + (p - o * inner), inner, n, tmp);
    });
  return fromRaw(out, shape, dtype, x.device);
}

/** calls fn(row, r) with each row of x over its last dim read into row (h elements), r counting rows */
function forEachRow(x: RawTensor, h: number, fn: (row: Float64Array, r: number) => void): void {
  if (h === 0 || x.numel === 0) return;
  const row = new Float64Array(h),
    host = x.storage.host,
    s = x.layout.strides[x.rank - 1]!;
  forEachLine(x, x.rank - 1, (start, r) => {
    gather(x.dtype, host, start, s, row, 0, h);
    fn(row, r);
  });
}

/** rows over the last dim: y = (x - mean) / sqrt(var + eps) * w + b, var biased */
export function layerNorm(x: RawTensor, w: RawTensor, b: RawTensor | null, eps: number): RawTensor {
  const wv = readNumbers(w),
    bv = b ? readNumbers(b) : null;
  const h = wv.length,
    out = outArray(x.dtype, x.numel);
  forEachRow(x, h, (v, r) => {
    let mean = 0;
    for (let i = 0; i < h; i++) mean += v[i]!;
    mean /= h;
    let vr = 0;
    for (let i = 0; i < h; i++) vr += (v[i]! - mean) ** 2;
    const inv = 1 / Math.sqrt(vr / h + eps);
    for (let i = 0; i < h; i++) v[i] = (v[i]! - mean) * inv * wv[i]! + (bv ? bv[i]! : 0);
    scatter(x.dtype, v, 0, out, r * h, h);
  });
  return fromRaw(out, x.layout.shape, x.dtype, x.device);
}

/** rows over the last dim: y = x / sqrt(mean(x^2) + eps) * w */
export function rmsNorm(x: RawTensor, w: RawTensor, eps: number): RawTensor {
  const wv = readNumbers(w);
  const h = wv.length,
    out = outArray(x.dtype, x.numel);
  forEachRow(x, h, (v, r) => {
    let ss = 0;
    for (let i = 0; i < h; i++) ss += v[i]! ** 2;
    const inv = 1 / Math.sqrt(ss / h + eps);
    for (let i = 0; i < h; i++) v[i] = v[i]! * inv * wv[i]!;
    scatter(x.dtype, v, 0, out, r * h, h);
  });
  return fromRaw(out, x.layout.shape, x.dtype, x.device);
}

/**
 * x is [b, h, t, d] ('halves', 'interleaved') or [b, t, h, d] ('thd'); cos and sin are
 * [t, d/2]. Each pair (x[a], x[c]) becomes (x[a] cos - x[c] sin, x[c] cos + x[a] sin), with
 * (a, c) = (i, i + d/2) for the halves layouts and (2i, 2i + 1) for interleaved.
 */
export function rope(x: RawTensor, cos: RawTensor, sin: RawTensor, layout: RopeLayout): RawTensor {
  const [b, s1, s2, d] = x.layout.shape as [number, number, number, number];
  const v = readNumbers(x),
    cv = readNumbers(cos),
    sv = readNumbers(sin);
  const out = new Float64Array(v.length),
    half = d / 2;
  for (let bi = 0; bi < b; bi++) {
    for (let i1 = 0; i1 < s1; i1++) {
      for (let i2 = 0; i2 < s2; i2++) {
        const t = layout === 'thd' ? i1 : i2;
        const row = ((bi * s1 + i1) * s2 + i2) * d;
        for (let i = 0; i < half; i++) {
          const a = layout === 'interleaved' ? row + 2 * i : row + i;
          const c = layout === 'interleaved' ? a + 1 : a + half;
          const co = cv[t * half + i]!,
            si = sv[t * half + i]!;
          out[a] = v[a]! * co - v[c]! * si;
          out[c] = v[c]! * co + v[a]! * si;
        }
      }
    }
  }
  return fromNumbers(out, x.layout.shape, x.dtype, x.device);
}

/** x [n, c, ...]; per channel (dim 1): (x - mean) / sqrt(var + eps) * w + b */
export function batchNorm(
  x: RawTensor,
  mean: RawTensor,
  variance: RawTensor,
  weight: RawTensor | null,
  bias: RawTensor | null,
  eps: number,
): RawTensor {
  const shape = x.layout.shape;
  const c = shape[1]!;
  let inner = 1;
  for (let i = 2; i < shape.length; i++) inner *= shape[i]!;
  const v = readNumbers(x),
    mv = readNumbers(mean),
    vv = readNumbers(variance);
  const wv = weight ? readNumbers(weight) : null,
    bv = bias ? readNumbers(bias) : null;
  const out = new Float64Array(v.length);
  for (let p = 0; p < v.length; p++) {
    const ch = Math.floor(p / inner) % c;
    const y = (v[p]! - mv[ch]!) / Math.sqrt(vv[ch]! + eps);
    out[p] = y * (wv ? wv[ch]! : 1) + (bv ? bv[ch]! : 0);
  }
  return fromNumbers(out, shape, x.dtype, x.device);
}

/**
 * q [b, hq, tq, d], k [b, hkv, tk, d], v [b, hkv, tk, dv] -> [b, hq, tq, dv]; query head h reads
 * kv head floor(h / (hq / hkv)); causal: query i sees keys j <= i. With no visible key (tk = 0)
 * the row is zeros (an empty weighted sum).
 */
/**
 * Plain loops. A key is visible to query i when the causal diagonal and window allow it and a u8
 * mask is nonzero there; a float mask is added to the scores, and a key whose score is then
 * -Infinity is not visible either. A query that sees no key gives zeros (never NaN), so padded
 * rows cannot poison later layers.
 */
export function attention(q: RawTensor, k: RawTensor, v: RawTensor, p: AttentionParams): RawTensor {
  const [b, hq, tq, d] = q.layout.shape as [number, number, number, number];
  const [, hkv, tk] = k.layout.shape as [number, number, number];
  const dv = v.layout.shape[3]!;
  const { scale, diag, window, mask } = p;
  const qv = readNumbers(q),
    kv = readNumbers(k),
    vv = readNumbers(v);
  const mv = mask ? readBroadcast(mask, [b, hq, tq, tk]) : null;
  const additive = mask !== null && mask.dtype !== 'u8';
  const out = new Float64Array(b * hq * tq * dv);
  const group = hq / hkv;
  const w = new Float64Array(tk);
  const seen = new Uint8Array(tk);
  for (let bi = 0; bi < b; bi++) {
    for (let h = 0; h < hq; h++) {
      const qBase = (bi * hq + h) * tq * d;
      const kvh = bi * hkv + Math.floor(h / group);
      for (let i = 0; i < tq; i++) {
        const row = ((bi * hq + h) * tq + i) * tk;
        let m = -Infinity,
          any = false;
        for (let j = 0; j < tk; j++) {
          seen[j] = 0;
          if (diag !== null && (j > i + diag || (window !== null && j <= i + diag - window))) continue;
          if (mv && !additive && mv[row + j] === 0) continue;
          let s = 0;
          for (let e = 0; e < d; e++) s += qv[qBase + i * d + e]! * kv[(kvh * tk + j) * d + e]!;
          s *= scale;
          if (additive) s += mv![row + j]!;
          if (s === -Infinity) continue;
          w[j] = s;
          seen[j] = 1;
          any = true;
          // NaN propagates through max only if compared: keep it in m
          m = Number.isNaN(s) || Number.isNaN(m) ? NaN : Math.max(m, s);
        }
        if (!any) continue;
        let sum = 0;
        for (let j = 0; j < tk; j++)
          if (seen[j]) {
            w[j] = Math.exp(w[j]! - m);
            sum += w[j]!;
          }
        const o = ((bi * hq + h) * tq + i) * dv;
        for (let j = 0; j < tk; j++) {
          if (!seen[j]) continue;
          const pj = w[j]! / sum;
          for (let e = 0; e < dv; e++) out[o + e] += pj * vv[(kvh * tk + j) * dv + e]!;
        }
      }
    }
  }
  return fromNumbers(out, p.outShape, q.dtype, q.device);
}
