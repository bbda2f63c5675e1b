// paged-prefill.hip as compiled for each AMD arch: flash.hip's key loop with the paged tile
// loads, so every kernel holds the same products on the matrix cores as flash.hip's kernel of
// its head-dim bucket (the disassembly's MFMA/WMMA count per kernel, in the instruction of the
// kernel's dtype; none on gfx1030, whose products are FMAs). The disassembler is llvm-objdump 21
// of the ROCm root.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readManifest } from '../../src/runtime/kernels.ts';
import {
  KERNELS_DIR,
  disassembleCounts,
  expectedMatrixOps,
  expectedMnemonic,
  flashFamily,
} from '../../scripts/abi/flash-isa.ts';
import { rocmRoot } from '../../scripts/abi/root.ts';

const manifest = readManifest(KERNELS_DIR) as ReturnType<typeof readManifest> & {
  files: Record<string, { objects: Record<string, { kernels: Record<string, Record<string, number>> }> }>;
};
const AMD = manifest.archs.filter((a) => a !== 'ptx');

test('paged-prefill.hip: each kernel holds its key loop of products on the matrix cores, in its dtype, on every AMD arch', () => {
  const root = rocmRoot();
  let kernels = 0;
  for (const arch of AMD) {
    const counts = disassembleCounts(root, arch, 'paged-prefill.hip');
    const names = Object.keys(manifest.files['paged-prefill.hip']!.objects[arch]!.kernels);
    assert.is(names.length, 4, `${arch}: paged_fwd kernels in the manifest`);
    for (const name of names) {
      const m = /^paged_fwd_(f16|bf16)_(\d+)$/.exec(name);
      assert.ok(m, `${arch}: unexpected kernel ${name}`);
      const dt = m![1] as 'f16' | 'bf16',
        hd = Number(m![2]);
      const got = counts.get(name);
      assert.ok(got, `${arch}: ${name} not in the disassembly`);
      const matrix = [...got!].filter(([mn]) => !mn.startsWith('v_dot2'));
      if (flashFamily(arch) === 'fma') {
        assert.equal(matrix, [], `${arch} ${name}: matrix instructions on an arch without matrix cores`);
      } else {
        const want = expectedMnemonic(arch, dt);
        assert.equal(
          matrix,
          [[want!, expectedMatrixOps(arch, hd)]],
          `${arch} ${name}: matrix instructions (want ${expectedMatrixOps(arch, hd)} ${want})`,
        );
      }
      kernels++;
    }
  }
  console.log(`  ${kernels} paged_fwd kernels on ${AMD.length} archs`);
});

test.run();
