// Launches a few hip-src kernels through the real launcher on the first GPU found (CUDA, then
// ROCm) and checks the results against the CPU rules in src/core/dtype.ts. Skips without a GPU.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { numberToBf16Bits, numberToF16Bits, roundTo } from '../../src/core/dtype.ts';
import type { DevicePtr, GpuRuntime } from '../../src/runtime/gpu.ts';
import { arg, Kernels } from '../../src/runtime/kernels.ts';
import { packGeom } from '../../src/runtime/kernel-sigs.ts';

async function openAny(): Promise<{ rt: GpuRuntime | null; why: string }> {
  const why: string[] = [];
  try {
    const m = await import('../../src/runtime/cuda/runtime.ts');
    if (m.cudaDeviceCount() > 0) return { rt: m.openCuda(0), why: '' };
    why.push('no CUDA device');
  } catch (e) {
    why.push(`CUDA: ${(e as Error).message}`);
  }
  try {
    const m = await import('../../src/runtime/rocm/runtime.ts');
    if (m.rocmDeviceCount() > 0) return { rt: m.openRocm(0), why: '' };
    why.push('no ROCm device');
  } catch (e) {
    why.push(`ROCm: ${(e as Error).message}`);
  }
  return { rt: null, why: why.join('; ') };
}

const { rt, why } = await openAny();

