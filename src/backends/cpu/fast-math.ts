// exp for f32 tensors without a call to Math.exp per element (about 13 ns each in V8).
//
// e^x = 2^(k/64) e^r with k = nearest(64 x / ln 2) and r = x - k ln2/64 (|r| <= ln2/128, the
// product k ln2/64 split in two so it is exact): 2^(k/64) comes from a table of doubles over the
// whole f32 range, e^r from its Taylor polynomial of degree 5 (truncation below 4e-17). All in
// f64, the result is within about 4e-16 of e^x before the one rounding to f32: it rounds as
// Math.fround(Math.exp(x)) does but for inputs within that distance of a rounding boundary (a
// few in 10^8 of random inputs, off by one ulp). The exact reference (cpu/mode.ts) calls
// Math.exp instead. The WebAssembly loop (wasm/kernels.wat, wasm-kernels.ts) computes the same
// values two lanes at a time, with these constants spelled out and this table in its memory.
const N = 64;
const INV_STEP = N / Math.LN2;
// ln2/64 in two parts: the high part has 24 significant bits, so k * STEP_HI is exact for |k| < 2^29
const STEP_HI = Math.fround(Math.LN2 / N);
const STEP_LO = Math.LN2 / N - STEP_HI;
// beyond these inputs f32 gives infinity or zero; clamping keeps k inside the table
const X_MAX = 100,
  X_MIN = -110;
const K_MIN = Math.floor(X_MIN * INV_STEP) - 1,
  K_MAX = Math.ceil(X_MAX * INV_STEP) + 1;
// adding and subtracting 1.5 * 2^52 rounds a double of magnitude below 2^51 to the nearest integer
const SHIFT = 6755399441055744;

let table: Float64Array | null = null;
/** 2^(k/64) for k from K_MIN (-10158) to K_MAX: the table the WebAssembly exp (wasm/kernels.wat) reads too */
export function expTable(): Float64Array {
  return (table ??= powTable());
}
function powTable(): Float64Array {
  const t = new Float64Array(K_MAX - K_MIN + 1);
  const frac = new Float64Array(N);
  for (let j = 0; j < N; j++) frac[j] = 2 ** (j / N);
  for (let k = K_MIN; k <= K_MAX; k++) {
    const m = Math.floor(k / N);
    t[k - K_MIN] = frac[k - m * N]! * 2 ** m;
  }
  return t;
}

/** out[o..o+len) = e^x for x = src[s], src[s + stride], ..., rounded to f32 (the scalar loop) */
export function expF32Scalar(
  src: Float32Array,
  s: number,
  stride: number,
  out: Float32Array,
  o: number,
  len: number,
): void {
  const t = expTable();
  for (let i = 0; i < len; i++) {
    let x = src[s + i * stride]!;
    // NaN stays NaN through the clamp and the polynomial (its table index is 0 - K_MIN)
    x = Math.min(Math.max(x, X_MIN), X_MAX);
    const kf = x * INV_STEP + SHIFT - SHIFT;
    const r = x - kf * STEP_HI - kf * STEP_LO;
    const p = 1 + r * (1 + r * (0.5 + r * (1 / 6 + r * (1 / 24 + r * (1 / 120)))));
    out[o + i] = t[(kf - K_MIN) | 0]! * p;
  }
}
