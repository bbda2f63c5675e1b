// The core views, copies and readback on the CPU: reshape, transpose, permute, narrow, slice,
// expand/broadcastAs, squeeze/unsqueeze, flatten, contiguous, cat, stack, chunk, copy2d,
// constSet/fill, sliceSet, toArray/toNested/item, dispose/tidy, with their errors.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor, ShapeError, DTypeError, DisposedError, tidy, keep, liveTensors } from '../../src/index.ts';
import { nums, randT } from '../helpers.ts';

const throwsWith = (fn: () => unknown, cls: Function, re: RegExp) =>
  assert.throws(fn, (e: unknown) => e instanceof cls && re.test((e as Error).message));
const grid = () => Tensor.arange(12).reshape([3, 4]); // x[i][j] = 4 i + j

test('reshape: a view when contiguous, a copy otherwise, -1 inferred', () => {
  const t = grid();
  const r = t.reshape([2, -1]);
  assert.equal(r.shape, [2, 6]);
  assert.is(r.storage, t.storage);
  assert.equal(r.toNestedSync(), [
    [0, 1, 2, 3, 4, 5],
    [6, 7, 8, 9, 10, 11],
  ]);
  const c = t.T.reshape([12]);
  assert.is.not(c.storage, t.storage);
  assert.equal(nums(c), [0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11]);
  assert.equal(Tensor.zeros([0, 4]).reshape([-1, 2]).shape, [0, 2]);
  assert.equal(Tensor.from(7).reshape([1, 1]).toNestedSync(), [[7]]);
  throwsWith(() => t.reshape([5, -1]), ShapeError, /^reshape: /); // core says 'invalid shape [5, 2.4]': see report
  throwsWith(() => t.reshape([-1, -1]), ShapeError, /^reshape: at most one -1/);
  throwsWith(() => t.reshape([5, 3]), ShapeError, /reshape: cannot reshape \[3, 4\].*\[5, 3\]/);
});

test('transpose, T, permute', () => {
  const t = grid();
  assert.equal(t.transpose(0, 1).toNestedSync(), [
    [0, 4, 8],
    [1, 5, 9],
    [2, 6, 10],
    [3, 7, 11],
  ]);
  assert.equal(t.transpose(-1, -2).strides, [1, 4]);
  const x = Tensor.arange(24).reshape([2, 3, 4]);
  const p = x.permute([2, 0, 1]);
  assert.equal(p.shape, [4, 2, 3]);
  assert.equal(p.strides, [1, 12, 4]);
  assert.equal((p.toNestedSync() as number[][][])[3]![1]![2], 12 * 1 + 4 * 2 + 3);
  assert.equal(x.permute([-1, 1, 0]).shape, [4, 3, 2]);
  throwsWith(
    () => x.permute([0, 0, 1]),
    ShapeError,
    /^permute: dims \[0, 0, 1\] are not a permutation of 3 dims \(tensor \[2, 3, 4\]\)/,
  );
  throwsWith(() => x.permute([0, 1]), ShapeError, /permute:/);
  throwsWith(() => t.transpose(0, 2), ShapeError, /^transpose: dim 2 out of range for a tensor of rank 2/);
});

test('narrow and slice', () => {
  const t = grid();
  assert.equal(t.narrow(0, 1, 2).toNestedSync(), [
    [4, 5, 6, 7],
    [8, 9, 10, 11],
  ]);
  assert.equal(t.narrow(-1, 3, 1).toNestedSync(), [[3], [7], [11]]);
  assert.equal(t.narrow(1, 4, 0).shape, [3, 0]);
  throwsWith(
    () => t.narrow(1, 2, 3),
    ShapeError,
    /^narrow: start 2 \+ len 3 out of range for dim 1 of size 4 \(tensor \[3, 4\]\)/,
  );
  throwsWith(() => t.narrow(0, -1, 1), ShapeError, /narrow:/);
  assert.equal(t.slice(1, 1, 3).toNestedSync(), [
    [1, 2],
    [5, 6],
    [9, 10],
  ]);
  assert.equal(t.slice(1, -3).toNestedSync(), [
    [1, 2, 3],
    [5, 6, 7],
    [9, 10, 11],
  ]);
  assert.equal(t.slice(1, 0, -1, 2).toNestedSync(), [
    [0, 2],
    [4, 6],
    [8, 10],
  ]);
  assert.equal(t.slice(0, 0, 100, 2).toNestedSync(), [
    [0, 1, 2, 3],
    [8, 9, 10, 11],
  ]);
  assert.equal(t.slice(0, 2, 1).shape, [0, 4]);
  assert.equal(Tensor.arange(10).slice(0, 1, 8, 3).toNestedSync(), [1, 4, 7]);
  throwsWith(() => t.slice(0, 0, 3, 0), ShapeError, /^slice: step must be a positive integer, got 0/);
});

