// src/ffi/codeobject.ts on real committed code objects and on PTX text.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { CodeObjectError, findElfNote, isElf, parseAmdCodeObject, parsePtxEntries } from '../../src/ffi/codeobject.ts';
import { readCodeObject, readManifest } from '../../src/runtime/kernels.ts';

const DIR = new URL('../../kernels/', import.meta.url).pathname;
const manifest = readManifest(DIR);
const image = (file: string, key: string): Uint8Array => readCodeObject(DIR, manifest.files[file]!.objects[key]!.path);

test('gfx942 unary: target, explicit args, hidden args after them, wave64', () => {
  const co = parseAmdCodeObject(image('unary.hip', 'gfx942'));
  assert.is(co.target, 'amdgcn-amd-amdhsa--gfx942');
  assert.is(co.arch, 'gfx942');
  const k = co.kernels.find((x) => x.name === 'unary_exp_f32')!;
  assert.ok(k);
  assert.is(k.symbol, 'unary_exp_f32.kd');
  assert.equal(k.params, [
    { offset: 0, size: 8, kind: 'pointer' },
    { offset: 8, size: 8, kind: 'pointer' },
    { offset: 16, size: 8, kind: 'value' },
    { offset: 24, size: 8, kind: 'value' },
    { offset: 32, size: 8, kind: 'value' },
  ]);
  const hidden = k.args.filter((a) => a.valueKind.startsWith('hidden_'));
  assert.ok(hidden.length > 0);
  // hidden arguments start at the end of the explicit ones, aligned to 8
  assert.is(Math.min(...hidden.map((a) => a.offset)), 40);
  assert.ok(k.kernargSegmentSize >= 40);
  assert.is(k.wavefrontSize, 64);
  assert.is(k.maxFlatWorkgroupSize, 256);
  assert.is(k.args[0]!.addressSpace, 'global');
});

test('gfx1100 is wave32; a strided kernel takes the 368-byte Geom by value', () => {
  const co = parseAmdCodeObject(image('unary.hip', 'gfx1100'));
  const k = co.kernels.find((x) => x.name === 'unary_clamp_f16_strided')!;
  assert.is(k.wavefrontSize, 32);
  assert.equal(k.params, [
    { offset: 0, size: 8, kind: 'pointer' },
    { offset: 8, size: 8, kind: 'pointer' },
    { offset: 16, size: 368, kind: 'value' },
    { offset: 384, size: 4, kind: 'value' },
    { offset: 388, size: 4, kind: 'value' },
  ]);
});

test('every AMD object names its own arch', () => {
  for (const key of manifest.archs.filter((a) => a !== 'ptx')) {
    assert.is(parseAmdCodeObject(image('copy.hip', key)).arch, key);
  }
});

test('non-ELF input and a missing note are clear errors', () => {
  assert.not.ok(isElf(new Uint8Array([1, 2, 3, 4])));
  assert.throws(
    () => parseAmdCodeObject(new Uint8Array(64)),
    (e: unknown) => e instanceof CodeObjectError && /not an ELF/.test((e as Error).message),
  );
  assert.is(findElfNote(image('copy.hip', 'gfx90a'), 'NoSuchOwner', 32), null);
  const truncated = image('copy.hip', 'gfx90a').slice(0, 100);
  assert.throws(() => parseAmdCodeObject(truncated), /section table/);
});

test('PTX .entry signatures: scalars, .ptr, aligned byte arrays, no tail padding', () => {
  const ptx = `
.visible .entry k1(
\t.param .u64 k1_param_0,
\t.param .u32 k1_param_1,
\t.param .align 8 .b8 k1_param_2[368],
\t.param .f32 k1_param_3
)
{ ret; }
.entry k2(
\t.param .u64 .ptr .global .align 16 k2_param_0,
\t.param .u16 k2_param_1
)
{ ret; }
.visible .entry k3()
{ ret; }`;
  const es = parsePtxEntries(ptx);
  assert.equal(
    es.map((e) => e.name),
    ['k1', 'k2', 'k3'],
  );
  assert.equal(es[0]!.params, [
    { offset: 0, size: 8, kind: 'value' },
    { offset: 8, size: 4, kind: 'value' },
    { offset: 16, size: 368, kind: 'value' },
    { offset: 384, size: 4, kind: 'value' },
  ]);
  assert.is(es[0]!.paramBytes, 388);
  assert.equal(es[1]!.params, [
    { offset: 0, size: 8, kind: 'pointer' },
    { offset: 8, size: 2, kind: 'value' },
  ]);
  assert.is(es[1]!.paramBytes, 10);
  assert.equal(es[2]!.params, []);
});

test('the committed PTX parses with the same layout as gfx942 for every kernel', () => {
  for (const file of Object.keys(manifest.files)) {
    const ptx = new Map(parsePtxEntries(new TextDecoder().decode(image(file, 'ptx'))).map((e) => [e.name, e]));
    const amd = parseAmdCodeObject(image(file, 'gfx942'));
    assert.is(ptx.size, amd.kernels.length, file);
    for (const k of amd.kernels) {
      const p = ptx.get(k.name);
      assert.ok(p, `${file}: ${k.name} missing from the PTX`);
      assert.equal(
        p!.params.map((x) => [x.offset, x.size]),
        k.params.map((x) => [x.offset, x.size]),
        `${file} ${k.name}`,
      );
    }
  }
});

test.run();
