// Attention written as plain loops over (batch, head, query, key), independent of src: the
// expected values of the CPU attention tests. A visibility predicate and a bias per element
// express causal alignment, windows and masks.
import type { Tensor } from '../src/index.ts';
import { nums } from './helpers.ts';

export type Allow = (b: number, h: number, i: number, j: number) => boolean;
export type Bias = (b: number, h: number, i: number, j: number) => number;

/** softmax over the allowed keys of q k^T * scale + bias; no allowed key: zeros */
export function gridRef(q: Tensor, k: Tensor, v: Tensor, allow: Allow, bias: Bias = () => 0, scale?: number): number[] {
  const [b, hq, tq, d] = q.shape as [number, number, number, number];
  const [, hkv, tk] = k.shape as [number, number, number];
  const dv = v.shape[3]!;
  const sc = scale ?? 1 / Math.sqrt(d);
  const qv = nums(q),
    kv = nums(k),
    vv = nums(v);
  const out: number[] = [];
  for (let bi = 0; bi < b; bi++)
    for (let h = 0; h < hq; h++) {
      const g = Math.floor(h / (hq / hkv));
      for (let i = 0; i < tq; i++) {
        const s: number[] = [];
        for (let j = 0; j < tk; j++) {
          if (!allow(bi, h, i, j)) {
            s.push(-Infinity);
            continue;
          }
          let dot = 0;
          for (let e = 0; e < d; e++)
            dot += qv[((bi * hq + h) * tq + i) * d + e]! * kv[((bi * hkv + g) * tk + j) * d + e]!;
          s.push(dot * sc + bias(bi, h, i, j));
        }
        const m = Math.max(...s);
        if (m === -Infinity) {
          for (let e = 0; e < dv; e++) out.push(0);
          continue;
        }
        const p = s.map((x) => Math.exp(x - m));
        const z = p.reduce((a, c) => a + c, 0);
        for (let e = 0; e < dv; e++) {
          let acc = 0;
          for (let j = 0; j < tk; j++) acc += (p[j]! / z) * vv[((bi * hkv + g) * tk + j) * dv + e]!;
          out.push(acc);
        }
      }
    }
  return out;
}
