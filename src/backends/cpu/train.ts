// CPU reference for the fused training ops: the softmax and norm backward, cross entropy over
// rows of logits, and the multi-tensor Adam and SGD steps. Every sum in f64, one rounding to the
// output dtype on store; the steps write their tensors in place.
import { type RawTensor, fromLastDim, lastDimView } from '../../device/raw-tensor.ts';
import type { AdamStepParams, CrossEntropyParams, SgdStepParams, StepList } from '../train-options.ts';
import { fromNumbers, readNumbers, scatter } from './util.ts';

/** softmax: dx = y (g - sum(g y)); logSoftmax: dx = g - exp(y) sum(g), along dim */
export function softmaxBackward(g: RawTensor, y: RawTensor, dim: number, log: boolean): RawTensor {
  const gv = lastDimView(g, dim),
    yv = lastDimView(y, dim);
  const shape = yv.layout.shape;
  const gs = readNumbers(gv),
    ys = readNumbers(yv);
  gv.dispose();
  yv.dispose();
  const n = y.rank === 0 ? 1 : shape[shape.length - 1]!;
  const out = new Float64Array(gs.length);
  for (let at = 0; n > 0 && at < gs.length; at += n) {
    let s = 0;
    for (let k = 0; k < n; k++) s += log ? gs[at + k]! : gs[at + k]! * ys[at + k]!;
    for (let k = 0; k < n; k++) {
      const gk = gs[at + k]!,
        yk = ys[at + k]!;
      out[at + k] = log ? gk - Math.exp(yk) * s : yk * (gk - s);
    }
  }
  return fromLastDim(fromNumbers(out, shape, y.dtype, y.device), dim);
}

/**
 * The backward of layerNorm (rms false) or rmsNorm over the last dim: dx, dw and (layerNorm
 * with a bias) db. r = 1 / sqrt(var + eps) with xhat = (x - mean) r, or 1 / sqrt(mean(x^2) + eps)
 * with xhat = x r; gh = g w: dx = r (gh - mean(gh) - xhat mean(gh xhat)) (rmsNorm: no mean(gh)),
 * dw = sum over rows of g xhat, db = sum of g.
 */
export function normBackward(
  g: RawTensor,
  x: RawTensor,
  w: RawTensor,
  b: RawTensor | null,
  eps: number,
  rms: boolean,
): [RawTensor, RawTensor, RawTensor | null] {
  const xs = readNumbers(x),
    gs = readNumbers(g),
    ws = readNumbers(w);
  const n = ws.length;
  const dx = new Float64Array(xs.length),
    dw = new Float64Array(n),
    db = new Float64Array(n);
  for (let at = 0; n > 0 && at < xs.length; at += n) {
    let mean = 0;
    if (!rms) {
      for (let k = 0; k < n; k++) mean += xs[at + k]!;
      mean /= n;
    }
    let sq = 0;
    for (let k = 0; k < n; k++) sq += (xs[at + k]! - mean) ** 2;
    const r = 1 / Math.sqrt(sq / n + eps);
    let a = 0,
      c = 0;
    for (let k = 0; k < n; k++) {
      const gv = gs[at + k]!,
        gh = gv * ws[k]!,
        xh = (xs[at + k]! - mean) * r;
      a += gh * xh;
      c += gh;
      dw[k] += gv * xh;
      db[k] += gv;
    }
    const ma = a / n,
      mb = rms ? 0 : c / n;
    for (let k = 0; k < n; k++) {
      const gh = gs[at + k]! * ws[k]!,
        xh = (xs[at + k]! - mean) * r;
      dx[at + k] = r * (gh - mb - xh * ma);
    }
  }
  return [
    fromNumbers(dx, x.layout.shape, x.dtype, x.device),
    fromNumbers(dw, w.layout.shape, w.dtype, w.device),
    b ? fromNumbers(db, b.layout.shape, b.dtype, b.device) : null,
  ];
}

/** per row of x [M, C] (f64): max, log-sum-exp, and the smoothing sums */
function xentRows(
  x: RawTensor,
  target: RawTensor,
  p: CrossEntropyParams,
  row: (r: number, xr: Float64Array, t: number, lse: number, wt: number, w: Float64Array | null, W: number) => void,
): void {
  const [m, c] = x.layout.shape as [number, number];
  const xs = readNumbers(x),
    ts = readNumbers(target),
    w = p.weight ? readNumbers(p.weight) : null;
  let W = c;
  if (w) {
    W = 0;
    for (let k = 0; k < c; k++) W += w[k]!;
  }
  for (let r = 0; r < m; r++) {
    const xr = xs.subarray(r * c, (r + 1) * c);
    let mx = -Infinity;
    // Math.max passes a NaN on: a NaN anywhere makes the row NaN
    for (let k = 0; k < c; k++) mx = Math.max(mx, xr[k]!);
    let s = 0;
    for (let k = 0; k < c; k++) s += Math.exp(xr[k]! - mx);
    const t = ts[r]!;
    const ok = Number.isInteger(t) && t >= 0 && t < c;
    row(r, xr, t, mx + Math.log(s), ok ? (w ? w[t]! : 1) : Number.NaN, w, W);
  }
}

