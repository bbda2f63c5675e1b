// Programmatic dependent launch from the committed PTX (src/runtime/ptx-grid-dep.ts): every
// kernel of kernels/ptx qualifies on sm_90 (its RT_GRID_DEP marker before its first global
// access), the rewrite raises the target and leaves no marker, and the placement rule refuses
// kernels that touch global memory first, old PTX versions and pre-Hopper targets.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readCodeObject, readManifest } from '../../src/runtime/kernels.ts';
import { GRID_DEP_MARKER, gridDepPtx, hasGridDep } from '../../src/runtime/ptx-grid-dep.ts';

const DIR = new URL('../../kernels/', import.meta.url).pathname;
const manifest = readManifest(DIR);

test('every committed PTX kernel waits for the grid before it first', () => {
  let kernels = 0;
  for (const [file, entry] of Object.entries(manifest.files)) {
    const obj = entry.objects['ptx'];
    if (!obj) continue;
    const ptx = new TextDecoder().decode(readCodeObject(DIR, obj.path)).replace(/\0+$/, '');
    const names = [...ptx.matchAll(/\.entry\s+([A-Za-z_$][\w$]*)\s*\(/g)].map((m) => m[1]!);
    const r = gridDepPtx(ptx, 'sm_90');
    assert.ok(r, `${file}: no RT_GRID_DEP marker`);
    const missing = names.filter((n) => !r.entries.has(n));
    assert.equal(missing, [], `${file}: kernels without a leading grid wait`);
    assert.ok(/^\s*\.target sm_90\b/m.test(r.text) && !r.text.includes(GRID_DEP_MARKER), `${file}: rewritten PTX`);
    assert.is(r.text.split('griddepcontrol.wait;').length - 1, ptx.split(GRID_DEP_MARKER).length - 1);
    kernels += names.length;
  }
  assert.ok(kernels > 1000, `${kernels} kernels`);
  console.log(`ptx-grid-dep: ${kernels} PTX kernels start with a grid wait`);
});

const ptx = (version: string, body: string) =>
  `.version ${version}\n.target sm_80\n.address_size 64\n\n.visible .entry k(\n\t.param .u64 k_param_0\n)\n{\n${body}\n}\n`;

test('the placement rule and the rewrite', () => {
  const first = gridDepPtx(
    ptx('9.0', `\tld.param.u64 %rd1, [k_param_0];\n\t${GRID_DEP_MARKER}\n\tld.global.f32 %f1, [%rd1];`),
    'sm_90',
  );
  assert.equal([...first!.entries], ['k']);
  assert.ok(
    first!.text.includes('.target sm_90\n') && first!.text.includes(`griddepcontrol.wait;\n\tld.global`),
    first!.text,
  );
  assert.not.ok(first!.text.includes('launch_dependents'), 'the kernels never let their successor start early');
  // a global load (or a generic one, or an async copy) before the marker: no early launch
  for (const access of [
    'ld.global.f32 %f1, [%rd1];',
    'ld.u32 %r1, [%rd1];',
    'cp.async.cg.shared.global [%r1], [%rd1], 16;',
  ]) {
    const r = gridDepPtx(ptx('9.0', `\t${access}\n\t${GRID_DEP_MARKER}`), 'sm_90');
    assert.equal([...r!.entries], [], access);
  }
  // shared and parameter accesses before it are fine
  assert.equal(
    [
      ...gridDepPtx(
        ptx('9.0', `\tld.shared.u32 %r1, [%r2];\n\t${GRID_DEP_MARKER}\n\tst.global.u32 [%rd1], %r1;`),
        'sm_100',
      )!.entries,
    ],
    ['k'],
  );
  assert.is(gridDepPtx(ptx('7.7', `\t${GRID_DEP_MARKER}`), 'sm_90'), null, 'PTX before 7.8 has no griddepcontrol');
  assert.is(gridDepPtx(ptx('9.0', `\t${GRID_DEP_MARKER}`), 'sm_89'), null, 'Ada has none either');
  assert.is(gridDepPtx(ptx('9.0', '\tret;'), 'sm_90'), null, 'no marker');
  assert.ok(hasGridDep('sm_90') && hasGridDep('sm_120') && !hasGridDep('sm_86') && !hasGridDep('gfx942'));
});

test.run();
