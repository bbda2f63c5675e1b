import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor, DTypeError, ShapeError, DisposedError, liveTensors, type DType } from '../../src/index.ts';
import { randT, withLayout, LAYOUTS, assertClose, relErr, TOL, nums, throwsLike } from '../helpers.ts';

const HALF_AND_FULL: DType[] = ['f32', 'f64', 'f16', 'bf16'];

/** plain triple loop over numbers, independent of the library */
function naive(a: number[], b: number[], m: number, k: number, n: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < m; i++)
    for (let j = 0; j < n; j++) {
      let s = 0;
      for (let q = 0; q < k; q++) s += a[i * k + q]! * b[q * n + j]!;
      out.push(s);
    }
  return out;
}

test('2-d known values', () => {
  const a = Tensor.from([
      [1, 2, 3],
      [4, 5, 6],
    ]),
    b = Tensor.from([
      [7, 8],
      [9, 10],
      [11, 12],
    ]);
  assert.equal(a.matmul(b).toNestedSync(), [
    [58, 64],
    [139, 154],
  ]);
  assert.equal(b.matmul(a).toNestedSync(), [
    [39, 54, 69],
    [49, 68, 87],
    [59, 82, 105],
  ]);
});

test('1-d operands follow PyTorch: row, column, dot', () => {
  const m = Tensor.from([
    [1, 2],
    [3, 4],
  ]);
  const v = Tensor.from([5, 6]);
  const vm = v.matmul(m),
    mv = m.matmul(v),
    vv = v.matmul(v);
  assert.equal(vm.shape, [2]);
  assert.equal(nums(vm), [23, 34]);
  assert.equal(mv.shape, [2]);
  assert.equal(nums(mv), [17, 39]);
  assert.equal(vv.shape, []);
  assert.is(vv.itemSync(), 61);
  // [k] x [b, k, n] -> [b, n]; [b, m, k] x [k] -> [b, m]
  const batch = Tensor.from([
    [
      [1, 0],
      [0, 1],
    ],
    [
      [2, 0],
      [0, 3],
    ],
  ]);
  const vb = v.matmul(batch),
    bv = batch.matmul(v);
  assert.equal(vb.shape, [2, 2]);
  assert.equal(vb.toNestedSync(), [
    [5, 6],
    [10, 18],
  ]);
  assert.equal(bv.shape, [2, 2]);
  assert.equal(bv.toNestedSync(), [
    [5, 6],
    [10, 18],
  ]);
});

test('batched with broadcast batch dims matches per-batch naive products', () => {
  const a = randT([2, 1, 3, 4]),
    b = randT([3, 4, 5]);
  const c = a.matmul(b);
  assert.equal(c.shape, [2, 3, 3, 5]);
  const av = nums(a),
    bv = nums(b),
    cv = nums(c);
  for (let i = 0; i < 2; i++)
    for (let j = 0; j < 3; j++) {
      const want = naive(av.slice(i * 12, i * 12 + 12), bv.slice(j * 20, j * 20 + 20), 3, 4, 5);
      const got = cv.slice((i * 3 + j) * 15, (i * 3 + j + 1) * 15);
      assertClose(got, want, 1e-5, 1e-5, `batch ${i},${j}`);
    }
  // rank-2 operand against a batched one: broadcast over the batch
  const m2 = randT([4, 2]);
  const d = randT([3, 5, 4]).matmul(m2);
  assert.equal(d.shape, [3, 5, 2]);
});

test('identities: A I = A, (A B)^T = B^T A^T, associativity', () => {
  const a = randT([4, 5], 'f64'),
    b = randT([5, 3], 'f64'),
    c = randT([3, 2], 'f64');
  assertClose(nums(a.matmul(Tensor.eye(5, { dtype: 'f64' }))), nums(a), 0, 0, 'A I');
  assertClose(nums(a.matmul(b).T.contiguous()), nums(b.T.matmul(a.T)), 1e-14, 1e-14, 'transpose');
  assertClose(nums(a.matmul(b).matmul(c)), nums(a.matmul(b.matmul(c))), 1e-12, 1e-12, 'assoc');
});

test('every float dtype: f64 accumulation, one rounding on store', () => {
  for (const dt of HALF_AND_FULL) {
    const a = randT([3, 7], dt),
      b = randT([7, 4], dt);
    const want = naive(nums(a), nums(b), 3, 7, 4);
    const c = a.matmul(b);
    assert.is(c.dtype, dt);
    const rounded = nums(Tensor.from(want, { shape: [3, 4], dtype: dt }));
    // the reference rounds the exact f64 sum once: equal to the rounded naive sum
    assertClose(
      nums(c),
      rounded,
      dt === 'f64' ? 1e-14 : dt === 'f32' ? 1e-6 : 0,
      dt === 'f64' ? 1e-14 : dt === 'f32' ? 1e-6 : 0,
      dt,
    );
    assert.ok(relErr(nums(c), want) <= TOL[dt], `${dt}: relErr ${relErr(nums(c), want)}`);
  }
});