/**
 * Cross entropy of each row of logits x [M, C] against target [M] (class ids): (1 - s) w_t
 * (lse - x_t) + (s / C) (W lse - sum_c w_c x_c), W = sum_c w_c (C without weights); 0 where the
 * target is ignoreIndex, NaN where it is outside [0, C).
 */
export function crossEntropyRows(x: RawTensor, target: RawTensor, p: CrossEntropyParams): RawTensor {
  const [m, c] = x.layout.shape as [number, number];
  const out = new Float64Array(m);
  const s = p.smoothing;
  xentRows(x, target, p, (r, xr, t, lse, wt, w, W) => {
    if (t === p.ignoreIndex) return;
    if (Number.isNaN(wt)) {
      out[r] = Number.NaN;
      return;
    }
    let l = (1 - s) * wt * (lse - xr[t]!);
    if (s !== 0) {
      let wx = 0;
      for (let k = 0; k < c; k++) wx += (w ? w[k]! : 1) * xr[k]!;
      l += (s / c) * (W * lse - wx);
    }
    out[r] = l;
  });
  return fromNumbers(out, [m], x.dtype, x.device);
}

/** the gradient of crossEntropyRows for x, given the gradient g [M] of each row's loss */
export function crossEntropyRowsBackward(
  g: RawTensor,
  x: RawTensor,
  target: RawTensor,
  p: CrossEntropyParams,
): RawTensor {
  const [m, c] = x.layout.shape as [number, number];
  const gs = readNumbers(g);
  const out = new Float64Array(m * c);
  const s = p.smoothing;
  xentRows(x, target, p, (r, xr, t, lse, wt, w, W) => {
    if (t === p.ignoreIndex) return;
    const hard = (1 - s) * wt,
      soft = s / c;
    const coef = hard + (s !== 0 ? soft * W : 0);
    for (let k = 0; k < c; k++) {
      let d = Math.exp(xr[k]! - lse) * coef;
      if (k === t) d -= hard;
      if (s !== 0) d -= soft * (w ? w[k]! : 1);
      out[r * c + k] = gs[r]! * d;
    }
  });
  return fromNumbers(out, [m, c], x.dtype, x.device);
}

/** writes values (numbers) into t's storage, in place (t contiguous) */
function writeBack(t: RawTensor, values: Float64Array): void {
  scatter(t.dtype, values, 0, t.storage.host, t.layout.offset, values.length);
}

/** one Adam / AdamW step over every tensor of the list, in place (PyTorch's update) */
export function adamStep(list: StepList, h: AdamStepParams): void {
  list.params.forEach((param, i) => {
    const master = list.masters ? list.masters[i]! : null;
    const w = readNumbers(master ?? param),
      g = readNumbers(list.grads[i]!);
    const mT = list.state[0]![i]!,
      vT = list.state[1]![i]!,
      vmT = h.amsgrad ? list.state[2]![i]! : null;
    const m = readNumbers(mT),
      v = readNumbers(vT),
      vm = vmT ? readNumbers(vmT) : null;
    for (let k = 0; k < w.length; k++) {
      let gr = g[k]!;
      if (!h.decoupled && h.weightDecay !== 0) gr += w[k]! * h.weightDecay;
      m[k] = m[k]! * h.beta1 + gr * (1 - h.beta1);
      v[k] = v[k]! * h.beta2 + gr * gr * (1 - h.beta2);
      let vu = v[k]!;
      if (vm) {
        const a = vm[k]!;
        // Math.max passes a NaN on
        vu = Math.max(a, vu);
        vm[k] = vu;
      }
      const base = h.decoupled && h.weightDecay !== 0 ? w[k]! * (1 - h.lr * h.weightDecay) : w[k]!;
      w[k] = base - (m[k]! / (Math.sqrt(vu) * h.invBc2Sqrt + h.eps)) * h.stepSize;
    }
    writeBack(mT, m);
    writeBack(vT, v);
    if (vmT && vm) writeBack(vmT, vm);
    if (master) writeBack(master, w);
    writeBack(param, w);
  });
}

/** one SGD step over every tensor of the list, in place (PyTorch's update) */
export function sgdStep(list: StepList, h: SgdStepParams): void {
  list.params.forEach((param, i) => {
    const master = list.masters ? list.masters[i]! : null;
    const w = readNumbers(master ?? param),
      g = readNumbers(list.grads[i]!);
    const bufT = h.momentum !== 0 ? list.state[0]![i]! : null;
    const buf = bufT ? readNumbers(bufT) : null;
    for (let k = 0; k < w.length; k++) {
      let d = g[k]!;
      if (h.weightDecay !== 0) d += w[k]! * h.weightDecay;
      if (buf) {
        buf[k] = h.first ? d : buf[k]! * h.momentum + d * (1 - h.dampening);
        d = h.nesterov ? d + buf[k]! * h.momentum : buf[k]!;
      }
      w[k] = w[k]! - d * h.lr;
    }
    if (bufT && buf) writeBack(bufT, buf);
    if (master) writeBack(master, w);
    writeBack(param, w);
  });
}
