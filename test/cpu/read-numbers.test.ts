// src/backends/cpu/util.ts readNumbers: the dense path (a typed-array loop; f16, bf16 and i64 through
// getElem) reads every element as getElem does, for every dtype, every f16 and bf16
// bit pattern, at an offset into the storage, and the strided path is unchanged.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor, Device, type DType } from '../../src/index.ts';
import { DTYPES, DTYPE_INFO, getElem, type HostArray } from '../../src/core/dtype.ts';
import { fromRaw, readNumbers } from '../../src/backends/cpu/util.ts';

const cpu = Device.cpu();

/** the first element where readNumbers differs from getElem over t's storage indices, or '' */
function firstDiff(t: Tensor, host: HostArray): string {
  const got = readNumbers(t),
    idx = t.layout.indices();
  if (got.length !== idx.length) return `length ${got.length}, want ${idx.length}`;
  for (let i = 0; i < idx.length; i++) {
    const want = getElem(t.dtype, host, idx[i]!);
    if (!Object.is(got[i], want)) return `element ${i}: ${got[i]}, getElem ${want}`;
  }
  return '';
}

test('f16 and bf16: every bit pattern, whole and from an offset', () => {
  for (const d of ['f16', 'bf16'] as const) {
    const raw = new Uint16Array(65536).map((_, i) => i),
      t = Tensor.wrap(fromRaw(raw, [65536], d, cpu));
    assert.is(firstDiff(t, raw), '', d);
    assert.is(firstDiff(t.narrow(0, 1001, 5000), raw), '', `${d} at an offset`);
  }
});

test('every dtype: dense, at an offset, and strided', () => {
  for (const d of DTYPES as readonly DType[]) {
    const raw = new DTYPE_INFO[d].hostArray(4 * 13);
    const bytes = new Uint8Array(raw.buffer);
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 167 + 13) & 255; // arbitrary bytes: every kind of pattern
    const t = Tensor.wrap(fromRaw(raw, [4, 13], d, cpu));
    assert.is(firstDiff(t, raw), '', `${d} dense`);
    assert.is(firstDiff(t.narrow(0, 1, 2), raw), '', `${d} at an offset`);
    assert.is(firstDiff(t.transpose(0, 1), raw), '', `${d} strided`);
  }
  const values = [0, -0, 1, -1.5, 2 ** 40, 1e-300, Infinity, -Infinity, NaN];
  assert.equal(Array.from(readNumbers(Tensor.from(values, { dtype: 'f64' }))), values);
});

test.run();
