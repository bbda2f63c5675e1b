// flash.hip as compiled for each AMD arch: every product of its key loop on the matrix cores
// (the disassembly's MFMA/WMMA count per kernel equals the unrolled loops' count, in the
// instruction of the kernel's dtype; none on gfx1030, whose products are FMAs), every kernel of
// every source compiled for the wave size of its arch's code path, the launcher refusing a
// kernel whose compiled wave differs from the device's, and docs/internals/amd-flash-resources.md
// matching the code objects. The disassembler is llvm-objdump 21 of the ROCm root.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { TensorError } from '../../src/core/errors.ts';
import type { GpuRuntime } from '../../src/runtime/gpu.ts';
import { Kernels, readManifest } from '../../src/runtime/kernels.ts';
import {
  KERNELS_DIR,
  archWave,
  disassembleCounts,
  expectedMatrixOps,
  expectedMnemonic,
  flashFamily,
} from '../../scripts/abi/flash-isa.ts';
import { RESOURCES_DOC, resourceRows, rowLine } from '../../scripts/abi/flash-resources.ts';
import { rocmRoot } from '../../scripts/abi/root.ts';

const manifest = readManifest(KERNELS_DIR) as ReturnType<typeof readManifest> & {
  files: Record<string, { objects: Record<string, { kernels: Record<string, Record<string, number>> }> }>;
};
const AMD = manifest.archs.filter((a) => a !== 'ptx');

test('flash.hip: each kernel holds its key loop of products on the matrix cores, in its dtype, on every AMD arch', () => {
  const root = rocmRoot();
  let kernels = 0;
  for (const arch of AMD) {
    const counts = disassembleCounts(root, arch);
    const names = Object.keys(manifest.files['flash.hip']!.objects[arch]!.kernels);
    assert.ok(names.length >= 20, `${arch}: flash kernels in the manifest`);
    for (const name of names) {
      const m = /^flash_(?:fwd|dec)_(f16|bf16)_(\d+)$/.exec(name);
      assert.ok(m, `${arch}: unexpected kernel ${name}`);
      const dt = m![1] as 'f16' | 'bf16',
        hd = Number(m![2]);
      const got = counts.get(name);
      assert.ok(got, `${arch}: ${name} not in the disassembly`);
      const matrix = [...got!].filter(([mn]) => !mn.startsWith('v_dot2'));
      const want = expectedMnemonic(arch, dt);
      if (flashFamily(arch) === 'fma') {
        assert.equal(matrix, [], `${arch} ${name}: matrix instructions on an arch without matrix cores`);
      } else {
        assert.equal(
          matrix,
          [[want!, expectedMatrixOps(arch, hd)]],
          `${arch} ${name}: matrix instructions (want ${expectedMatrixOps(arch, hd)} ${want})`,
        );
      }
      kernels++;
    }
  }
  console.log(`  ${kernels} flash kernels on ${AMD.length} archs`);
});

test('every kernel of every source is compiled for the wave size of its arch (gfx9 64, RDNA 32)', () => {
  let n = 0;
  for (const [f, e] of Object.entries(manifest.files))
    for (const arch of AMD)
      for (const [name, k] of Object.entries(e.objects[arch]!.kernels)) {
        assert.is(k['wave'], archWave(arch), `${f} ${arch} ${name}: .wavefront_size`);
        n++;
      }
  console.log(`  ${n} kernels`);
});

// a runtime that loads nothing: enough for Kernels to read the committed code objects' metadata
function fakeRocm(arch: string, warpSize: number): GpuRuntime {
  return {
    vendor: 'rocm',
    info: { vendor: 'rocm', index: 0, name: 'emulated', arch, archFull: `${arch}:sramecc+:xnack-`, warpSize },
    moduleLoad: () => ({}),
    moduleGetFunction: () => ({}),
    functionParams: () => null,
    startsEarly: () => false,
  } as unknown as GpuRuntime;
}

test("the launcher refuses a kernel compiled for another wave size than the device's", () => {
  for (const [arch, right, wrong] of [
    ['gfx942', 64, 32],
    ['gfx1100', 32, 64],
  ] as const) {
    assert.is(
      new Kernels(fakeRocm(arch, right), { dir: KERNELS_DIR }).startsEarly('flash.hip', 'flash_fwd_f16_64'),
      false,
    );
    let err: unknown = null;
    try {
      new Kernels(fakeRocm(arch, wrong), { dir: KERNELS_DIR }).startsEarly('flash.hip', 'flash_fwd_f16_64');
    } catch (e) {
      err = e;
    }
    assert.instance(err, TensorError, `${arch} at wave ${wrong}: ${String(err)}`);
    assert.match(
      (err as Error).message,
      `flash_fwd_f16_64 (flash.hip) was compiled for wave ${right}, but ${arch}:sramecc+:xnack- runs wave ${wrong}`,
    );
  }
});

test('docs/internals/amd-flash-resources.md matches the code objects (scripts/abi/flash-resources.ts)', () => {
  const root = rocmRoot();
  const doc = readFileSync(RESOURCES_DOC, 'utf8');
  for (const arch of AMD) {
    const section = doc.split(`\n## ${arch}\n`)[1]?.split('\n## ')[0] ?? '';
    assert.ok(section, `no section for ${arch}: rerun npx tsx scripts/abi/flash-resources.ts`);
    for (const r of resourceRows(root, arch)) {
      const prefix = rowLine(r, '').replace(/ \|$/, '');
      assert.ok(
        section.split('\n').some((l) => l.startsWith(prefix) && /\| \d+ \|$/.test(l)),
        `${arch} ${r.kernel}: stale or missing row (want "${prefix} | <waves> |"): rerun npx tsx scripts/abi/flash-resources.ts`,
      );
    }
  }
});

test.run();
