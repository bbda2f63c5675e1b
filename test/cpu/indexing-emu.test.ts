// indexing.hip (gather, the two-pass deterministic scatter, scatter_add with its atomics and the
// u8 word CAS, the bad-id record) run through its HIP path on the host emulator
// (test/emu/indexing-emu.cpp) at wave 64 and 32, against the kernels' definitions: duplicate
// targets (the last id in row-major order wins a scatter), out-of-range and negative ids skipped
// and the first one recorded. A missing g++ fails here.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { expectOk, runEmulator } from './emu-run.ts';

test('indexing.hip matches its definition at wave 64 and 32 (test/emu/indexing-emu.cpp)', () => {
  const out = runEmulator('indexing-emu', { std: 'c++20' });
  for (const w of [64, 32]) expectOk(out, `indexing wave ${w}$`, `wave ${w}`);
  assert.match(out, /^ok: 0 mismatches/m);
});

test.run();
