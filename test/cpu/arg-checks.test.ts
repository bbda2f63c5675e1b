// Arguments of the wrong type or value fail where the call is made, with a sentence naming the
// op, the argument and what was expected: integer dtypes refuse values they cannot hold at
// creation (NaN, fractions, out of range) instead of wrapping; indexing ops name their argument
// order when called in PyTorch's; the static constructors check shapes, dtypes, devices and
// their options record.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor, DTypeError, ShapeError, TensorError } from '../../src/index.ts';
import { nums, throwsWith } from '../helpers.ts';

test('integer dtypes: from() refuses NaN, fractions and values out of range, naming value, index and dtype', () => {
  throwsWith(() => Tensor.from([NaN, 300, -1], { dtype: 'u8' }), DTypeError, 'from', 'NaN', 'index 0', 'u8');
  throwsWith(() => Tensor.from([1, 300, -1], { dtype: 'u8' }), DTypeError, 'value 300 at index 1', 'u8', '0 to 255');
  throwsWith(() => Tensor.from([1, 2, -1], { dtype: 'u8' }), DTypeError, 'value -1 at index 2');
  throwsWith(() => Tensor.from([1e10], { dtype: 'u32' }), DTypeError, 'value 10000000000 at index 0', 'u32');
  throwsWith(() => Tensor.from([2.5], { dtype: 'i64' }), DTypeError, 'value 2.5', 'not an integer', 'i64');
  throwsWith(() => Tensor.from([2 ** 63], { dtype: 'i64' }), DTypeError, 'i64');
  throwsWith(() => Tensor.from(300, { dtype: 'u8' }), DTypeError, 'value 300', 'u8');
  throwsWith(() => Tensor.from([[1], [Infinity]], { dtype: 'u32' }), DTypeError, 'Infinity', 'index 1');
  throwsWith(() => Tensor.from(new Float32Array([-1, 256]), { dtype: 'u8' }), DTypeError, 'value -1 at index 0');
  throwsWith(() => Tensor.from(new Int32Array([5, -5]), { dtype: 'u32' }), DTypeError, 'value -5 at index 1');
  throwsWith(() => Tensor.from(BigInt64Array.from([1n, 258n]), { dtype: 'u8' }), DTypeError, 'value 258 at index 1');
  throwsWith(() => Tensor.full([2], -1, { dtype: 'u32' }), DTypeError, 'full', 'value -1', 'u32');
  throwsWith(() => Tensor.full([2], NaN, { dtype: 'i64' }), DTypeError, 'full', 'NaN');
  throwsWith(() => Tensor.arange(250, 260, 1, { dtype: 'u8' }), DTypeError, 'arange', 'value 256 at index 6');
  throwsWith(() => Tensor.arange(0, 1, 0.5, { dtype: 'i64' }), DTypeError, 'arange', 'value 0.5');
  // what fits is stored exactly; floats still round; casts still wrap (documented)
  assert.equal(nums(Tensor.from([0, 255], { dtype: 'u8' })), [0, 255]);
  assert.equal(nums(Tensor.from([0, 2 ** 32 - 1], { dtype: 'u32' })), [0, 2 ** 32 - 1]);
  assert.equal(nums(Tensor.from([-(2 ** 53), 2 ** 53], { dtype: 'i64' })), [-(2 ** 53), 2 ** 53]);
  assert.equal(nums(Tensor.from(new Float32Array([3, 4]), { dtype: 'u8' })), [3, 4]);
  assert.equal(nums(Tensor.from([NaN, 1e40], { dtype: 'f32' })), [NaN, Infinity]);
  assert.equal(nums(Tensor.from([300, -1], { dtype: 'f32' }).toDtype('u8')), [44, 255]);
});