if (!rt) {
  console.log(`kernels-smoke: skipped (${why})`);
  test.skip('kernels smoke (no GPU runtime)', () => {});
} else {
  const k = new Kernels(rt);
  const s = rt.defaultStream;
  console.log(
    `kernels-smoke on ${rt.info.vendor}:${rt.info.index} ${rt.info.name} (${rt.info.arch}, wave ${rt.info.warpSize}, block ${k.preferredBlockSize})`,
  );
  const live: DevicePtr[] = [];
  const upload = (a: ArrayBufferView): DevicePtr => {
    const p = rt.malloc(Math.max(16, a.byteLength));
    live.push(p);
    rt.copyHtoD(p, a);
    return p;
  };
  const alloc = (bytes: number): DevicePtr => {
    const p = rt.malloc(Math.max(16, bytes));
    live.push(p);
    return p;
  };
  const read = <T extends ArrayBufferView>(out: T, p: DevicePtr): T => {
    rt.streamSynchronize(s);
    rt.copyDtoH(out, p);
    return out;
  };

  test('fill_f32 and fill_f16 cover the vector body and the tail', () => {
    const n = 1003;
    const y = alloc(n * 4);
    k.launch1d('copy.hip', 'fill_f32', n, s, [arg.ptr(y), arg.i64(0), arg.u64(n), arg.f32(2.5)]);
    assert.ok(read(new Float32Array(n), y).every((v) => v === 2.5));
    const h = alloc(n * 2);
    k.launch1d('copy.hip', 'fill_f16', n, s, [arg.ptr(h), arg.i64(0), arg.u64(n), arg.u32(numberToF16Bits(-3))]);
    assert.ok(read(new Uint16Array(n), h).every((v) => v === numberToF16Bits(-3)));
  });

  test('unary_exp_f32, aligned and at an unaligned offset', () => {
    const n = 517;
    const xs = Float32Array.from({ length: n + 1 }, (_, i) => (i - 250) / 50);
    const x = upload(xs),
      y = alloc((n + 1) * 4);
    for (const off of [0, 1]) {
      k.launch1d('unary.hip', 'unary_exp_f32', n, s, [arg.ptr(y), arg.ptr(x), arg.i64(off), arg.i64(off), arg.u64(n)]);
      const out = read(new Float32Array(n + 1), y);
      for (let i = 0; i < n; i++) {
        const want = Math.exp(xs[i + off]!);
        assert.ok(Math.abs(out[i + off]! - want) <= 2e-6 * want, `exp at ${i}+${off}: ${out[i + off]} vs ${want}`);
      }
    }
  });

  test('binary_add_f16_strided broadcasts [4,5] + [5]', () => {
    const a = Float64Array.from({ length: 20 }, (_, i) => i * 0.25),
      b = [1, -1, 0.5, 100, -0.125];
    const ad = upload(Uint16Array.from(a, numberToF16Bits)),
      bd = upload(Uint16Array.from(b, numberToF16Bits)),
      yd = alloc(40);
    const g = packGeom(
      'add',
      [4, 5],
      [
        { strides: [5, 1], offset: 0 },
        { strides: [5, 1], offset: 0 },
        { strides: [0, 1], offset: 0 },
      ],
    );
    k.launch1d('binary.hip', 'binary_add_f16_strided', 20, s, [arg.ptr(yd), arg.ptr(ad), arg.ptr(bd), arg.bytes(g)]);
    const out = read(new Uint16Array(20), yd);
    for (let i = 0; i < 20; i++) assert.is(out[i], numberToF16Bits(Math.fround(a[i]! + b[i % 5]!)), `element ${i}`);
  });

  test('cast_f32_i64 truncates and wraps; cast_f32_f16 and cast_f64_bf16 round to nearest even', () => {
    const xs = Float32Array.from([-2.7, 3.9, NaN, Infinity, 1e20, -1e19, 65519, 65520, 1e-8, 2 ** -25]);
    const x = upload(xs),
      yi = alloc(xs.length * 8),
      yh = alloc(xs.length * 2);
    k.launch1d('cast.hip', 'cast_f32_i64', xs.length, s, [
      arg.ptr(yi),
      arg.ptr(x),
      arg.i64(0),
      arg.i64(0),
      arg.u64(xs.length),
    ]);
    k.launch1d('cast.hip', 'cast_f32_f16', xs.length, s, [
      arg.ptr(yh),
      arg.ptr(x),
      arg.i64(0),
      arg.i64(0),
      arg.u64(xs.length),
    ]);
    const i64 = read(new BigInt64Array(xs.length), yi),
      f16 = read(new Uint16Array(xs.length), yh);
    xs.forEach((v, i) => {
      assert.is(i64[i], BigInt.asIntN(64, BigInt(roundTo('i64', v))), `i64 of ${v}`);
      assert.is(f16[i], numberToF16Bits(v), `f16 of ${v}`);
    });
    const ds = Float64Array.from([1 + 2 ** -8 + 2 ** -40, 1 + 2 ** -8, 3.4e38 * 1.01, -0, NaN]);
    const xd = upload(ds),
      yb = alloc(ds.length * 2);
    k.launch1d('cast.hip', 'cast_f64_bf16', ds.length, s, [
      arg.ptr(yb),
      arg.ptr(xd),
      arg.i64(0),
      arg.i64(0),
      arg.u64(ds.length),
    ]);
    const bf = read(new Uint16Array(ds.length), yb);
    ds.forEach((v, i) => assert.is(bf[i], numberToBf16Bits(v), `bf16 of ${v}`));
  });

  test('copy_rows_b4 copies rows between strides; cmp_lt_u32 and where_u8_f32 compose', () => {
    const src = Uint32Array.from({ length: 6 * 8 }, (_, i) => i);
    const x = upload(src),
      y = alloc(3 * 5 * 4);
    // rows 1..3, cols 2..6 of a 6x8 matrix into a dense 3x5
    // (a group of 32 threads a row)
    k.launch1d('copy.hip', 'copy_rows_b4', 3 * 32, s, [
      arg.ptr(y),
      arg.ptr(x),
      arg.i64(0),
      arg.i64(8 + 2),
      arg.u64(3),
      arg.u64(5),
      arg.i64(5),
      arg.i64(8),
      arg.u32(32),
    ]);
    const out = read(new Uint32Array(15), y);
    for (let r = 0; r < 3; r++) for (let c = 0; c < 5; c++) assert.is(out[r * 5 + c], (r + 1) * 8 + c + 2);
    const a = upload(Uint32Array.from([1, 5, 3, 9])),
      b = upload(Uint32Array.from([2, 2, 3, 10])),
      m = alloc(4);
    k.launch1d('binary.hip', 'cmp_lt_u32', 4, s, [
      arg.ptr(m),
      arg.ptr(a),
      arg.ptr(b),
      arg.i64(0),
      arg.i64(0),
      arg.i64(0),
      arg.u64(4),
    ]);
    assert.equal([...read(new Uint8Array(4), m)], [1, 0, 0, 1]);
    const fa = upload(Float32Array.from([1, 2, 3, 4])),
      fb = upload(Float32Array.from([-1, -2, -3, -4])),
      fy = alloc(16);
    k.launch1d('binary.hip', 'where_u8_f32', 4, s, [
      arg.ptr(fy),
      arg.ptr(m),
      arg.ptr(fa),
      arg.ptr(fb),
      arg.i64(0),
      arg.i64(0),
      arg.i64(0),
      arg.i64(0),
      arg.u64(4),
    ]);
    assert.equal([...read(new Float32Array(4), fy)], [1, -2, -3, 4]);
  });

  test('a wrong argument list throws before anything is launched', () => {
    assert.throws(
      () => k.launch1d('unary.hip', 'unary_exp_f32', 4, s, [arg.ptr(live[0]!)]),
      /unary_exp_f32 \(unary\.hip\) takes 5 arguments/,
    );
  });

  test('cleanup', () => {
    rt.synchronize();
    for (const p of live) rt.free(p);
    k.dispose();
  });
}

test.run();
