// Pure parts of the launcher: argument packing, the Geom record, object keys.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { asDevicePtr } from '../../src/runtime/gpu.ts';
import { arg, objectKeyFor, packArgs, type KernelLayout } from '../../src/runtime/kernels.ts';
import { GEOM_BYTES, packGeom } from '../../src/runtime/kernel-sigs.ts';

const layout: KernelLayout = {
  name: 'k',
  file: 'x.hip',
  exactKinds: true,
  bytes: 36,
  params: [
    { offset: 0, size: 8, kind: 'pointer' },
    { offset: 8, size: 4, kind: 'value' },
    { offset: 16, size: 8, kind: 'value' },
    { offset: 24, size: 8, kind: 'value' },
    { offset: 32, size: 4, kind: 'value' },
  ],
};

test('packArgs writes each argument little-endian at its offset', () => {
  const buf = new Uint8Array(36);
  packArgs(
    layout,
    [arg.ptr(asDevicePtr(0x1122334455667788n)), arg.u32(0xdeadbeef), arg.i64(-2), arg.f64(1.5), arg.f32(-0.25)],
    buf,
  );
  const dv = new DataView(buf.buffer);
  assert.is(dv.getBigUint64(0, true), 0x1122334455667788n);
  assert.is(dv.getUint32(8, true), 0xdeadbeef);
  assert.is(dv.getBigInt64(16, true), -2n);
  assert.is(dv.getFloat64(24, true), 1.5);
  assert.is(dv.getFloat32(32, true), -0.25);
});

test('packArgs refuses out-of-range and non-integer values', () => {
  const buf = new Uint8Array(36);
  const base = [arg.ptr(asDevicePtr(16n)), arg.u32(1), arg.i64(0), arg.f64(0), arg.f32(0)];
  const bad = (i: number, a: ReturnType<typeof arg.u32>) => {
    const x = [...base];
    x[i] = a;
    return x;
  };
  assert.throws(() => packArgs(layout, bad(1, arg.u32(-1)), buf), /parameter 1 \(u32\) out of range/);
  assert.throws(() => packArgs(layout, bad(1, arg.u32(1.5)), buf), /must be an integer/);
  assert.throws(() => packArgs(layout, bad(2, arg.i64(2 ** 60)), buf), /must be an integer/);
});

test('a pointer may fill an 8-byte value only where the layout cannot tell them apart (PTX)', () => {
  const ptx: KernelLayout = {
    ...layout,
    exactKinds: false,
    params: layout.params.map((p) => ({ ...p, kind: 'value' as const })),
  };
  const args = [arg.ptr(asDevicePtr(16n)), arg.u32(1), arg.i64(0), arg.f64(0), arg.f32(0)];
  packArgs(ptx, args, new Uint8Array(36));
  assert.throws(
    () =>
      packArgs(
        layout,
        [arg.ptr(asDevicePtr(16n)), arg.u32(1), arg.ptr(asDevicePtr(16n)), arg.f64(0), arg.f32(0)],
        new Uint8Array(36),
      ),
    /parameter 2/,
  );
});

test('packGeom: layout of the record, size-1 dims dropped, contiguous dims merged', () => {
  const g = packGeom(
    't',
    [2, 1, 3, 4],
    [
      { strides: [12, 12, 4, 1], offset: 0 },
      { strides: [0, 7, 4, 1], offset: 9 },
    ],
  );
  assert.is(g.length, GEOM_BYTES);
  const dv = new DataView(g.buffer);
  assert.is(dv.getBigInt64(0, true), 24n);
  assert.is(dv.getInt32(8, true), 2); // [2, 12]: dims 2 and 3 merge for both operands
  assert.equal([dv.getBigInt64(16, true), dv.getBigInt64(24, true)], [2n, 12n]);
  assert.equal([dv.getBigInt64(80, true), dv.getBigInt64(88, true)], [0n, 9n]);
  assert.equal([dv.getBigInt64(112, true), dv.getBigInt64(120, true)], [12n, 1n]);
  assert.equal([dv.getBigInt64(176, true), dv.getBigInt64(184, true)], [0n, 1n]);
});

test('packGeom: transposed operands keep their dims; too many dims or operands throw', () => {
  const g = packGeom(
    't',
    [3, 4],
    [
      { strides: [4, 1], offset: 0 },
      { strides: [1, 3], offset: 0 },
    ],
  );
  assert.is(new DataView(g.buffer).getInt32(8, true), 2);
  const nine = Array.from({ length: 9 }, () => 2);
  const alt = nine.map((_, i) => 2 ** (9 - i) * (i % 2 ? 1 : 3));
  assert.throws(() => packGeom('t', nine, [{ strides: alt, offset: 0 }]), /rank 9/);
  const op = { strides: [1], offset: 0 };
  assert.throws(() => packGeom('t', [1], [op, op, op, op, op]), /1 to 4 operands/);
  // a scalar: rank 0, one element
  const s = new DataView(packGeom('t', [], [{ strides: [], offset: 3 }]).buffer);
  assert.is(s.getBigInt64(0, true), 1n);
  assert.is(s.getInt32(8, true), 0);
});

test('object keys: gfx feature suffixes stripped, PTX for sm_80 and newer only', () => {
  assert.is(objectKeyFor('rocm', 'gfx942:sramecc+:xnack-'), 'gfx942');
  assert.is(objectKeyFor('cuda', 'sm_90'), 'ptx');
  assert.is(objectKeyFor('cuda', 'sm_100'), 'ptx');
  assert.is(objectKeyFor('cuda', 'sm_75'), null);
});

test.run();