test('indexing ops: a call in PyTorch order names the order this library takes', () => {
  const x = Tensor.from([
    [1, 2],
    [3, 4],
  ]);
  const ids = Tensor.from([1, 0], { dtype: 'u32' });
  const ids2 = Tensor.from(
    [
      [1, 0],
      [0, 1],
    ],
    { dtype: 'u32' },
  );
  const call = (fn: () => unknown) => fn as () => unknown;
  const wrong = x as unknown as number;
  throwsWith(
    call(() => x.indexSelect(0 as unknown as Tensor, ids as unknown as number)),
    TensorError,
    'indexSelect: ids must be a Tensor, got the number 0',
    'x.indexSelect(ids, dim)',
  );
  throwsWith(
    call(() => x.gather(0 as unknown as Tensor, ids2 as unknown as number)),
    TensorError,
    'gather: ids must be a Tensor',
    'x.gather(ids, dim)',
  );
  throwsWith(
    call(() => x.scatter(0 as unknown as Tensor, ids2, x as unknown as number)),
    TensorError,
    'scatter: ids must be a Tensor',
    'x.scatter(ids, src, dim)',
  );
  throwsWith(
    call(() => x.scatterAdd(ids2, x, ids2 as unknown as number)),
    TensorError,
    'scatterAdd: dim must be an integer, got a Tensor [2, 2] u32',
    'x.scatterAdd(ids, src, dim)',
  );
  throwsWith(
    call(() => x.indexAdd(0 as unknown as Tensor, ids, wrong)),
    TensorError,
    'indexAdd: ids must be a Tensor',
    'x.indexAdd(ids, src, dim)',
  );
  throwsWith(
    call(() => x.indexSelect(ids, 0.5)),
    TensorError,
    'indexSelect: dim must be an integer, got the number 0.5',
  );
  throwsWith(
    call(() => Tensor.embedding(ids, [[1]] as unknown as Tensor)),
    TensorError,
    'embedding: table must be a Tensor',
  );
  // the right order still works
  assert.equal(nums(x.indexSelect(ids, 0)), [3, 4, 1, 2]);
  assert.equal(nums(x.gather(ids2, 1)), [2, 1, 3, 4]);
});

test('constructors: shapes, dtypes, devices and the options record are checked by name', () => {
  throwsWith(
    () => Tensor.zeros(3 as unknown as number[]),
    ShapeError,
    'zeros: shape must be an array',
    'got the number 3',
    '[3]',
  );
  throwsWith(() => Tensor.ones('2' as unknown as number[]), ShapeError, 'ones: shape', "the string '2'");
  throwsWith(() => Tensor.rand(4 as unknown as number[]), ShapeError, 'rand: shape');
  throwsWith(() => Tensor.randn([2, -1]), ShapeError, 'randn', 'entry 1');
  throwsWith(() => Tensor.randint(0, 4, 2 as unknown as number[]), ShapeError, 'randint: shape');
  throwsWith(() => Tensor.empty([2], 'f32', 'tpu'), TensorError, "device: cannot parse 'tpu'");
  const e = Tensor.empty([2, 3], 'f32', 'cpu');
  assert.equal(e.shape, [2, 3]);
  assert.is(e.device.kind, 'cpu');
  throwsWith(() => Tensor.empty([2], 'float' as 'f32'), DTypeError, 'empty: unknown dtype', "the string 'float'");
  throwsWith(
    () => Tensor.empty([2], 'f32', 3 as unknown as 'cpu'),
    TensorError,
    'a Device or a string',
    'the number 3',
  );
  throwsWith(
    () => Tensor.zeros([2], 'f32' as unknown as { dtype: 'f32' }),
    TensorError,
    'zeros: options must be an object',
    "the string 'f32'",
  );
  throwsWith(() => Tensor.from([1], { dtype: 'f8' as 'f32' }), DTypeError, 'from: unknown dtype');
  throwsWith(() => Tensor.from([1, 2], { shape: 2 as unknown as number[] }), ShapeError, 'from: shape');
  throwsWith(() => Tensor.from('12' as unknown as number[]), TensorError, 'from: data must be', "the string '12'");
  throwsWith(() => Tensor.full([2], '1' as unknown as number), TensorError, 'full: value must be a number');
  throwsWith(() => x().matmul([[1]] as unknown as Tensor), TensorError, 'matmul: other must be a Tensor, got an array');
  throwsWith(
    () => x().rmsNorm(undefined as unknown as Tensor),
    TensorError,
    'rmsNorm: w must be a Tensor, got undefined',
  );
});

const x = () => Tensor.from([[1, 2]]);

test('linear: a bias passed where the options go is refused, naming the options', () => {
  const x = Tensor.rand([2, 3]),
    w = Tensor.rand([4, 3]),
    b = Tensor.rand([4]);
  throwsWith(() => x.linear(w, b as never), TensorError, 'linear', 'options', 'a tensor [4] f32', '{ bias }');
  throwsWith(() => x.linear(w, 3 as never), TensorError, 'linear', 'options', 'got 3');
  for (const t of [x, w, b]) t.dispose();
});

test.run();
