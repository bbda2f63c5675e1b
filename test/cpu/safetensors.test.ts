// Safetensors on the CPU: round trips of every dtype and layout, files built byte by byte from
// the format's description, sharded checkpoints opened by folder and by index, lazy listing,
// dtype conversion and widening on load, and every malformed file giving an error that names
// the file and the tensor.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  mkdtempSync,
  rmSync,
  writeFileSync,
  readFileSync,
  existsSync,
  readdirSync,
  mkdirSync,
  truncateSync,
  openSync,
  writeSync,
  closeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Tensor,
  Checkpoint,
  saveSafetensors,
  saveShardedSafetensors,
  SafetensorsError,
  DTYPES,
  type DType,
} from '../../src/index.ts';
import type { HostArray } from '../../src/core/dtype.ts';
import { randInts, randT, withLayout } from '../helpers.ts';

const dir = mkdtempSync(join(tmpdir(), 'rt-safetensors-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));
let fileNo = 0;
const tmp = (name = `f${fileNo++}.safetensors`) => join(dir, name);

// ---- helpers ------------------------------------------------------------------------------------

/** random values of a dtype, never all zeros; i64 spans negatives and values past 2^32 */
function randomOf(dtype: DType, shape: number[]): Tensor {
  const n = shape.reduce((a, b) => a * b, 1);
  if (dtype === 'i64') {
    const data = BigInt64Array.from(
      { length: n },
      (_, i) => BigInt(i * 7919 + 3) * (i % 2 ? -1n : 1n) * 2n ** BigInt(i % 40),
    );
    return Tensor.from(data).reshape(shape);
  }
  if (dtype === 'u8') return randInts(shape, 256, 'u8');
  if (dtype === 'u32') return randInts(shape, 2 ** 32, 'u32');
  return randT(shape, dtype);
}

/** the values of a non-i64 tensor as numbers */
async function values(t: Tensor): Promise<number[]> {
  return Array.from((await t.toArray()) as ArrayLike<number>);
}
async function raw(t: Tensor): Promise<number[]> {
  return Array.from((await t.toRawArray()) as ArrayLike<number | bigint>, (x) =>
    typeof x === 'bigint' ? Number(x) : x,
  );
}
/** the element bits, as bytes: NaN payloads and -0 compare exactly */
async function rawBytes(t: Tensor): Promise<Buffer> {
  const a = await t.toRawArray();
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength);
}

async function sameTensor(got: Tensor, want: Tensor, what: string): Promise<void> {
  assert.is(got.dtype, want.dtype, `${what}: dtype`);
  assert.equal(got.shape, want.shape, `${what}: shape`);
  assert.ok(got.isContiguous(), `${what}: loaded tensors are contiguous`);
  const g = await rawBytes(got),
    w = await rawBytes(want);
  assert.ok(g.equals(w), `${what}: values differ (${g.length} vs ${w.length} bytes)`);
}

/** a safetensors file from a header object and data bytes, exactly as the format describes */
function handMade(header: unknown, data: Uint8Array, opts: { padTo8?: boolean; lengthField?: bigint } = {}): string {
  let json = JSON.stringify(header);
  if (opts.padTo8) json += ' '.repeat((8 - ((8 + json.length) % 8)) % 8);
  const body = new TextEncoder().encode(json);
  const out = new Uint8Array(8 + body.length + data.length);
  new DataView(out.buffer).setBigUint64(0, opts.lengthField ?? BigInt(body.length), true);
  out.set(body, 8);
  out.set(data, 8 + body.length);
  const path = tmp();
  writeFileSync(path, out);
  return path;
}

const bytesOf = (a: ArrayBufferView) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
const cat = (...parts: ArrayBufferView[]) => {
  const out = new Uint8Array(parts.reduce((a, p) => a + p.byteLength, 0));
  let o = 0;
  for (const p of parts) {
    out.set(bytesOf(p), o);
    o += p.byteLength;
  }
  return out;
};

/** opening `path` (or loading `load` from it) fails with a SafetensorsError naming every part */
async function failsWith(path: string, parts: (string | RegExp)[], load?: string): Promise<void> {
  let err: unknown = null;
  try {
    const ck = await Checkpoint.open(path);
    try {
      if (load !== undefined) await ck.load(load);
    } finally {
      await ck.close();
    }
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof SafetensorsError, `${path}: expected a SafetensorsError, got ${String(err)}`);
  const m = (err as Error).message;
  for (const p of parts)
    assert.ok(typeof p === 'string' ? m.includes(p) : p.test(m), `message '${m}' lacks ${String(p)}`);
}

// ---- round trips ----------------------------------------------------------------------------------

test('round trip of every dtype: contiguous, transposed, narrowed, offset, 0-d and empty, with metadata', async () => {
  const tensors: Record<string, Tensor> = {};
  for (const d of DTYPES) {
    const base = randomOf(d, [4, 6]);
    assert.ok(
      (await raw(base)).some((x) => x !== 0),
      `${d}: random data is not all zeros`,
    );
    tensors[`${d}.contiguous`] = base;
    for (const kind of ['transposed', 'narrowed', 'offset'] as const) {
      const { x } = withLayout(base, kind);
      if (kind !== 'offset') assert.not.ok(x.isContiguous(), `${d} ${kind} input is not contiguous`);
      tensors[`${d}.${kind}`] = x;
    }
    tensors[`${d}.scalar`] = randomOf(d, [1]).reshape([]);
    tensors[`${d}.empty`] = Tensor.zeros([0, 3], { dtype: d });
  }
  const meta = { format: 'pt', note: 'caf\u00e9 \u2603', empty: '' };
  const path = tmp();
  await saveSafetensors(path, tensors, meta);
  const ck = await Checkpoint.open(path);
  assert.equal(ck.names(), Object.keys(tensors).sort());
  assert.equal(ck.metadata, meta);
  assert.equal(ck.files, [path]);
  for (const [name, t] of Object.entries(tensors)) await sameTensor(await ck.load(name), t.contiguous(), name);
  assert.is(
    ck.totalBytes,
    Object.values(tensors).reduce(
      (a, t) => a + t.numel * ({ f32: 4, f64: 8, f16: 2, bf16: 2, u8: 1, u32: 4, i64: 8 } as const)[t.dtype],
      0,
    ),
  );
  await ck.close();
});

test('saved files: data starts on a multiple of 8, tensors packed in sorted name order', async () => {
  const path = tmp();
  await saveSafetensors(path, { zeta: randT([3], 'f32'), alpha: randT([5], 'bf16'), mid: randInts([7], 9, 'u8') });
  const bytes = readFileSync(path);
  const n = Number(bytes.readBigUInt64LE(0));
  assert.is((8 + n) % 8, 0);
  const header = JSON.parse(bytes.subarray(8, 8 + n).toString('utf8'));
  assert.equal(header.alpha, { dtype: 'BF16', shape: [5], data_offsets: [0, 10] });
  assert.equal(header.mid, { dtype: 'U8', shape: [7], data_offsets: [10, 17] });
  assert.equal(header.zeta, { dtype: 'F32', shape: [3], data_offsets: [17, 29] });
  assert.not.ok('__metadata__' in header, 'no metadata asked for, none written');
  assert.is(bytes.length, 8 + n + 29);
  const ck = await Checkpoint.open(path);
  const info = ck.info('mid');
  assert.equal(
    { ...info, shape: [...info.shape] },
    { name: 'mid', dtype: 'U8', shape: [7], file: path, byteOffset: 8 + n + 10, byteLength: 7, loadsAs: 'u8' },
  );
  await ck.close();
});

test('a hand-built file is read as the format says: F32, BF16, I64, BOOL, padded and unpadded headers', async () => {
  const f32 = new Float32Array([1.5, -2, 3.25e-3]);
  const bf16 = new Uint16Array([0x3f80, 0xc000, 0x4049, 0x0001]); // 1, -2, 3.140625, the smallest subnormal
  const i64 = new BigInt64Array([-5n, 2n ** 40n + 1n]);
  const bool = new Uint8Array([1, 0, 1]);
  const data = cat(f32, bf16, i64, bool);
  const header = {
    __metadata__: { format: 'pt' },
    w: { dtype: 'F32', shape: [3], data_offsets: [0, 12] },
    b: { dtype: 'BF16', shape: [2, 2], data_offsets: [12, 20] },
    ids: { dtype: 'I64', shape: [2, 1], data_offsets: [20, 36] },
    mask: { dtype: 'BOOL', shape: [3], data_offsets: [36, 39] },
  };
  for (const padTo8 of [true, false]) {
    const path = handMade(header, data, { padTo8 });
    const ck = await Checkpoint.open(path);
    assert.equal(ck.names(), ['b', 'ids', 'mask', 'w']);
    assert.equal(ck.metadata, { format: 'pt' });
    assert.is(ck.totalBytes, 39);
    const w = await ck.load('w');
    assert.equal([w.dtype, w.shape], ['f32', [3]]);
    assert.equal(await values(w), Array.from(f32));
    const b = await ck.load('b');
    assert.equal([b.dtype, b.shape], ['bf16', [2, 2]]);
    assert.equal(await values(b), [1, -2, 3.140625, 2 ** -133]);
    const ids = await ck.load('ids');
    assert.equal([ids.dtype, ids.shape], ['i64', [2, 1]]);
    assert.equal(Array.from((await ids.toArray()) as BigInt64Array), [-5n, 2n ** 40n + 1n]);
    const mask = await ck.load('mask');
    assert.equal([mask.dtype, mask.shape, ck.info('mask').loadsAs], ['u8', [3], 'u8']);
    assert.equal(await values(mask), [1, 0, 1]);
    await ck.close();
  }
});

test('I32, I16, I8 widen to i64 and U16 to u32, exactly (including past the widening scratch buffer)', async () => {
  const i32 = Int32Array.from({ length: 1_200_000 }, (_, i) => (i * 2654435761) | 0);
  const i16 = new Int16Array([-32768, -1, 0, 1, 32767]);
  const i8 = new Int8Array([-128, -7, 0, 127, 5]);
  const u16 = new Uint16Array([0, 1, 65535, 40000]);
  const o1 = i32.byteLength,
    o2 = o1 + i16.byteLength,
    o3 = o2 + i8.byteLength,
    o4 = o3 + u16.byteLength;
  const path = handMade(
    {
      big: { dtype: 'I32', shape: [1200, 1000], data_offsets: [0, o1] },
      s16: { dtype: 'I16', shape: [5], data_offsets: [o1, o2] },
      s8: { dtype: 'I8', shape: [5], data_offsets: [o2, o3] },
      u16: { dtype: 'U16', shape: [2, 2], data_offsets: [o3, o4] },
    },
    cat(i32, i16, i8, u16),
  );
  const ck = await Checkpoint.open(path);
  assert.equal(
    ['big', 's16', 's8', 'u16'].map((n) => ck.info(n).loadsAs),
    ['i64', 'i64', 'i64', 'u32'],
  );
  const big = await ck.load('big');
  assert.equal([big.dtype, big.shape], ['i64', [1200, 1000]]);
  const got = (await big.toArray()) as BigInt64Array;
  let bad = -1;
  for (let i = 0; i < i32.length && bad < 0; i++) if (got[i] !== BigInt(i32[i]!)) bad = i;
  assert.is(bad, -1, `I32 -> i64 differs at ${bad}`);
  assert.equal(Array.from((await (await ck.load('s16')).toArray()) as BigInt64Array), [-32768n, -1n, 0n, 1n, 32767n]);
  assert.equal(Array.from((await (await ck.load('s8')).toArray()) as BigInt64Array), [-128n, -7n, 0n, 127n, 5n]);
  const u = await ck.load('u16');
  assert.equal([u.dtype, await values(u)], ['u32', [0, 1, 65535, 40000]]);
  const asF32 = await ck.load('s8', { dtype: 'f32' });
  assert.equal([asF32.dtype, await values(asF32)], ['f32', [-128, -7, 0, 127, 5]]);
  await ck.close();
});

test('dtype conversion on load: a BF16 file to f32 and f16 equals toDtype on the CPU', async () => {
  const src = randT([7, 33], 'bf16', -300, 300);
  const path = tmp();
  await saveSafetensors(path, { x: src, y: randT([5], 'f32') });
  const ck = await Checkpoint.open(path);
  for (const d of ['f32', 'f16', 'f64', 'bf16', 'i64'] as const) {
    const got = await ck.load('x', { dtype: d });
    await sameTensor(got, src.toDtype(d), `bf16 -> ${d}`);
  }
  await sameTensor(
    await ck.load('y', { dtype: 'bf16', device: 'cpu' }),
    (await ck.load('y')).toDtype('bf16'),
    'f32 -> bf16',
  );
  await ck.close();
});

// ---- sharded checkpoints ------------------------------------------------------------------------------

test('sharded save, then open by folder and by index; every tensor where the index says', async () => {
  const tensors: Record<string, Tensor> = {
    'model.embed_tokens.weight': randT([10, 8], 'bf16'), // 160 bytes
    'model.layers.0.mlp.down_proj.weight': randT([8, 8], 'f32'), // 256
    'model.layers.0.input_layernorm.weight': randT([8], 'f32'), // 32
    'model.layers.1.mlp.down_proj.weight': randT([8, 8], 'f16'), // 128
    'model.norm.weight': randT([8], 'f64'), // 64
    'lm_head.weight': randT([10, 8], 'bf16').T, // 160, not contiguous
  };
  const out = join(dir, 'sharded');
  const files = await saveShardedSafetensors(out, tensors, { maxShardBytes: 300, metadata: { format: 'pt' } });
  // greedy in name order: lm_head 160 | embed 160 + l0.in_ln 32 | l0.down 256 | l1.down 128 + norm 64
  assert.equal(files, [
    'model-00001-of-00004.safetensors',
    'model-00002-of-00004.safetensors',
    'model-00003-of-00004.safetensors',
    'model-00004-of-00004.safetensors',
    'model.safetensors.index.json',
  ]);
  assert.equal(readdirSync(out).sort(), [...files].sort(), 'no temporary files left behind');
  const index = JSON.parse(readFileSync(join(out, 'model.safetensors.index.json'), 'utf8'));
  assert.is(index.metadata.total_size, 800);
  assert.is(index.metadata.format, 'pt');
  assert.equal(index.weight_map, {
    'lm_head.weight': 'model-00001-of-00004.safetensors',
    'model.embed_tokens.weight': 'model-00002-of-00004.safetensors',
    'model.layers.0.input_layernorm.weight': 'model-00002-of-00004.safetensors',
    'model.layers.0.mlp.down_proj.weight': 'model-00003-of-00004.safetensors',
    'model.layers.1.mlp.down_proj.weight': 'model-00004-of-00004.safetensors',
    'model.norm.weight': 'model-00004-of-00004.safetensors',
  });
  for (const path of [out, join(out, 'model.safetensors.index.json')]) {
    const ck = await Checkpoint.open(path);
    assert.equal(ck.names(), Object.keys(tensors).sort());
    assert.equal(
      ck.files,
      files.slice(0, 4).map((f) => join(out, f)),
    );
    assert.is(ck.totalBytes, 800);
    assert.is(ck.metadata.format, 'pt');
    for (const [name, t] of Object.entries(tensors)) {
      assert.is(ck.info(name).file, join(out, index.weight_map[name]));
      await sameTensor(await ck.load(name), t.contiguous(), `${path}: ${name}`);
    }
    await ck.close();
  }
  // a tensor larger than the limit gets a shard of its own; a custom prefix names the files
  const big = await saveShardedSafetensors(
    join(dir, 'big'),
    { a: randT([100], 'f32'), b: randT([2], 'f32') },
    { maxShardBytes: 64, prefix: 'pytorch' },
  );
  assert.equal(big, [
    'pytorch-00001-of-00002.safetensors',
    'pytorch-00002-of-00002.safetensors',
    'pytorch.safetensors.index.json',
  ]);
  const ck = await Checkpoint.open(join(dir, 'big', 'pytorch.safetensors.index.json'));
  assert.equal(ck.names(), ['a', 'b']);
  await ck.close();
});

test('opening a folder with model.safetensors', async () => {
  const sub = join(dir, 'single');
  const t = randT([3, 3], 'f16');
  mkdirSync(sub);
  await saveSafetensors(join(sub, 'model.safetensors'), { t });
  const ck = await Checkpoint.open(sub);
  assert.equal(ck.files, [join(sub, 'model.safetensors')]);
  await sameTensor(await ck.load('t'), t, 'folder');
  await ck.close();
});

test('listing is lazy: open reads headers only, so data rewritten after open is what load sees', async () => {
  const a = randT([64], 'f32'),
    b = randT([64], 'f32');
  const path = tmp();
  await saveSafetensors(path, { a });
  const ck = await Checkpoint.open(path);
  assert.equal([ck.names(), ck.info('a').shape, ck.has('a'), ck.has('b')], [['a'], [64], true, false]);
  const info = ck.info('a');
  const fd = openSync(path, 'r+');
  const bytes = await b.toRawArray();
  writeSync(fd, bytesOf(bytes), 0, info.byteLength, info.byteOffset);
  closeSync(fd);
  await sameTensor(await ck.load('a'), b, 'rewritten data');
  await ck.close();
  // after close the listing still answers; loading is an error
  assert.equal(ck.info('a').shape, [64]);
  let err: unknown;
  try {
    await ck.load('a');
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof SafetensorsError && /load\('a'\) after close\(\)/.test(err.message), String(err));
});

test('an unknown name lists close names', async () => {
  const path = tmp();
  await saveSafetensors(path, {
    'model.layers.0.self_attn.q_proj.weight': randT([2], 'f32'),
    'model.layers.1.self_attn.q_proj.weight': randT([2], 'f32'),
    'model.norm.weight': randT([2], 'f32'),
  });
  const ck = await Checkpoint.open(path);
  for (const call of [
    () => ck.info('model.layers.2.self_attn.q_proj.weight'),
    () => ck.load('model.layers.2.self_attn.q_proj.weight'),
  ]) {
    let err: unknown;
    try {
      await call();
    } catch (e) {
      err = e;
    }
    assert.ok(err instanceof SafetensorsError, String(err));
    const m = (err as Error).message;
    assert.ok(
      m.includes(path) &&
        m.includes("'model.layers.2.self_attn.q_proj.weight'") &&
        m.includes("close names: 'model.layers.0.self_attn.q_proj.weight', 'model.layers.1.self_attn.q_proj.weight'"),
      m,
    );
  }
  await ck.close();
});

// ---- malformed files -----------------------------------------------------------------------------------

const okEntry = { dtype: 'F32', shape: [2], data_offsets: [0, 8] };
const eight = new Uint8Array(8).fill(7);

test('bad headers: too short, length past the end or absurd, not JSON, not an object, bad metadata', async () => {
  const short = tmp();
  writeFileSync(short, new Uint8Array(5));
  await failsWith(short, [short, 'only 5 bytes']);
  await failsWith(handMade({ w: okEntry }, eight, { lengthField: 1000n }), [
    /header length 1000 runs past the end of the file \(\d+ bytes/,
  ]);
  await failsWith(handMade({ w: okEntry }, eight, { lengthField: 2n ** 40n }), [`header length ${2n ** 40n} is over`]);
  await failsWith(handMade({ w: okEntry }, eight, { lengthField: 2n ** 64n - 1n }), ['is over']);
  const notJson = tmp();
  writeFileSync(notJson, cat(new BigUint64Array([4n]), new TextEncoder().encode('{"a"')));
  await failsWith(notJson, [notJson, 'header is not valid JSON']);
  const badUtf8 = tmp();
  writeFileSync(badUtf8, cat(new BigUint64Array([4n]), new Uint8Array([0x22, 0xff, 0xfe, 0x22])));
  await failsWith(badUtf8, [badUtf8, 'not valid UTF-8']);
  await failsWith(handMade([1, 2], eight), ['not an object of tensors (got an array)']);
  const p = handMade({ __metadata__: { a: 1 }, w: okEntry }, eight);
  await failsWith(p, [p, "__metadata__ value of 'a' must be a string, got number 1"]);
});

test('bad entries: dtype, shape, offsets, sizes, ranges and overlaps name the file and the tensor', async () => {
  const cases: [unknown, (string | RegExp)[]][] = [
    [{ w: 3 }, ["tensor 'w'", 'entry must be an object']],
    [{ w: { shape: [2], data_offsets: [0, 8] } }, ["tensor 'w'", 'dtype must be a string, got undefined']],
    [{ w: { ...okEntry, dtype: 'Q4' } }, ["tensor 'w'", "unknown dtype 'Q4'", 'BF16']],
    [{ w: { ...okEntry, shape: [-2] } }, ["tensor 'w'", 'shape must be an array of non-negative integers, got [-2]']],
    [{ w: { ...okEntry, shape: [1.5] } }, ["tensor 'w'", 'shape must be']],
    [{ w: { ...okEntry, shape: 'x' } }, ["tensor 'w'", 'shape must be']],
    [{ w: { dtype: 'F32', shape: [2] } }, ["tensor 'w'", 'data_offsets must be [begin, end]']],
    [{ w: { ...okEntry, data_offsets: [8, 0] } }, ["tensor 'w'", 'data_offsets must be', 'got [8,0]']],
    [{ w: { ...okEntry, data_offsets: [0, 8, 9] } }, ["tensor 'w'", 'data_offsets must be']],
    [
      { w: { ...okEntry, shape: [3] } },
      ["tensor 'w'", 'shape [3] of F32 takes 12 bytes but data_offsets [0, 8] hold 8'],
    ],
    [{ w: { ...okEntry, dtype: 'BF16' } }, ["tensor 'w'", 'shape [2] of BF16 takes 4 bytes']],
    [
      { w: okEntry, v: { ...okEntry, data_offsets: [4, 12] } },
      ['past the end of the data section (8 bytes)', "tensor 'v'"],
    ],
    [
      { w: { dtype: 'F32', shape: [1], data_offsets: [0, 4] }, v: { dtype: 'U8', shape: [2], data_offsets: [3, 5] } },
      ["tensors 'w' [0, 4) and 'v' [3, 5) overlap"],
    ],
  ];
  for (const [header, parts] of cases) {
    const path = handMade(header, eight);
    await failsWith(path, [path, ...parts]);
  }
  // empty tensors own no bytes, so one may sit anywhere
  const ok = await Checkpoint.open(
    handMade({ w: okEntry, e: { dtype: 'F32', shape: [0, 3], data_offsets: [4, 4] } }, eight),
  );
  assert.equal((await ok.load('e')).shape, [0, 3]);
  await ok.close();
});

test('truncated data is caught at open', async () => {
  const path = tmp();
  await saveSafetensors(path, { a: randT([16], 'f32'), b: randT([16], 'f32') });
  truncateSync(path, readFileSync(path).length - 1);
  await failsWith(path, [
    path,
    "tensor 'b'",
    'data_offsets [64, 128] run past the end of the data section (127 bytes)',
  ]);
});

test('float8, U64 and complex tensors are listed but not loaded, with an error naming them', async () => {
  const path = handMade(
    {
      f8: { dtype: 'F8_E4M3', shape: [4], data_offsets: [0, 4] },
      f8b: { dtype: 'F8_E5M2', shape: [2], data_offsets: [4, 6] },
      u64: { dtype: 'U64', shape: [1], data_offsets: [8, 16] },
    },
    new Uint8Array(16).fill(1),
  );
  const ck = await Checkpoint.open(path);
  assert.equal(ck.info('f8').loadsAs, null);
  await ck.close();
  await failsWith(path, [path, "tensor 'f8'", 'F8_E4M3', 'cannot be loaded', 'float8'], 'f8');
  await failsWith(path, [path, "tensor 'f8b'", 'F8_E5M2'], 'f8b');
  await failsWith(path, [path, "tensor 'u64'", 'U64', 'cannot be loaded'], 'u64');
});

test('bad indexes and folders: missing shard, tensor missing from its shard, not an index, empty folder', async () => {
  const out = join(dir, 'bad-index');
  await saveShardedSafetensors(
    out,
    { a: randT([4], 'f32'), b: randT([4], 'f32'), c: randT([4], 'f32') },
    { maxShardBytes: 16 },
  );
  const indexPath = join(out, 'model.safetensors.index.json');
  const index = JSON.parse(readFileSync(indexPath, 'utf8'));
  writeFileSync(
    indexPath,
    JSON.stringify({ ...index, weight_map: { ...index.weight_map, d: 'model-00001-of-00003.safetensors' } }),
  );
  await failsWith(out, [indexPath, "tensor 'd'", 'model-00001-of-00003.safetensors', 'has no such tensor']);
  writeFileSync(
    indexPath,
    JSON.stringify({ ...index, weight_map: { ...index.weight_map, e: 'model-00009-of-00009.safetensors' } }),
  );
  await failsWith(indexPath, [
    indexPath,
    "shard 'model-00009-of-00009.safetensors'",
    "'e'",
    'is missing',
    join(out, 'model-00009-of-00009.safetensors'),
  ]);
  rmSync(join(out, 'model-00002-of-00003.safetensors'));
  writeFileSync(indexPath, JSON.stringify(index));
  await failsWith(out, ["shard 'model-00002-of-00003.safetensors' (holding 'b') is missing"]);
  writeFileSync(indexPath, '{"weight_map": [1]}');
  await failsWith(indexPath, [indexPath, 'not a safetensors index']);
  writeFileSync(indexPath, '{"weight_map": {"a": 3}}');
  await failsWith(indexPath, [indexPath, "weight_map entry 'a' must name a shard file"]);
  writeFileSync(indexPath, '{');
  await failsWith(indexPath, [indexPath, 'index is not valid JSON']);
  rmSync(indexPath);
  await failsWith(out, [
    out,
    'neither model.safetensors nor model.safetensors.index.json',
    'model-00001-of-00003.safetensors',
  ]);
  await failsWith(join(dir, 'nowhere'), [join(dir, 'nowhere'), 'no such file or folder']);
});

test('save errors: disposed tensors, reserved names, non-string metadata, bad shard options; nothing half-written', async () => {
  const gone = randT([2], 'f32');
  gone.dispose();
  const path = tmp();
  const fails = async (p: Promise<unknown>, ...parts: string[]) => {
    let err: unknown;
    try {
      await p;
    } catch (e) {
      err = e;
    }
    assert.ok(err instanceof Error, 'expected an error');
    for (const part of parts)
      assert.ok((err as Error).message.includes(part), `'${(err as Error).message}' lacks '${part}'`);
  };
  await fails(saveSafetensors(path, { ok: randT([2], 'f32'), gone }), "saveSafetensors('gone')", 'after dispose');
  await fails(
    saveSafetensors(path, { __metadata__: randT([2], 'f32') }),
    path,
    "'__metadata__' cannot be a tensor name",
  );
  await fails(
    saveSafetensors(path, { x: randT([2], 'f32') }, { n: 3 as unknown as string }),
    path,
    "metadata 'n' must be a string",
  );
  await fails(
    saveShardedSafetensors(join(dir, 's'), { x: randT([2], 'f32') }, { maxShardBytes: 0 }),
    'maxShardBytes must be a positive integer',
  );
  await fails(
    saveShardedSafetensors(join(dir, 's'), { x: randT([2], 'f32') }, { maxShardBytes: 8, prefix: 'a/b' }),
    "shard prefix 'a/b'",
  );
  assert.not.ok(existsSync(path), 'nothing written under the real name');
  assert.equal(
    readdirSync(dir).filter((n) => n.includes('.partial-')),
    [],
  );
});

test('round trip of raw bit patterns: NaN payloads, infinities, negative zero, subnormals', async () => {
  const f32bits = new Uint32Array([0x7fc00001, 0xff800000, 0x80000000, 0x00000001, 0x3f800000]);
  const f16bits = new Uint16Array([0x7e01, 0xfc00, 0x8000, 0x0001, 0x3c00]);
  const x = Tensor.from(new Float32Array(f32bits.buffer));
  const h = Tensor.empty([5], 'f16', x.device);
  (h.storage.host as HostArray as Uint16Array).set(f16bits);
  const path = tmp();
  await saveSafetensors(path, { x, h });
  const ck = await Checkpoint.open(path);
  const gx = await ck.load('x'),
    gh = await ck.load('h');
  assert.equal(Array.from(new Uint32Array((await gx.toRawArray()).buffer)), Array.from(f32bits));
  assert.equal(Array.from((await gh.toRawArray()) as Uint16Array), Array.from(f16bits));
  await ck.close();
});

test.run();
