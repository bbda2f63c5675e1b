// The committed kernels/ against hip-src/ and against what the ops pass: fresh hashes, every
// kernel of every arch (and the PTX) with exactly the parameters kernel-sigs.ts says, packed
// the way the launcher packs them, and no register spills on gfx942 and gfx1100.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { asDevicePtr, type KernelParam } from '../../src/runtime/gpu.ts';
import {
  layoutsFromImage,
  packArgs,
  readCodeObject,
  readManifest,
  type KernelArg,
  type KernelLayout,
} from '../../src/runtime/kernels.ts';
import { CAT_ARGS_BYTES, KERNEL_SIGNATURES, packGeom, specSize, type ArgSpec } from '../../src/runtime/kernel-sigs.ts';
import { kernelSources, sourceHash } from '../../scripts/kernel-sources.ts';

const DIR = new URL('../../kernels/', import.meta.url).pathname;
const AMD_ARCHS = ['gfx90a', 'gfx942', 'gfx950', 'gfx1030', 'gfx1100', 'gfx1101', 'gfx1102', 'gfx1200', 'gfx1201'];
const manifest = readManifest(DIR) as ReturnType<typeof readManifest> & {
  files: Record<
    string,
    {
      hash: string;
      objects: Record<string, { path: string; sha256: string; kernels: Record<string, Record<string, number>> }>;
    }
  >;
};

/** where each parameter of a signature lands with natural alignment (the C ABI both use) */
function expectedParams(sig: readonly ArgSpec[]): KernelParam[] {
  let end = 0;
  return sig.map((s) => {
    const size = specSize(s),
      align = Math.min(size, 8);
    const offset = Math.ceil(end / align) * align;
    end = offset + size;
    return { offset, size, kind: s === 'ptr' ? 'pointer' : 'value' };
  });
}

/** arguments shaped like the ones ops pass for a signature */
function sampleArgs(sig: readonly ArgSpec[]): KernelArg[] {
  return sig.map((s): KernelArg => {
    switch (s) {
      case 'ptr':
        return { kind: 'ptr', value: asDevicePtr(0x7f0000001000n) };
      case 'geom':
        return {
          kind: 'bytes',
          value: packGeom(
            'test',
            [2, 3],
            [
              { strides: [3, 1], offset: 0 },
              { strides: [1, 2], offset: 5 },
            ],
          ),
        };
      case 'cat':
        return { kind: 'bytes', value: new Uint8Array(CAT_ARGS_BYTES) };
      case 'u32':
      case 'i32':
        return { kind: s, value: 7 };
      case 'u64':
      case 'i64':
        return { kind: s, value: 1n << 40n };
      case 'f32':
      case 'f64':
        return { kind: s, value: 0.5 };
    }
  });
}

const fmt = (ps: readonly KernelParam[]): string => ps.map((p) => `${p.offset}:${p.size}${p.kind[0]}`).join(' ');

test('every hip-src/*.hip is in the manifest with the hash of its current source and headers', () => {
  const sources = kernelSources();
  assert.ok(sources.length > 0);
  for (const f of sources) {
    const e = manifest.files[f];
    assert.ok(e, `${f} is not in kernels/manifest.json: run scripts/build-hsaco.sh`);
    assert.is(e!.hash, sourceHash(f), `${f} changed since kernels/ was built: run scripts/build-hsaco.sh`);
  }
  for (const f of Object.keys(manifest.files))
    assert.ok(sources.includes(f), `manifest lists ${f}, which hip-src/ no longer has`);
});

test('every source has a code object for every AMD arch and PTX, matching its recorded hash', () => {
  assert.equal([...manifest.archs].sort(), [...AMD_ARCHS, 'ptx'].sort());
  for (const [f, e] of Object.entries(manifest.files)) {
    for (const key of manifest.archs) {
      const o = e.objects[key];
      assert.ok(o, `${f}: no object for ${key}`);
      const raw = readCodeObject(DIR, o!.path);
      assert.is(createHash('sha256').update(raw).digest('hex'), o!.sha256, `${o!.path} does not match the manifest`);
    }
  }
});