test('half types do not accumulate in half precision', () => {
  // 1 + 4 * 2^-11 in f16: summed in f16 each add is a tie that rounds back to 1
  const a16 = Tensor.from([[1, 2 ** -11, 2 ** -11, 2 ** -11, 2 ** -11]], { dtype: 'f16' });
  const ones16 = Tensor.ones([5, 1], { dtype: 'f16' });
  assert.is(nums(a16.matmul(ones16))[0], 1 + 2 ** -9);
  const ab = Tensor.from([[1, 2 ** -8, 2 ** -8, 2 ** -8, 2 ** -8]], { dtype: 'bf16' });
  assert.is(nums(ab.matmul(Tensor.ones([5, 1], { dtype: 'bf16' })))[0], 1 + 2 ** -6);
});

test('non-contiguous operands give the contiguous result', () => {
  for (const dt of ['f32', 'bf16'] as DType[]) {
    const a = randT([4, 6], dt),
      b = randT([6, 5], dt);
    for (const ka of LAYOUTS)
      for (const kb of LAYOUTS) {
        const A = withLayout(a, ka),
          B = withLayout(b, kb);
        const got = nums(A.x.matmul(B.x)),
          want = nums(A.ref.contiguous().matmul(B.ref.contiguous()));
        assert.equal(got, want, `${dt} ${ka} x ${kb}`);
      }
  }
  // a stride-0 batch operand and a transposed batch
  const a = randT([1, 3, 4]),
    b = randT([2, 5, 4]);
  const got = a.broadcastAs([2, 3, 4]).matmul(b.transpose(1, 2));
  const want = a.broadcastAs([2, 3, 4]).contiguous().matmul(b.transpose(1, 2).contiguous());
  assert.equal(nums(got), nums(want));
});

test('empty and size-1 dims', () => {
  const z = Tensor.from(new Float32Array(0), { shape: [3, 0] }).matmul(
    Tensor.from(new Float32Array(0), { shape: [0, 2] }),
  );
  assert.equal(z.shape, [3, 2]);
  assert.equal(nums(z), [0, 0, 0, 0, 0, 0]);
  const e = randT([0, 4]).matmul(randT([4, 3]));
  assert.equal(e.shape, [0, 3]);
  const eb = randT([0, 2, 4]).matmul(randT([4, 3]));
  assert.equal(eb.shape, [0, 2, 3]);
  const one = Tensor.from([[3]]).matmul(Tensor.from([[-2]]));
  assert.equal(one.toNestedSync(), [[-6]]);
  const outer = Tensor.from([[1], [2]]).matmul(Tensor.from([[3, 4]]));
  assert.equal(outer.toNestedSync(), [
    [3, 4],
    [6, 8],
  ]);
});

test('NaN and inf propagate to their row / column only', () => {
  const a = Tensor.from([
      [1, NaN],
      [1, 1],
    ]),
    b = Tensor.from([
      [1, 0],
      [0, 1],
    ]);
  const c = nums(a.matmul(b));
  assert.ok(Number.isNaN(c[0]!) && Number.isNaN(c[1]!));
  assert.equal(c.slice(2), [1, 1]);
  const inf = nums(Tensor.from([[Infinity, 1]]).matmul(Tensor.from([[1], [1]])));
  assert.equal(inf, [Infinity]);
});

test('leaves no views behind', () => {
  const a = Tensor.from([1, 2]),
    b = Tensor.from([
      [1, 2],
      [3, 4],
    ]);
  const before = liveTensors().length;
  const c = a.matmul(b),
    d = b.matmul(a),
    e = a.matmul(a);
  assert.is(liveTensors().length, before + 3);
  c.dispose();
  d.dispose();
  e.dispose();
  assert.is(liveTensors().length, before);
});

test('bad inputs', () => {
  const a = Tensor.from([
    [1, 2, 3],
    [4, 5, 6],
  ]);
  throwsLike(() => a.matmul(Tensor.ones([4, 2])), ShapeError, ['matmul', '[2, 3] f32', '[4, 2] f32']);
  throwsLike(() => a.toDtype('u8').matmul(Tensor.ones([3, 2], { dtype: 'u8' })), DTypeError, [
    'matmul',
    'u8',
    '[2, 3]',
  ]);
  throwsLike(() => a.toDtype('i64').matmul(Tensor.ones([3, 2], { dtype: 'i64' })), DTypeError, ['matmul', 'i64']);
  throwsLike(() => a.matmul(Tensor.ones([3, 2], { dtype: 'f64' })), DTypeError, ['matmul', '[2, 3] f32', '[3, 2] f64']);
  throwsLike(() => Tensor.ones([2, 2, 3]).matmul(Tensor.ones([3, 3, 2])), ShapeError, [
    'matmul',
    '[2, 2, 3]',
    '[3, 3, 2]',
    'batch',
  ]);
  throwsLike(() => Tensor.from(3).matmul(a), ShapeError, ['matmul', 'rank', '[] f32']);
  throwsLike(() => Tensor.from([1, 2]).matmul(Tensor.from([1, 2, 3])), ShapeError, ['matmul', '[2] f32', '[3] f32']);
  const gone = Tensor.ones([3, 2]);
  gone.dispose();
  throwsLike(() => a.matmul(gone), DisposedError, ['matmul']);
});

test.run();
