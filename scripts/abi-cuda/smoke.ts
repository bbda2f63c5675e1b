// A first-contact check of the CUDA runtime on a real NVIDIA GPU, below the ops: every
// GpuRuntime method, a PTX kernel through the packed `extra` launch, cuBLAS GEMM in each dtype
// and each cuDNN call against small CPU references. Run: npx tsx scripts/abi-cuda/smoke.ts [index]
// Prints one line per check and closes with `N passed, N failed`; exits 1 on any failure.
import { fromNumbers, toNumbers, type DType } from '../../src/core/dtype.ts';
import { GpuError, OutOfMemoryError } from '../../src/core/errors.ts';
import { closeCuda, cudaProbe, openCuda } from '../../src/runtime/cuda/runtime.ts';
import type { BlasDType, DevicePtr, GpuRuntime } from '../../src/runtime/gpu.ts';

// nvcc 13.0 -ptx -arch=compute_80 of:
//   extern "C" __global__ void axpy(float* y, const float* x, float a, int n)
//   { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i]; }
const AXPY_PTX = `.version 9.0
.target sm_80
.address_size 64
.visible .entry axpy(
	.param .u64 axpy_param_0,
	.param .u64 axpy_param_1,
	.param .f32 axpy_param_2,
	.param .u32 axpy_param_3
)
{
	.reg .pred 	%p<2>;
	.reg .f32 	%f<5>;
	.reg .b32 	%r<6>;
	.reg .b64 	%rd<8>;
	ld.param.u64 	%rd1, [axpy_param_0];
	ld.param.u64 	%rd2, [axpy_param_1];
	ld.param.f32 	%f1, [axpy_param_2];
	ld.param.u32 	%r2, [axpy_param_3];
	mov.u32 	%r3, %ctaid.x;
	mov.u32 	%r4, %ntid.x;
	mov.u32 	%r5, %tid.x;
	mad.lo.s32 	%r1, %r3, %r4, %r5;
	setp.ge.s32 	%p1, %r1, %r2;
	@%p1 bra 	$L__BB0_2;
	cvta.to.global.u64 	%rd3, %rd1;
	cvta.to.global.u64 	%rd4, %rd2;
	mul.wide.s32 	%rd5, %r1, 4;
	add.s64 	%rd6, %rd4, %rd5;
	ld.global.f32 	%f2, [%rd6];
	add.s64 	%rd7, %rd3, %rd5;
	ld.global.f32 	%f3, [%rd7];
	fma.rn.f32 	%f4, %f2, %f1, %f3;
	st.global.f32 	[%rd7], %f4;
$L__BB0_2:
	ret;
}
`;