test('broadcastAs, expand, squeeze, unsqueeze, flatten', () => {
  const r = Tensor.from([1, 2, 3]);
  const b = r.broadcastAs([2, 3]);
  assert.equal(b.strides, [0, 1]);
  assert.equal(b.toNestedSync(), [
    [1, 2, 3],
    [1, 2, 3],
  ]);
  assert.equal(
    Tensor.from([[1], [2]])
      .expand([-1, 3])
      .toNestedSync(),
    [
      [1, 1, 1],
      [2, 2, 2],
    ],
  );
  assert.equal(r.expand([2, -1]).shape, [2, 3]);
  throwsWith(() => r.broadcastAs([3, 2]), ShapeError, /^broadcastAs: cannot broadcast \[3\] to \[3, 2\]/);
  throwsWith(() => r.broadcastAs([]), ShapeError, /broadcastAs:/);
  const s = Tensor.zeros([1, 3, 1, 2]);
  assert.equal(s.squeeze().shape, [3, 2]);
  assert.equal(s.squeeze(2).shape, [1, 3, 2]);
  assert.equal(s.squeeze(1).shape, [1, 3, 1, 2]); // not size 1: unchanged, like torch
  assert.equal(r.unsqueeze(0).shape, [1, 3]);
  assert.equal(r.unsqueeze(-1).shape, [3, 1]);
  assert.equal(r.unsqueeze(1).toNestedSync(), [[1], [2], [3]]);
  throwsWith(() => r.unsqueeze(3), ShapeError, /^unsqueeze: dim 3 out of range/);
  throwsWith(() => s.squeeze(4), ShapeError, /^squeeze: dim 4 out of range/);
  const x = Tensor.arange(24).reshape([2, 3, 4]);
  assert.equal(x.flatten().shape, [24]);
  assert.equal(x.flatten(1).shape, [2, 12]);
  assert.equal(x.flatten(0, 1).shape, [6, 4]);
  assert.equal(x.T.flatten().shape, [24]);
  assert.equal(nums(x.transpose(1, 2).flatten(1)).slice(0, 4), [0, 4, 8, 1]);
  assert.equal(Tensor.from(5).flatten().shape, [1]);
  throwsWith(() => x.flatten(2, 1), ShapeError, /^flatten: start dim 2 after end dim 1/);
});

test('contiguous: same values, row-major strides, a view when already contiguous', () => {
  const t = randT([3, 5], 'bf16');
  const nc = t.T;
  assert.not.ok(nc.isContiguous());
  const c = nc.contiguous();
  assert.ok(c.isContiguous());
  assert.equal(c.strides, [3, 1]);
  assert.equal(c.toNestedSync(), nc.toNestedSync());
  const same = t.contiguous();
  assert.is(same.storage, t.storage);
  const big = Tensor.from(BigInt64Array.from([2n ** 60n + 1n, 2n, 3n, 4n]), { shape: [2, 2] }).T.contiguous();
  assert.equal(Array.from(big.toArraySync() as BigInt64Array), [2n ** 60n + 1n, 3n, 2n, 4n]);
});

