// What src/ffi and src/runtime rely on koffi for, checked against libc under the runtime running
// the test (koffi is an N-API module; Bun implements N-API itself, over JavaScriptCore): tables
// declared from prototype strings, device pointers as uint64 bigints, `_Out_` cells giving
// pointers back as bigint, opaque handles that round-trip, C strings as results and read from
// host memory, typed arrays passed as pointers (out cells and host buffers of the CUDA backend),
// and koffi.view over koffi.alloc memory aliasing it in both directions (pinned staging and the
// launch block write through such views; a copy there would send stale bytes).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import koffi from 'koffi';
import { mkdtempSync, openSync, readSync, closeSync, rmSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  declareTable,
  ptrOf,
  readCString,
  registerAliases,
  type NativeFn,
  type NativeTable,
  type OutCell,
} from '../../src/ffi/native.ts';

registerAliases([{ name: 'test_file_t', c: 'FILE *', cls: 'pointer', handle: true }]);

const TABLE: NativeTable = {
  memset: { proto: 'devptr_t memset(devptr_t s, int c, size_t n)' },
  memcpy: { proto: 'devptr_t memcpy(devptr_t dst, cdevptr_t src, size_t n)' },
  posix_memalign: { proto: 'int posix_memalign(_Out_ void **memptr, size_t alignment, size_t size)' },
  free: { proto: 'void free(devptr_t p)' },
  getcwd: { proto: 'devptr_t getcwd(devptr_t buf, size_t size)' },
  strerror: { proto: 'const char *strerror(int errnum)' },
  fopen: { proto: 'test_file_t fopen(const char *path, const char *mode)' },
  fileno: { proto: 'int fileno(test_file_t f)' },
  fclose: { proto: 'int fclose(test_file_t f)' },
  // typed arrays passed where C takes a pointer, as the CUDA backend passes its out cells and
  // host buffers (cuMemAlloc_v2(BigUint64Array), cuMemcpyDtoH_v2(Uint8Array), ...)
  memalign_ta: { proto: 'int posix_memalign(void *memptr, size_t alignment, size_t size)' },
  memcpy_ta: { proto: 'void *memcpy(void *dst, const void *src, size_t n)' },
  getcwd_ta: { proto: 'char *getcwd(void *buf, size_t size)' },
  not_in_libc: { proto: 'int rocm_tensor_no_such_symbol(int x)', optional: true },
};

const libc = koffi.load('libc.so.6');
const fns = declareTable(libc, TABLE, 'libc.so.6');
type Fn<A extends unknown[], R> = (...a: A) => R;
const fn = <A extends unknown[], R>(name: string) => fns.get(name) as unknown as Fn<A, R> & NativeFn;

const memset = fn<[bigint, number, number], unknown>('memset');
const memcpy = fn<[bigint, bigint, number], unknown>('memcpy');

test('tables: required functions declared, a missing optional one is null', () => {
  for (const k of Object.keys(TABLE)) assert.ok(fns.has(k), k);
  assert.is(fns.get('not_in_libc'), null);
  assert.ok(fns.get('memset'));
});

test('koffi.view over koffi.alloc memory aliases it both ways', () => {
  const p = koffi.alloc('uint8_t', 256) as bigint;
  try {
    assert.is(typeof p, 'bigint');
    const v = new Uint8Array(koffi.view(p, 256));
    memset(p, 0x5a, 256);
    assert.ok(
      v.every((b) => b === 0x5a),
      'native writes show in the view',
    );
    for (let i = 0; i < 256; i++) v[i] = i;
    const q = koffi.alloc('uint8_t', 256) as bigint;
    try {
      memcpy(q, p, 256); // native reads what the view wrote
      const w = new Uint8Array(koffi.view(q, 256));
      assert.ok(
        w.every((b, i) => b === i),
        'view writes reach native memory',
      );
      // a view at an offset (readCString does this) sees the same bytes
      assert.is(new Uint8Array(koffi.view(q + 17n, 1))[0], 17);
    } finally {
      koffi.free(q);
    }
  } finally {
    koffi.free(p);
  }
});