let passed = 0;
let failed = 0;
function check(name: string, f: () => string | void): void {
  const t = performance.now();
  try {
    const note = f();
    passed++;
    console.log(`PASS ${name}${note ? `: ${note}` : ''} (${(performance.now() - t).toFixed(1)} ms)`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}: ${(e as Error).stack ?? String(e)}`);
  }
}
function expect(ok: boolean, msg: string): void {
  if (!ok) throw new Error(msg);
}

let seed = 12345;
const rand = (): number => {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return (seed / 2147483648) * 2 - 1;
};
const randoms = (n: number): number[] => Array.from({ length: n }, rand);

/** relative error by norm */
function relErr(got: ArrayLike<number>, want: ArrayLike<number>): number {
  let num = 0,
    den = 0;
  for (let i = 0; i < want.length; i++) {
    num += (got[i]! - want[i]!) ** 2;
    den += want[i]! ** 2;
  }
  return Math.sqrt(num / Math.max(den, 1e-30));
}
const TOL: Record<BlasDType, number> = { f32: 1e-5, f64: 1e-12, f16: 1e-2, bf16: 2e-2 };

function upload(rt: GpuRuntime, d: DType, xs: readonly number[]): { ptr: DevicePtr; vals: Float64Array } {
  const host = fromNumbers(d, xs);
  const ptr = rt.malloc(host.byteLength);
  rt.copyHtoD(ptr, host);
  return { ptr, vals: toNumbers(d, host) };
}
function download(rt: GpuRuntime, d: DType, ptr: DevicePtr, n: number): Float64Array {
  const host = fromNumbers(d, new Array<number>(n).fill(0));
  rt.synchronize();
  rt.copyDtoH(host, ptr);
  return toNumbers(d, host);
}

const index = Number(process.argv[2] ?? 0);
const probe = cudaProbe();
console.log(`cudaProbe: ${probe.count} device(s)${probe.reason ? `; ${probe.reason}` : ''}`);
if (probe.count === 0) {
  console.log('0 passed, 1 failed');
  process.exit(1);
}
const rt = openCuda(index);
console.log(JSON.stringify(rt.info));
const s = rt.defaultStream;

check('memGetInfo', () => {
  const m = rt.memGetInfo();
  expect(m.free > 0 && m.total >= m.free, JSON.stringify(m));
  return `${m.free} of ${m.total}`;
});

check('sync copy round trips (1 B .. 64 MiB, odd offsets)', () => {
  for (const n of [1, 3, 4, 1000, 4097, 1 << 20, 64 << 20]) {
    const src = new Uint8Array(n + 3).map((_, i) => (i * 7 + n) & 0xff).subarray(3);
    const p = rt.malloc(n);
    rt.copyHtoD(p, src);
    const back = new Uint8Array(n);
    rt.copyDtoH(back, p);
    rt.free(p);
    for (let i = 0; i < n; i++) if (back[i] !== src[i]) throw new Error(`size ${n}: byte ${i} ${back[i]} != ${src[i]}`);
  }
});

check('pinned async copies, DtoD, memset (D8 and D32 paths)', () => {
  const n = 1 << 16;
  const pin = rt.hostAlloc(n);
  for (let i = 0; i < n; i++) pin.bytes[i] = i & 0xff;
  const a = rt.malloc(n),
    b = rt.malloc(n);
  rt.copyHtoDAsync(a, pin, 0, n, s);
  rt.copyDtoDAsync(b, a, n, s);
  rt.memsetAsync(b, 0xab, 1024, s); // aligned: D32
  rt.memsetAsync((b + 2049n) as DevicePtr, 0x5c, 7, s); // unaligned: D8
  pin.bytes.fill(0);
  rt.copyDtoHAsync(pin, 0, b, n, s);
  rt.streamSynchronize(s);
  for (let i = 0; i < n; i++) {
    const want = i < 1024 ? 0xab : i >= 2049 && i < 2056 ? 0x5c : i & 0xff;
    if (pin.bytes[i] !== want) throw new Error(`byte ${i}: ${pin.bytes[i]} != ${want}`);
  }
  rt.free(a);
  rt.free(b);
  rt.hostFree(pin);
});

check('streams and events (timing, query, wait)', () => {
  const s2 = rt.streamCreate();
  const e0 = rt.eventCreate(true),
    e1 = rt.eventCreate(true);
  const p = rt.malloc(256 << 20);
  rt.eventRecord(e0, s2);
  for (let i = 0; i < 8; i++) rt.memsetAsync(p, i, 256 << 20, s2);
  rt.eventRecord(e1, s2);
  rt.streamWaitEvent(s, e1);
  rt.eventSynchronize(e1);
  expect(rt.eventQuery(e1), 'event not complete after eventSynchronize');
  const ms = rt.eventElapsedMs(e0, e1);
  expect(ms > 0, `elapsed ${ms}`);
  rt.eventDestroy(e0);
  rt.eventDestroy(e1);
  rt.streamDestroy(s2);
  rt.free(p);
  return `8 x 256 MiB memset in ${ms.toFixed(3)} ms`;
});

check('out of memory is OutOfMemoryError and the next allocation works', () => {
  try {
    rt.malloc(rt.info.totalMemory * 2);
    throw new Error('no error');
  } catch (e) {
    expect(e instanceof OutOfMemoryError, `got ${String(e)}`);
    const p = rt.malloc(1 << 20);
    rt.free(p);
    return (e as Error).message;
  }
});

check('PTX module: functionParams, packed launch, NUL handling', () => {
  const m = rt.moduleLoad(new TextEncoder().encode(AXPY_PTX));
  const f = rt.moduleGetFunction(m, 'axpy');
  const params = rt.functionParams(f);
  const layout = params ? params.map((q) => `${q.offset}:${q.size}`).join(' ') : 'null';
  if (params) expect(layout === '0:8 8:8 16:4 20:4', `layout ${layout}`);
  const n = 100_000;
  const x = upload(rt, 'f32', randoms(n)),
    y = upload(rt, 'f32', randoms(n));
  const args = new Uint8Array(24);
  const dv = new DataView(args.buffer);
  dv.setBigUint64(0, y.ptr, true);
  dv.setBigUint64(8, x.ptr, true);
  dv.setFloat32(16, 2.5, true);
  dv.setInt32(20, n, true);
  rt.launch(f, [Math.ceil(n / 256), 1, 1], [256, 1, 1], 0, s, args);
  const got = download(rt, 'f32', y.ptr, n);
  const want = Array.from(y.vals, (v, i) => Math.fround(Math.fround(2.5 * x.vals[i]!) + v));
  expect(relErr(got, want) < 1e-6, `relErr ${relErr(got, want)}`);
  rt.moduleUnload(m);
  rt.free(x.ptr);
  rt.free(y.ptr);
  return `params ${layout}`;
});

check('bad PTX fails with the JIT log', () => {
  try {
    rt.moduleLoad(new TextEncoder().encode('.version 9.0\n.target sm_80\n.address_size 64\nthis is not ptx\n'));
  } catch (e) {
    expect(e instanceof GpuError, String(e));
    return (e as Error).message.slice(0, 200);
  }
  throw new Error('no error');
});

for (const dtype of ['f32', 'f64', 'f16', 'bf16'] as const) {
  check(`cuBLAS gemmStridedBatched ${dtype}`, () => {
    // column-major C[m,n] = A[m,k] B[k,n] (A transposed in storage), batch 3
    const m = 33,
      n = 17,
      k = 29,
      batch = 3;
    const A = upload(rt, dtype, randoms(k * m * batch)),
      B = upload(rt, dtype, randoms(k * n * batch));
    const C = upload(rt, dtype, new Array<number>(m * n * batch).fill(0));
    rt.blas().gemmStridedBatched(
      {
        dtype,
        transA: true,
        transB: false,
        m,
        n,
        k,
        alpha: 1,
        beta: 0,
        a: A.ptr,
        lda: k,
        strideA: k * m,
        b: B.ptr,
        ldb: k,
        strideB: k * n,
        c: C.ptr,
        ldc: m,
        strideC: m * n,
        batch,
      },
      s,
    );
    const got = download(rt, dtype, C.ptr, m * n * batch);
    const want = new Float64Array(m * n * batch);
    for (let b = 0; b < batch; b++)
      for (let i = 0; i < m; i++)
        for (let j = 0; j < n; j++) {
          let acc = 0;
          for (let l = 0; l < k; l++) acc += A.vals[b * k * m + i * k + l]! * B.vals[b * k * n + j * k + l]!;
          want[b * m * n + j * m + i] = acc;
        }
    const err = relErr(got, want);
    rt.free(A.ptr);
    rt.free(B.ptr);
    rt.free(C.ptr);
    expect(err < TOL[dtype], `relErr ${err}`);
    return `${rt.blas().name} ${rt.blas().version}, relErr ${err.toExponential(2)}`;
  });
}

/** NCHW cross-correlation with groups on the CPU */
function convRef(
  x: Float64Array,
  w: Float64Array,
  N: number,
  C: number,
  H: number,
  W: number,
  K: number,
  R: number,
  S: number,
  OH: number,
  OW: number,
  pad: number,
  stride: number,
  dil: number,
  groups: number,
): Float64Array {
  const y = new Float64Array(N * K * OH * OW);
  const cg = C / groups,
    kg = K / groups;
  for (let n = 0; n < N; n++)
    for (let k = 0; k < K; k++)
      for (let oh = 0; oh < OH; oh++)
        for (let ow = 0; ow < OW; ow++) {
          let acc = 0;
          const g = Math.floor(k / kg);
          for (let c = 0; c < cg; c++)
            for (let r = 0; r < R; r++)
              for (let t = 0; t < S; t++) {
                const ih = oh * stride - pad + r * dil,
                  iw = ow * stride - pad + t * dil;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                acc += x[((n * C + g * cg + c) * H + ih) * W + iw]! * w[((k * cg + c) * R + r) * S + t]!;
              }
          y[((n * K + k) * OH + oh) * OW + ow] = acc;
        }
  return y;
}

for (const dtype of ['f32', 'f16'] as const) {
  check(`cuDNN convForward ${dtype} (groups 2, pad 1, stride 2, dilation 1)`, () => {
    const [N, C, H, W, K, R, S, pad, stride, dil, groups] = [2, 4, 9, 11, 6, 3, 3, 1, 2, 1, 2];
    const OH = Math.floor((H + 2 * pad - dil * (R - 1) - 1) / stride) + 1,
      OW = Math.floor((W + 2 * pad - dil * (S - 1) - 1) / stride) + 1;
    const x = upload(rt, dtype, randoms(N * C * H * W)),
      w = upload(rt, dtype, randoms(K * (C / groups) * R * S));
    const y = upload(rt, dtype, new Array<number>(N * K * OH * OW).fill(7));
    rt.dnn().convForward(
      {
        dtype,
        n: N,
        cIn: C,
        inH: H,
        inW: W,
        cOut: K,
        kH: R,
        kW: S,
        outH: OH,
        outW: OW,
        padH: pad,
        padW: pad,
        strideH: stride,
        strideW: stride,
        dilationH: dil,
        dilationW: dil,
        groups,
        x: x.ptr,
        w: w.ptr,
        y: y.ptr,
      },
      s,
    );
    const got = download(rt, dtype, y.ptr, N * K * OH * OW);
    const err = relErr(got, convRef(x.vals, w.vals, N, C, H, W, K, R, S, OH, OW, pad, stride, dil, groups));
    rt.free(x.ptr);
    rt.free(w.ptr);
    rt.free(y.ptr);
    expect(err < TOL[dtype], `relErr ${err}`);
    return `${rt.dnn().name} ${rt.dnn().version}, relErr ${err.toExponential(2)}`;
  });
}

check('cuDNN convTransposeForward f32 (stride 2, pad 1, output padding 1)', () => {
  const [N, Cin, H, W, Cout, R, S, pad, stride] = [2, 3, 5, 4, 4, 3, 3, 1, 2];
  const OH = (H - 1) * stride - 2 * pad + (R - 1) + 1 + 1,
    OW = (W - 1) * stride - 2 * pad + (S - 1) + 1 + 1;
  const x = upload(rt, 'f32', randoms(N * Cin * H * W)),
    w = upload(rt, 'f32', randoms(Cin * Cout * R * S));
  const y = upload(rt, 'f32', new Array<number>(N * Cout * OH * OW).fill(7));
  rt.dnn().convTransposeForward(
    {
      dtype: 'f32',
      n: N,
      cIn: Cin,
      inH: H,
      inW: W,
      cOut: Cout,
      kH: R,
      kW: S,
      outH: OH,
      outW: OW,
      padH: pad,
      padW: pad,
      strideH: stride,
      strideW: stride,
      dilationH: 1,
      dilationW: 1,
      groups: 1,
      x: x.ptr,
      w: w.ptr,
      y: y.ptr,
    },
    s,
  );
  const got = download(rt, 'f32', y.ptr, N * Cout * OH * OW);
  // scatter: y[n, co, ih*s - p + r, iw*s - p + t] += x[n, ci, ih, iw] * w[ci, co, r, t]
  const want = new Float64Array(N * Cout * OH * OW);
  for (let n = 0; n < N; n++)
    for (let ci = 0; ci < Cin; ci++)
      for (let ih = 0; ih < H; ih++)
        for (let iw = 0; iw < W; iw++)
          for (let co = 0; co < Cout; co++)
            for (let r = 0; r < R; r++)
              for (let t = 0; t < S; t++) {
                const oh = ih * stride - pad + r,
                  ow = iw * stride - pad + t;
                if (oh < 0 || oh >= OH || ow < 0 || ow >= OW) continue;
                want[((n * Cout + co) * OH + oh) * OW + ow]! +=
                  x.vals[((n * Cin + ci) * H + ih) * W + iw]! * w.vals[((ci * Cout + co) * R + r) * S + t]!;
              }
  const err = relErr(got, want);
  rt.free(x.ptr);
  rt.free(w.ptr);
  rt.free(y.ptr);
  expect(err < 1e-5, `relErr ${err}`);
  return `relErr ${err.toExponential(2)}`;
});

for (const [mode, incl] of [
  ['max', false],
  ['avg', true],
  ['avg', false],
] as const) {
  check(`cuDNN poolForward ${mode}${mode === 'avg' ? (incl ? ' incl. pad' : ' excl. pad') : ''} f32`, () => {
    const [N, C, H, W, k, pad, stride] = [2, 3, 7, 8, 3, 1, 2];
    const OH = Math.floor((H + 2 * pad - k) / stride) + 1,
      OW = Math.floor((W + 2 * pad - k) / stride) + 1;
    const x = upload(rt, 'f32', randoms(N * C * H * W));
    const y = upload(rt, 'f32', new Array<number>(N * C * OH * OW).fill(7));
    rt.dnn().poolForward(
      {
        dtype: 'f32',
        mode,
        countIncludePad: incl,
        n: N,
        c: C,
        inH: H,
        inW: W,
        outH: OH,
        outW: OW,
        kH: k,
        kW: k,
        padH: pad,
        padW: pad,
        strideH: stride,
        strideW: stride,
        x: x.ptr,
        y: y.ptr,
      },
      s,
    );
    const got = download(rt, 'f32', y.ptr, N * C * OH * OW);
    const want = new Float64Array(N * C * OH * OW);
    for (let nc = 0; nc < N * C; nc++)
      for (let oh = 0; oh < OH; oh++)
        for (let ow = 0; ow < OW; ow++) {
          let acc = mode === 'max' ? -Infinity : 0,
            cnt = 0;
          for (let r = 0; r < k; r++)
            for (let t = 0; t < k; t++) {
              const ih = oh * stride - pad + r,
                iw = ow * stride - pad + t;
              if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
              const v = x.vals[(nc * H + ih) * W + iw]!;
              acc = mode === 'max' ? Math.max(acc, v) : acc + v;
              cnt++;
            }
          want[(nc * OH + oh) * OW + ow] = mode === 'max' ? acc : acc / (incl ? k * k : cnt);
        }
    const err = relErr(got, want);
    rt.free(x.ptr);
    rt.free(y.ptr);
    expect(err < 1e-6, `relErr ${err}`);
    return `relErr ${err.toExponential(2)}`;
  });
}

for (const log of [false, true]) {
  check(`cuDNN ${log ? 'log' : ''}softmax f32 [37, 1000]`, () => {
    const rows = 37,
      cols = 1000;
    const x = upload(
      rt,
      'f32',
      randoms(rows * cols).map((v) => v * 10),
    );
    const y = upload(rt, 'f32', new Array<number>(rows * cols).fill(7));
    rt.dnn().softmaxForward({ dtype: 'f32', log, rows, cols, x: x.ptr, y: y.ptr }, s);
    const got = download(rt, 'f32', y.ptr, rows * cols);
    const want = new Float64Array(rows * cols);
    for (let r = 0; r < rows; r++) {
      const row = x.vals.subarray(r * cols, (r + 1) * cols);
      const mx = Math.max(...row);
      const sum = row.reduce((a, v) => a + Math.exp(v - mx), 0);
      for (let c = 0; c < cols; c++)
        want[r * cols + c] = log ? row[c]! - mx - Math.log(sum) : Math.exp(row[c]! - mx) / sum;
    }
    const err = relErr(got, want);
    rt.free(x.ptr);
    rt.free(y.ptr);
    expect(err < 1e-5, `relErr ${err}`);
    return `relErr ${err.toExponential(2)}`;
  });
}

check('use after destroy is a clear error', () => {
  const e = rt.eventCreate();
  rt.eventDestroy(e);
  try {
    rt.eventQuery(e);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('no error');
});

check('close() releases the runtime', () => {
  closeCuda(index);
});

console.log(`${passed} passed, ${failed} failed`);
process.exitCode = failed ? 1 : 0;