test('cat, stack, chunk', () => {
  const a = Tensor.from([
      [1, 2],
      [3, 4],
    ]),
    b = Tensor.from([[5], [6]]);
  assert.equal(Tensor.cat([a, b], 1).toNestedSync(), [
    [1, 2, 5],
    [3, 4, 6],
  ]);
  assert.equal(Tensor.cat([a, a.T], 0).toNestedSync(), [
    [1, 2],
    [3, 4],
    [1, 3],
    [2, 4],
  ]);
  assert.equal(Tensor.cat([a, Tensor.zeros([0, 2])], 0).shape, [2, 2]);
  assert.equal(Tensor.cat([a], -1).toNestedSync(), [
    [1, 2],
    [3, 4],
  ]);
  throwsWith(() => Tensor.cat([a, b], 0), ShapeError, /^cat: shapes \[2, 2\], \[2, 1\] differ outside dim 0/);
  throwsWith(
    () => Tensor.cat([a, a.toDtype('f64')], 0),
    DTypeError,
    /^cat: dtype mismatch \(\[2, 2\] f32 vs \[2, 2\] f64\)/,
  );
  throwsWith(() => Tensor.cat([], 0), ShapeError, /^cat: no tensors given/);
  const s = Tensor.stack([Tensor.from([1, 2]), Tensor.from([3, 4])], 1);
  assert.equal(s.toNestedSync(), [
    [1, 3],
    [2, 4],
  ]);
  assert.equal(Tensor.stack([a, a]).shape, [2, 2, 2]);
  assert.equal(Tensor.stack([a, a], -1).shape, [2, 2, 2]);
  throwsWith(() => Tensor.stack([]), ShapeError, /^stack: no tensors given/);
  throwsWith(() => Tensor.stack([a, b]), ShapeError, /cat: shapes/);
  const ch = Tensor.arange(7).chunk(3);
  assert.equal(
    ch.map((c) => nums(c)),
    [[0, 1, 2], [3, 4, 5], [6]],
  );
  assert.equal(
    Tensor.arange(6)
      .reshape([2, 3])
      .chunk(3, 1)
      .map((c) => c.shape),
    [
      [2, 1],
      [2, 1],
      [2, 1],
    ],
  );
  assert.equal(Tensor.arange(2).chunk(5).length, 2);
  throwsWith(() => Tensor.arange(4).chunk(0), ShapeError, /^chunk: chunks must be a positive integer, got 0/);
});

test('readback: toArray, toNested, item, and their sync forms', async () => {
  const t = Tensor.from(
    [
      [1.5, -2],
      [3, 4],
    ],
    { dtype: 'f16' },
  );
  const a = await t.toArray();
  assert.ok(a instanceof Float32Array);
  assert.equal(Array.from(a), [1.5, -2, 3, 4]);
  assert.equal(nums(t), [1.5, -2, 3, 4]);
  assert.equal(await t.T.toNested(), [
    [1.5, 3],
    [-2, 4],
  ]);
  assert.equal(t.T.toNestedSync(), [
    [1.5, 3],
    [-2, 4],
  ]);
  const raw = await t.toRawArray();
  assert.ok(raw instanceof Uint16Array);
  assert.is(raw[0], 0x3e00);
  assert.ok((await Tensor.from([1], { dtype: 'u8' }).toArray()) instanceof Uint8Array);
  assert.ok((await Tensor.from([1], { dtype: 'i64' }).toArray()) instanceof BigInt64Array);
  assert.is(await Tensor.from([[2.5]]).item(), 2.5);
  assert.is(Tensor.from(9, { dtype: 'u32' }).itemSync(), 9);
  assert.is(t.narrow(0, 1, 1).narrow(1, 1, 1).itemSync(), 4);
  throwsWith(() => t.itemSync(), ShapeError, /^item: tensor \[2, 2\] has 4 elements, not 1/);
  assert.equal(Tensor.zeros([0]).toNestedSync(), []);
  assert.equal(Tensor.zeros([2, 0]).toNestedSync(), [[], []]);
  assert.is(Tensor.from(3).toNestedSync(), 3);
});

test('copy2d', () => {
  const src = Tensor.arange(12, undefined, 1, { dtype: 'f64' });
  const dst = Tensor.zeros([10], { dtype: 'f64' });
  Tensor.copy2d(src, dst, { rows: 2, cols: 3, srcStride: 4, dstStride: 5, srcOffset: 1, dstOffset: 1 });
  assert.equal(nums(dst), [0, 1, 2, 3, 0, 0, 5, 6, 7, 0]);
  Tensor.copy2d(src, dst, { rows: 0, cols: 3, srcStride: 4, dstStride: 5 });
  throwsWith(
    () => Tensor.copy2d(src, dst, { rows: 3, cols: 3, srcStride: 4, dstStride: 5 }),
    ShapeError,
    /^copy2d: 3x3 block .* does not fit src \[12\] f64 \/ dst \[10\] f64/,
  );
  throwsWith(
    () => Tensor.copy2d(src, dst.toDtype('f32'), { rows: 1, cols: 1, srcStride: 1, dstStride: 1 }),
    DTypeError,
    /^copy2d: dtype mismatch/,
  );
  throwsWith(
    () => Tensor.copy2d(src.reshape([3, 4]).T, dst, { rows: 1, cols: 1, srcStride: 1, dstStride: 1 }),
    ShapeError,
    /^copy2d: src \[4, 3\] f64 and dst \[10\] f64 must be contiguous/,
  );
  assert.throws(
    () => Tensor.copy2d(src, dst, { rows: -1, cols: 1, srcStride: 1, dstStride: 1 }),
    /copy2d: rows, cols, strides and offsets must be integers/,
  );
});