test('file reads into a view over koffi memory land in that memory (staged uploads read files into pinned views)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rt-koffi-'));
  const file = join(dir, 'data.bin');
  const data = Uint8Array.from({ length: 1 << 16 }, (_, i) => (i * 7 + 3) & 0xff);
  writeFileSync(file, data);
  const p = koffi.alloc('uint8_t', 1 << 17) as bigint;
  try {
    const view = new Uint8Array(koffi.view(p, 1 << 17));
    const fh = await open(file, 'r');
    try {
      // async read into the second half of the view, from an offset in the file
      const { bytesRead } = await fh.read(view.subarray(1 << 16), 0, 1000, 5000);
      assert.is(bytesRead, 1000);
    } finally {
      await fh.close();
    }
    const fd = openSync(file, 'r');
    try {
      assert.is(readSync(fd, view.subarray(0, 1 << 16), 0, 1 << 16, 0), 1 << 16);
    } finally {
      closeSync(fd);
    }
    // read the native memory back through libc, not through the view
    const back = new Uint8Array(1 << 17);
    fn<[Uint8Array, bigint, number], unknown>('memcpy_ta')(back, p, 1 << 17);
    assert.ok(
      back.subarray(0, 1 << 16).every((b, i) => b === data[i]),
      'sync read',
    );
    assert.ok(
      back.subarray(1 << 16, (1 << 16) + 1000).every((b, i) => b === data[5000 + i]),
      'async read at an offset',
    );
  } finally {
    koffi.free(p);
    rmSync(dir, { recursive: true, force: true });
  }
});

test('_Out_ void ** gives a bigint address; uint64 arguments take it back', () => {
  const out: OutCell<unknown> = [null];
  assert.is(fn<[OutCell<unknown>, number, number], number>('posix_memalign')(out, 4096, 1 << 16), 0);
  const p = ptrOf(out[0]);
  assert.is(typeof out[0], 'bigint');
  assert.is(p % 4096n, 0n, 'aligned as asked');
  memset(p, 0, 1 << 16);
  assert.is(new Uint8Array(koffi.view(p, 1 << 16))[(1 << 16) - 1], 0);
  fn<[bigint], void>('free')(p);
});

test('typed arrays as pointer arguments: native writes land in them, at their byte offset', () => {
  const cell = new BigUint64Array(1);
  assert.is(fn<[BigUint64Array, number, number], number>('memalign_ta')(cell, 256, 1024), 0);
  assert.ok(cell[0]! !== 0n && cell[0]! % 256n === 0n, 'the out cell holds the aligned address');
  fn<[bigint], void>('free')(cell[0]!);

  const src = Float32Array.from({ length: 16 }, (_, i) => i * 1.5);
  const backing = new ArrayBuffer(128);
  const dst = new Float32Array(backing, 32, 16); // a view that does not start at its buffer's start
  fn<[Float32Array, Float32Array, number], unknown>('memcpy_ta')(dst, src, 64);
  assert.equal(Array.from(dst), Array.from(src), 'copied into the view');
  assert.ok(
    new Uint8Array(backing, 0, 32).every((b) => b === 0),
    'nothing written before the view',
  );
  assert.ok(
    new Uint8Array(backing, 96).every((b) => b === 0),
    'nothing written after the view',
  );

  const name = new Uint8Array(4096);
  fn<[Uint8Array, number], unknown>('getcwd_ta')(name, name.length);
  assert.is(new TextDecoder().decode(name.subarray(0, name.indexOf(0))), process.cwd());
});

test('C strings: const char * results, and reading a buffer native code filled', () => {
  assert.match(fn<[number], string>('strerror')(2), /No such file/);
  const buf = koffi.alloc('uint8_t', 4096) as bigint;
  try {
    // a uint64 result may come back as a number when it is small enough: ptrOf takes both
    assert.is(ptrOf(fn<[bigint, number], unknown>('getcwd')(buf, 4096)), buf);
    assert.is(readCString(buf, 0, 4096), process.cwd());
    assert.is(koffi.decode(buf, 'char', -1), process.cwd());
  } finally {
    koffi.free(buf);
  }
});

test('opaque handles come back as bigint and round-trip into calls', () => {
  const f = fn<[string, string], unknown>('fopen')('/dev/null', 'r');
  assert.is(typeof f, 'bigint');
  assert.ok(ptrOf(f) !== 0n);
  assert.ok(fn<[unknown], number>('fileno')(f) >= 0);
  assert.is(fn<[unknown], number>('fclose')(f), 0);
  assert.is(ptrOf(fn<[string, string], unknown>('fopen')('/nonexistent/x', 'r')), 0n, 'NULL handle');
});

test.run();