test('every kernel on every arch has exactly the parameters the ops pass, and packs', () => {
  let checked = 0;
  for (const [f, e] of Object.entries(manifest.files)) {
    const sigsFor = KERNEL_SIGNATURES[f];
    assert.ok(sigsFor, `${f} has no signature table in src/runtime/kernel-sigs.ts`);
    const sigs = sigsFor!();
    for (const key of manifest.archs) {
      const layouts = layoutsFromImage(key, f, readCodeObject(DIR, e.objects[key]!.path));
      const missing = [...sigs.keys()].filter((k) => !layouts.has(k));
      const extra = [...layouts.keys()].filter((k) => !sigs.has(k));
      assert.equal(missing, [], `${f} ${key}: kernels missing from the code object`);
      assert.equal(extra, [], `${f} ${key}: kernels with no signature in kernel-sigs.ts`);
      for (const [name, sig] of sigs) {
        const got: KernelLayout = layouts.get(name)!;
        const want = expectedParams(sig);
        const strip = (ps: readonly KernelParam[]) =>
          ps.map((p) => ({ offset: p.offset, size: p.size, kind: got.exactKinds ? p.kind : 'any' }));
        assert.equal(
          strip(got.params),
          strip(want),
          `${f} ${key} ${name}: metadata ${fmt(got.params)} vs ops ${fmt(want)}`,
        );
        const buf = new Uint8Array(Math.max(8, got.bytes));
        packArgs(got, sampleArgs(sig), buf);
        checked++;
      }
    }
  }
  console.log(`  checked ${checked} kernel signatures`);
});

test('a wrong argument list is refused, naming the kernel and the parameter', () => {
  const e = manifest.files['unary.hip']!;
  const layouts = layoutsFromImage('gfx942', 'unary.hip', readCodeObject(DIR, e.objects['gfx942']!.path));
  const l = layouts.get('unary_exp_f32')!;
  const buf = new Uint8Array(l.bytes);
  const ok = sampleArgs(KERNEL_SIGNATURES['unary.hip']!().get('unary_exp_f32')!);
  assert.throws(() => packArgs(l, ok.slice(0, 4), buf), /unary_exp_f32 \(unary\.hip\) takes 5 arguments/);
  const swapped = [...ok];
  swapped[4] = { kind: 'u32', value: 3 };
  assert.throws(
    () => packArgs(l, swapped, buf),
    /unary_exp_f32 \(unary\.hip\): parameter 4 at offset 32 is a 8-byte value, got u32/,
  );
  const ptrForValue = [...ok];
  ptrForValue[2] = ok[0]!;
  assert.throws(() => packArgs(l, ptrForValue, buf), /parameter 2 .* is a 8-byte value, got ptr/);
});

// every AMD arch, not two: flash.hip's layers differ per family (MFMA, WMMA gfx11 and gfx12, FMAs
// on gfx1030), and each had its own spills before; no AMD GPU runs them to notice
test('manifest register stats match the code objects; no spills or scratch, LDS within 64 KiB, on every AMD arch', () => {
  const spilled: string[] = [];
  for (const [f, e] of Object.entries(manifest.files)) {
    for (const arch of AMD_ARCHS) {
      for (const [name, k] of Object.entries(e.objects[arch]!.kernels)) {
        if (k['sgprSpill'] !== 0 || k['vgprSpill'] !== 0 || k['scratch'] !== 0 || !(k['lds']! <= 65536))
          spilled.push(`${arch} ${f} ${name} ${JSON.stringify(k)}`);
      }
    }
  }
  assert.equal(spilled, []);
  assert.is(manifest.files['unary.hip']!.objects['gfx942']!.kernels['unary_exp_f32']!['wave'], 64);
  assert.is(manifest.files['unary.hip']!.objects['gfx1100']!.kernels['unary_exp_f32']!['wave'], 32);
});

// The budget keeps the repository, the npm package and the tree sent to a GPU host (64 MiB with
// the 33 MiB .gpu-kit) in bounds; 16 MiB since the register row kernels (a kernel per row
// length bucket) and the radix sort took it past 12, 18 MiB since the training kernels (flash
// backward, the fused optimizer, loss and norm backward) and paged attention.
test('the committed kernels/ stays under 18 MiB', () => {
  let bytes = 0;
  const walk = (d: string): void => {
    for (const n of readdirSync(d)) {
      const p = join(d, n);
      if (statSync(p).isDirectory()) walk(p);
      else bytes += statSync(p).size;
    }
  };
  assert.ok(existsSync(DIR));
  walk(DIR);
  console.log(`  kernels/: ${(bytes / 1048576).toFixed(2)} MiB`);
  assert.ok(bytes < 18 * 1048576, `kernels/ is ${bytes} bytes`);
});

test.run();
