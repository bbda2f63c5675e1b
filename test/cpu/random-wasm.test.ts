// The CPU's WebAssembly random path (src/ops/cpu/random-wasm.ts, wasm/random.wat) against the
// scalar reference (philox.ts, normal.ts), bit for bit: several keys, sizes that end inside a
// block and inside a chunk, counters across 2^32 blocks; and the committed module is what
// scripts/wasm/assemble.ts makes of the committed text.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { block, roundKeys } from '../../src/ops/cpu/philox.ts';
import { normalOfWord } from '../../src/ops/cpu/normal.ts';
import { normalF32, philoxWords, uniformF32 } from '../../src/ops/cpu/random-wasm.ts';
import { WASM_BASE64 } from '../../src/ops/cpu/wasm/random-wasm.ts';
import { assemble, wasmModuleSource, WASM_DIR } from '../../scripts/wasm/assemble.ts';

const KEYS: [number, number][] = [[0, 0], [5, 0], [-1, -1], [0x243f6a88, 0x85a308d3 | 0]];

/** the first difference between a and the scalar reference f(i), or '' */
function firstDiff(a: ArrayLike<number>, f: (i: number) => number): string {
  for (let i = 0; i < a.length; i++) if (!Object.is(a[i], f(i))) return `element ${i}: wasm ${a[i]} reference ${f(i)}`;
  return '';
}

/** scalar words of blocks first.. as a function of the element index */
function scalarWords(k0: number, k1: number, first = 0): (i: number) => number {
  const ks = roundKeys(k0, k1), w = new Int32Array(4);
  let have = -1;
  return (i) => {
    const b = first + Math.floor(i / 4);
    if (b !== have) { block(b, ks, w); have = b; }
    return w[i % 4]!;
  };
}

test('words, uniform and normal f32 equal the scalar reference', () => {
  for (const [k0, k1] of KEYS) {
    for (const n of [1, 3, 4, 5, 63, 64, 65, 1000, 262143, 262144 + 17, 1048576 + 5]) {
      const ref = scalarWords(k0, k1);
      assert.is(firstDiff(philoxWords(Math.ceil(n / 4), k0, k1), ref), '', `words n ${n} key ${k0},${k1}`);
      const u = scalarWords(k0, k1), z = scalarWords(k0, k1);
      assert.is(firstDiff(uniformF32(n, k0, k1), (i) => Math.fround((u(i) >>> 8) * 2 ** -24)), '', `uniform n ${n}`);
      assert.is(firstDiff(normalF32(n, k0, k1), (i) => normalOfWord(z(i))), '', `normal n ${n}`);
    }
  }
});

test('counters past 2^32 blocks: the high counter word carries', () => {
  const first = 2 ** 32 - 8;
  for (const [k0, k1] of KEYS) {
    assert.is(firstDiff(philoxWords(16, k0, k1, first), scalarWords(k0, k1, first)), '');
  }
  assert.throws(() => philoxWords(4, 1, 2, 3), /multiple of 4/);
});

test('the committed module is the assembly of the committed random.wat', () => {
  const bytes = assemble(readFileSync(`${WASM_DIR}random.wat`, 'utf8'));
  assert.is(Buffer.from(bytes).toString('base64'), WASM_BASE64, 'src/ops/cpu/wasm/random-wasm.ts is stale: npx tsx scripts/wasm/assemble.ts');
  assert.is(readFileSync(`${WASM_DIR}random-wasm.ts`, 'utf8'), wasmModuleSource('random', bytes));
});

test.run();