test('constSet/fill on views, rounded to the dtype', () => {
  const t = Tensor.zeros([3, 4]);
  t.narrow(1, 1, 2).fill(7);
  assert.equal(t.toNestedSync(), [
    [0, 7, 7, 0],
    [0, 7, 7, 0],
    [0, 7, 7, 0],
  ]);
  t.T.narrow(0, 3, 1).constSet(-1);
  assert.equal(nums(t.narrow(1, 3, 1)), [-1, -1, -1]);
  assert.equal(nums(Tensor.zeros([2], { dtype: 'f16' }).fill(0.1)), [0.0999755859375, 0.0999755859375]);
  assert.equal(nums(Tensor.zeros([2], { dtype: 'u8' }).fill(-1)), [255, 255]);
  assert.equal(nums(Tensor.zeros([1], { dtype: 'u32' }).fill(3.9)), [3]);
  assert.equal(Array.from(Tensor.zeros([2], { dtype: 'i64' }).fill(-5).toArraySync() as BigInt64Array), [-5n, -5n]);
  const r = Tensor.zeros([2]);
  assert.is(r.fill(1), r, 'returns this');
  assert.throws(() => r.fill('1' as unknown as number), /constSet: value must be a number/);
});

test('sliceSet', () => {
  const z = Tensor.zeros([3, 4]);
  z.sliceSet(
    Tensor.from([
      [1, 2],
      [3, 4],
      [5, 6],
    ]),
    1,
    2,
  );
  assert.equal(z.toNestedSync(), [
    [0, 0, 1, 2],
    [0, 0, 3, 4],
    [0, 0, 5, 6],
  ]);
  z.T.sliceSet(Tensor.from([[9, 9, 9]]), 0, 0);
  assert.equal(nums(z.narrow(1, 0, 1)), [9, 9, 9]);
  throwsWith(
    () => z.sliceSet(Tensor.ones([3, 2]), 1, 3),
    ShapeError,
    /^sliceSet: cannot write \[3, 2\] f32 into \[3, 4\] f32 at 3 along dim 1/,
  );
  throwsWith(() => z.sliceSet(Tensor.ones([2, 2]), 1, 0), ShapeError, /sliceSet:/);
  throwsWith(
    () => z.sliceSet(Tensor.ones([3, 2], { dtype: 'f16' }), 1, 0),
    DTypeError,
    /^sliceSet: dtype mismatch \(\[3, 4\] f32 vs \[3, 2\] f16\)/,
  );
});

test('dispose, views keep storage alive, tidy and keep', async () => {
  const t = Tensor.ones([4]);
  const v = t.narrow(0, 1, 2);
  t.dispose();
  t.dispose(); // twice is fine
  assert.ok(t.isDisposed);
  assert.equal(nums(v), [1, 1]);
  throwsWith(
    () => t.toArraySync(),
    DisposedError,
    /^toArraySync: Tensor\(\[4\], f32, cpu\) was used after dispose\(\)/,
  );
  throwsWith(() => t.reshape([2, 2]), DisposedError, /reshape:/);
  v.dispose();
  const before = liveTensors().length;
  let inner: Tensor | null = null,
    kept: Tensor | null = null;
  const out = tidy(() => {
    inner = Tensor.ones([2]);
    kept = keep(Tensor.zeros([2]));
    return { a: inner.add(1), list: [Tensor.ones([1])] };
  });
  assert.ok(inner!.isDisposed);
  assert.not.ok(kept!.isDisposed);
  assert.not.ok(out.a.isDisposed);
  assert.not.ok(out.list[0]!.isDisposed);
  assert.equal(nums(out.a), [2, 2]);
  out.a.dispose();
  out.list[0]!.dispose();
  kept!.dispose();
  assert.is(liveTensors().length, before);
  let leaked: Tensor | null = null;
  const err = await tidy(async () => {
    leaked = Tensor.ones([1]);
    throw new Error('boom');
  }).then(
    () => null,
    (e: Error) => e,
  );
  assert.is(err?.message, 'boom');
  assert.ok(leaked!.isDisposed, 'a rejected tidy still disposes');
});

test.run();
